-- 0017: staged alarm fires (issue 17; docs/notifications.md#pipeline). The scheduler queues a fire up
-- to NotificationScheduler.lookaheadMilliseconds before its instant and the dispatcher expands it at
-- once into deliveries that are not due before the instant, so at the instant only claim and send
-- remain. The claim checks that a staged fire is still the alarm's — alarm live, the same instant,
-- group live and unfrozen — through alarm_id: the alarm whose instant an alarm_fired / pre_alarm row
-- is; NULL for every other type (and for fires queued before this migration: not re-checked).
ALTER TABLE notification_outbox ADD COLUMN alarm_id TEXT;
