// Store module. See README "Architecture".
