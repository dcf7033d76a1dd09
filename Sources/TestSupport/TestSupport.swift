// TestSupport module. See README "Architecture".
