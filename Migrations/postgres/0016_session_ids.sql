-- 0016 (PostgreSQL): a public id per session (see Migrations/sqlite/0016). gen_random_uuid() is
-- built in since PostgreSQL 13 and draws from the server's strong random source. Nullable like
-- SQLite's (which cannot add a NOT NULL column without a default): SessionStore.create always sets it.
ALTER TABLE sessions ADD COLUMN public_id TEXT COLLATE "C";
UPDATE sessions SET public_id = replace(gen_random_uuid()::text, '-', '') WHERE public_id IS NULL;
CREATE UNIQUE INDEX sessions_public_id ON sessions(public_id);
