-- 0004 (PostgreSQL 15): the change log becomes a hash chain. Each row stores
--   hash = SHA-256(previous row's hash || canonical encoding of this row's content)
-- (the first row's "previous hash" is 32 zero bytes), computed by the store in the same transaction
-- as the row. `chronir-admin audit verify` recomputes the chain and names the first row that does not
-- match: an edit made behind the server's back (even with the append-only trigger dropped) shows.
-- Same meaning as Migrations/sqlite/0004_change_log_chain.sql (a PostgreSQL database has no rows
-- from before this migration; the column stays nullable so both schemas accept the same rows).
ALTER TABLE change_log ADD COLUMN hash BYTEA CHECK (hash IS NULL OR length(hash) = 32);
