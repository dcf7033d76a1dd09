-- 0004: the change log becomes a hash chain. Each row stores
--   hash = SHA-256(previous row's hash || canonical encoding of this row's content)
-- (the first row's "previous hash" is 32 zero bytes), computed by the store in the same transaction
-- as the row. `chronir-admin audit verify` recomputes the chain and names the first row that does not
-- match: an edit made behind the server's back (even with the append-only trigger dropped) shows.
-- Rows written before this migration have no hash; verification starts after them.
ALTER TABLE change_log ADD COLUMN hash BLOB CHECK (hash IS NULL OR length(hash) = 32);
