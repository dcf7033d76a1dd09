-- 0045: nothing changes on SQLite. Migrations/postgres/0045 moves PostgreSQL's change-log append to a
-- commit trigger, so writers on several instances serialise only at COMMIT; SQLite has one writer at
-- a time, which appends in its own transaction (`ChangeLog.append`). Kept so both dialects have the
-- same migration names (PostgresSchemaTests).
SELECT 1;
