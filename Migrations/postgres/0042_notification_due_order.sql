-- 0042: the claim walks due deliveries in (next_attempt_ms, id) order and stops after its batch
-- (NotificationDeliveries.claim: ORDER BY next_attempt_ms, id LIMIT n). With an index on
-- next_attempt_ms alone every claim read and sorted every due row: a burst's 10,000 deliveries share
-- one instant, so each claim of 128 sorted 10,000 (PostgreSQL: 66 ms, spilling to disk; with this
-- index 2 ms). The expansion reads pending outbox rows the same way (ORDER BY not_before_ms, id
-- LIMIT n; a minute's staged fires share their instant). Each new index serves every query the old
-- one did (its first column).
DROP INDEX notification_deliveries_due;
CREATE INDEX notification_deliveries_due ON notification_deliveries(next_attempt_ms, id);
DROP INDEX notification_outbox_pending;
CREATE INDEX notification_outbox_pending ON notification_outbox(not_before_ms, id) WHERE state = 'pending';
