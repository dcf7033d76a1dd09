-- 0020 (PostgreSQL): shared-alarm controls and the "what do I have to do" list (see
-- Migrations/sqlite/0020_shared_alarm_controls.sql).
CREATE TABLE shared_alarm_pending (
    alarm_id        TEXT COLLATE "C" NOT NULL REFERENCES shared_alarms(id) ON DELETE CASCADE,
    user_id         TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (alarm_id, user_id)
);

INSERT INTO shared_alarm_pending (alarm_id, user_id)
SELECT DISTINCT a.id, j.value
FROM shared_alarms a, jsonb_array_elements_text(a.document::jsonb -> 'occurrence' -> 'pending_uids') j(value)
WHERE a.deleted_ms IS NULL AND a.open_ms IS NOT NULL
  AND jsonb_typeof(a.document::jsonb -> 'occurrence' -> 'pending_uids') = 'array';

CREATE INDEX shared_alarms_group_next ON shared_alarms(group_id, next_fire_ms, id)
    WHERE deleted_ms IS NULL AND next_fire_ms IS NOT NULL;
