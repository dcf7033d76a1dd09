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

-- One row per (notification, device) to send — or one per notification for the operator's webhook
-- (channel 'webhook', no user or device): made from a pending outbox row when the dispatcher expands
-- it (recipients checked again then), deleted when the provider accepts it, gives up on it, or its
-- time to live runs out. A row is claimed with a lease (lease_owner, lease_until_ms) so any instance
-- may send, and a dead instance's claims expire. A deleted device takes its rows with it.
CREATE TABLE notification_deliveries (
    id              INTEGER PRIMARY KEY,
    outbox_id       INTEGER NOT NULL REFERENCES notification_outbox(id) ON DELETE CASCADE,
    channel         TEXT NOT NULL CHECK (channel IN ('device', 'webhook')),
    user_id         TEXT,
    device_id       TEXT,
    recipients      TEXT,                          -- webhook: JSON array of the users still entitled at expansion
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_ms INTEGER NOT NULL,
    expires_ms      INTEGER NOT NULL,
    lease_owner     TEXT,
    lease_until_ms  INTEGER,
    last_error      TEXT,
    FOREIGN KEY (user_id, device_id) REFERENCES devices(user_id, device_id) ON DELETE CASCADE,
    CHECK ((channel = 'device') = (user_id IS NOT NULL AND device_id IS NOT NULL)),
    CHECK ((channel = 'webhook') = (recipients IS NOT NULL))
) STRICT;
CREATE UNIQUE INDEX notification_deliveries_device_once ON notification_deliveries(outbox_id, user_id, device_id)
    WHERE channel = 'device';
CREATE UNIQUE INDEX notification_deliveries_webhook_once ON notification_deliveries(outbox_id) WHERE channel = 'webhook';
CREATE INDEX notification_deliveries_due ON notification_deliveries(next_attempt_ms);
CREATE INDEX notification_deliveries_device ON notification_deliveries(user_id, device_id) WHERE channel = 'device';
