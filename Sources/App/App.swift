// App module. See README "Architecture".
