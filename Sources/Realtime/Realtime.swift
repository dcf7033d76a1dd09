// Realtime module: see README "Architecture". Types are added per feature file.
