-- 0017 (PostgreSQL): staged alarm fires (see Migrations/sqlite/0017).
ALTER TABLE notification_outbox ADD COLUMN alarm_id TEXT COLLATE "C";
