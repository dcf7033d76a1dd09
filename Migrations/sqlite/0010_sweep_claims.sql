-- 0010: which maintenance job ran last, and when, for the whole database — so that with several
-- instances on one database (PostgreSQL) each sweeper job runs once per period across all of them,
-- whichever instance's timer fires first (Sweeper; SweepClaims.claim). Harmless with one instance.
CREATE TABLE sweep_claims (
    job             TEXT PRIMARY KEY NOT NULL,
    last_run_ms     INTEGER NOT NULL
) STRICT;
