-- 0013 (PostgreSQL): where notifications go (see Migrations/sqlite/0013_devices.sql).
CREATE TABLE devices (
    user_id         TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    device_id       TEXT COLLATE "C" NOT NULL,                 -- client-chosen: 1…64 of [A-Za-z0-9._-]
    platform        TEXT COLLATE "C" NOT NULL CHECK (platform IN ('ios', 'android', 'web')),
    provider        TEXT COLLATE "C" NOT NULL CHECK (provider IN ('apns', 'fcm', 'webpush')),
    address         TEXT COLLATE "C" NOT NULL,                 -- APNs/FCM token, or the Web Push endpoint URL
    p256dh          TEXT COLLATE "C",                          -- Web Push: public key (base64url)
    auth            TEXT COLLATE "C",                          -- Web Push: auth secret (base64url)
    app_version     TEXT COLLATE "C",
    locale          TEXT COLLATE "C",
    session_hash    BYTEA,                                     -- the session that registered it
    created_ms      BIGINT NOT NULL,
    last_seen_ms    BIGINT NOT NULL,
    PRIMARY KEY (user_id, device_id),
    CHECK ((provider = 'webpush') = (p256dh IS NOT NULL AND auth IS NOT NULL))
);
CREATE UNIQUE INDEX devices_address ON devices(provider, address);
CREATE INDEX devices_last_seen ON devices(last_seen_ms);
CREATE INDEX devices_session ON devices(session_hash) WHERE session_hash IS NOT NULL;

ALTER TABLE group_members ADD COLUMN notification_enabled BIGINT NOT NULL DEFAULT 1
    CHECK (notification_enabled IN (0, 1));
