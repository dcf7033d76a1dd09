-- 0006 (PostgreSQL 15): the change log's epoch — a random id naming this database's history.
-- Realtime snapshots carry it and a client resumes with it (`subscribe … since, epoch`): when the
-- server answers with another epoch (a database restored from a backup, whose seqs may be reused for
-- different changes), the client gets a fresh `reset` snapshot instead of a replay. One row, made
-- here. Same meaning as Migrations/sqlite/0006_log_epoch.sql.
-- SQLite fills it with lower(hex(randomblob(16))); here the 32 lower-case hex digits of
-- gen_random_uuid() (core since PostgreSQL 13, no extension): the same shape, of which 122 bits are
-- random (a version 4 UUID fixes 6) — as unlikely to repeat for this purpose.
CREATE TABLE log_epoch (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    epoch TEXT COLLATE "C" NOT NULL CHECK (length(epoch) = 32)
);
INSERT INTO log_epoch (id, epoch) VALUES (1, replace(gen_random_uuid()::text, '-', ''));
