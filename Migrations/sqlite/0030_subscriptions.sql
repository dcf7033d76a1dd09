-- 0030: subscriptions and entitlements (docs/subscriptions.md). The account's tier (users.tier) is
-- derived: the highest tier among its purchases and operator grants that grant access now, written
-- back in the transaction that changes one of them (Store/EntitlementStore.swift).

-- A store subscription, one row per original transaction (App Store) or purchase token (Play), bound
-- to at most one account. Its current period and renewal state, by the store's own dates.
CREATE TABLE purchases (
    id                 TEXT PRIMARY KEY,              -- '<source>:<store_id>'
    source             TEXT NOT NULL CHECK (source IN ('app_store', 'play')),
    store_id           TEXT NOT NULL,                 -- originalTransactionId / purchase token
    user_id            TEXT REFERENCES users(id),     -- NULL: not bound (account deleted, or never claimed)
    product_id         TEXT NOT NULL,
    tier               TEXT NOT NULL CHECK (tier IN ('plus', 'premium')),
    environment        TEXT NOT NULL,
    expires_ms         INTEGER,                       -- end of the paid period
    grace_expires_ms   INTEGER,                       -- end of the store's grace period (access kept)
    billing_retry      INTEGER NOT NULL DEFAULT 0,    -- the store is retrying a failed renewal
    auto_renewing      INTEGER NOT NULL DEFAULT 0,
    revoked_ms         INTEGER,                       -- refunded / revoked
    state              TEXT NOT NULL,                 -- EntitlementState when last evaluated (the expiry sweep's cue)
    next_check_ms      INTEGER,                       -- when that state changes by the clock alone
    signed_ms          INTEGER NOT NULL,              -- signedDate of the newest store data applied
    created_ms         INTEGER NOT NULL,
    updated_ms         INTEGER NOT NULL,
    UNIQUE (source, store_id)
);
CREATE INDEX purchases_user ON purchases(user_id);
CREATE INDEX purchases_next_check ON purchases(next_check_ms) WHERE next_check_ms IS NOT NULL;

-- Each verified transaction of a purchase (a period paid), kept for audit.
CREATE TABLE entitlement_periods (
    purchase_id        TEXT NOT NULL REFERENCES purchases(id) ON DELETE CASCADE,
    transaction_id     TEXT NOT NULL,
    product_id         TEXT NOT NULL,
    starts_ms          INTEGER,
    expires_ms         INTEGER,
    revoked_ms         INTEGER,
    recorded_ms        INTEGER NOT NULL,
    PRIMARY KEY (purchase_id, transaction_id)
);

-- An operator's grant (chronir-admin users set-tier [--until], or --default-tier at registration):
-- one per account, an entitlement like a purchase's.
CREATE TABLE operator_grants (
    user_id            TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    tier               TEXT NOT NULL CHECK (tier IN ('plus', 'premium')),
    expires_ms         INTEGER,                       -- NULL: until changed
    ended              INTEGER NOT NULL DEFAULT 0,    -- its expiry has been applied
    reason             TEXT,
    created_ms         INTEGER NOT NULL
);

-- Every store message received (notifications, RTDN), idempotent by the store's own id, kept for audit.
CREATE TABLE store_events (
    source             TEXT NOT NULL,
    event_id           TEXT NOT NULL,                 -- notificationUUID / Pub/Sub messageId
    type               TEXT NOT NULL,
    subtype            TEXT,
    purchase_id        TEXT,
    user_id            TEXT,
    outcome            TEXT NOT NULL,                 -- applied | stale | unbound | ignored
    signed_ms          INTEGER,
    received_ms        INTEGER NOT NULL,
    PRIMARY KEY (source, event_id)
);

-- Every change of an account's tier, with its cause.
CREATE TABLE tier_changes (
    id                 INTEGER PRIMARY KEY,
    user_id            TEXT NOT NULL,
    from_tier          TEXT NOT NULL,
    to_tier            TEXT NOT NULL,
    cause              TEXT NOT NULL,                 -- purchase | notification | expiry | operator | restore | transfer
    detail             TEXT,
    at_ms              INTEGER NOT NULL
);
CREATE INDEX tier_changes_user ON tier_changes(user_id, at_ms);

-- Tiers set before this migration (set-tier, --default-tier) become operator grants without expiry,
-- so deriving the tier from entitlements keeps them.
INSERT INTO operator_grants (user_id, tier, expires_ms, ended, reason, created_ms)
SELECT id, tier, NULL, 0, 'tier before subscriptions', updated_ms FROM users WHERE tier <> 'free' AND deleted_ms IS NULL;
