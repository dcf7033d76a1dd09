-- 0004 (PostgreSQL): the change log becomes a hash chain (see Migrations/sqlite/0004 for the scheme:
-- hash = SHA-256(previous row's hash || canonical encoding of this row), computed by the store).
ALTER TABLE change_log ADD COLUMN hash BYTEA CHECK (hash IS NULL OR length(hash) = 32);
