-- 0010 (PostgreSQL): which maintenance job ran last, and when, across every instance (see
-- Migrations/sqlite/0010): each sweeper job runs once per period in the cluster.
CREATE TABLE sweep_claims (
    job             TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    last_run_ms     BIGINT NOT NULL
);
