-- 0025 (PostgreSQL): the invite code's sealed copy (see Migrations/sqlite/0025_invite_code_sealed.sql).
ALTER TABLE invite_codes ADD COLUMN code_sealed BYTEA;
