// Transport module. See README "Architecture".
