// SQLite module. See README "Architecture".
