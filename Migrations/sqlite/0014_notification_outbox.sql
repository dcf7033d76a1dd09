-- 0014: the transactional outbox of notifications (issue 17; docs/notifications.md#pipeline).
-- A mutation that causes a notification inserts its row in the transaction that appends its
-- change-log batch (ChangeLog.append → NotificationOutbox), so nothing is queued for a rolled-back
-- change and nothing queued is lost on a crash. The scheduler inserts alarm fires the same way.
-- `key` makes a notification exactly-once ('alarm_fired:<alarm>:<scheduled_ms>', …): a row is kept
-- after it is handled (state expanded | skipped | expired) until the retention sweep purges it.
CREATE TABLE notification_outbox (
    id              INTEGER PRIMARY KEY,
    key             TEXT NOT NULL UNIQUE,
    type            TEXT NOT NULL,                 -- NotificationType: 'alarm_fired', 'shared_completion', …
    group_id        TEXT,                          -- group notifications: recipients must still be active members
    actor_id        TEXT,                          -- who caused it: never notified
    recipients      TEXT NOT NULL,                 -- JSON array of user ids chosen when it was queued
    content         TEXT NOT NULL,                 -- JSON NotificationContent: title, body, data
    created_ms      INTEGER NOT NULL,
    not_before_ms   INTEGER NOT NULL,
    expires_ms      INTEGER NOT NULL,              -- not handed to a provider after this (per type TTL)
    state           TEXT NOT NULL CHECK (state IN ('pending', 'expanded', 'skipped', 'expired')),
    done_ms         INTEGER,                       -- when it left 'pending'
    CHECK ((state = 'pending') = (done_ms IS NULL))
) STRICT;
CREATE INDEX notification_outbox_pending ON notification_outbox(not_before_ms) WHERE state = 'pending';
CREATE INDEX notification_outbox_done ON notification_outbox(done_ms) WHERE done_ms IS NOT NULL;

-- Pre-alarm warnings need an indexable instant: the open occurrence's time minus pre_alarm_offset,
-- when pre_alarm_enabled (SharedAlarmStore.write keeps it). Existing alarms get it at their next write.
ALTER TABLE shared_alarms ADD COLUMN pre_alarm_ms INTEGER;
CREATE INDEX shared_alarms_pre_alarm ON shared_alarms(pre_alarm_ms) WHERE pre_alarm_ms IS NOT NULL AND deleted_ms IS NULL;
