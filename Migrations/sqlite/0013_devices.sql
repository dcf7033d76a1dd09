-- 0013: where notifications go (issue 17; docs/notifications.md#devices). A device is one install of
-- a client that can receive pushes: a client-chosen id per user, the provider that reaches it and the
-- provider's address (an APNs/FCM token, or a Web Push subscription: endpoint + p256dh + auth).
-- Devices are delivery addresses, not documents: they never enter the change log (a push token in the
-- hash-chained log would outlive the device). Purged 60 days after last_seen_ms (Retention).
CREATE TABLE devices (
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    device_id       TEXT NOT NULL,                 -- client-chosen: 1…64 of [A-Za-z0-9._-]
    platform        TEXT NOT NULL CHECK (platform IN ('ios', 'android', 'web')),
    provider        TEXT NOT NULL CHECK (provider IN ('apns', 'fcm', 'webpush')),
    address         TEXT NOT NULL,                 -- APNs/FCM token, or the Web Push endpoint URL
    p256dh          TEXT,                          -- Web Push: the subscription's public key (base64url)
    auth            TEXT,                          -- Web Push: the subscription's auth secret (base64url)
    app_version     TEXT,
    locale          TEXT,
    session_hash    BLOB,                          -- the session that registered it: its logout drops it
    created_ms      INTEGER NOT NULL,
    last_seen_ms    INTEGER NOT NULL,
    PRIMARY KEY (user_id, device_id),
    CHECK ((provider = 'webpush') = (p256dh IS NOT NULL AND auth IS NOT NULL))
) STRICT, WITHOUT ROWID;
-- One address reaches one device of one account: registering it again (another account signed in on
-- the same phone) moves it.
CREATE UNIQUE INDEX devices_address ON devices(provider, address);
CREATE INDEX devices_last_seen ON devices(last_seen_ms);
CREATE INDEX devices_session ON devices(session_hash) WHERE session_hash IS NOT NULL;

-- Per membership: does the member want this group's notifications (data-schema §4.5; set by the
-- member, PATCH /v1/groups/{id}/membership). A rejoin starts with notifications on.
ALTER TABLE group_members ADD COLUMN notification_enabled INTEGER NOT NULL DEFAULT 1
    CHECK (notification_enabled IN (0, 1));
