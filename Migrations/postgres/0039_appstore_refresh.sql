-- 0039: the App Store Server API status refresh (docs/subscriptions.md#app-store-server-api).
-- api_checked_ms: when Get All Subscription Statuses last answered for the purchase; a period that
-- ended after it is refreshed once (a renewal or a refund whose notification never arrived).
-- api_refresh_due_ms: a refresh asked for (chronir-admin purchases refresh) or retried after a
-- failure, due then; NULL: none pending.
ALTER TABLE purchases ADD COLUMN api_checked_ms BIGINT;
ALTER TABLE purchases ADD COLUMN api_refresh_due_ms BIGINT;
