-- 0040: a Google Play acknowledgement that failed is retried (docs/subscriptions.md#google-play):
-- ack_due_ms is when the next attempt is due; NULL: none pending (acknowledged, or never needed).
ALTER TABLE purchases ADD COLUMN ack_due_ms INTEGER;
