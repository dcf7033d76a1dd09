// Domain module. See README "Architecture".
