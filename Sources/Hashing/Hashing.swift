// Hashing module. See README "Architecture".
