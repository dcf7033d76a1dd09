-- 0009: the fingerprint of the server secret the database's invite codes are keyed with:
-- HMAC-SHA-256(secret, "chronir server secret fingerprint"), never the secret itself. A server or
-- chronir-admin whose server.secret differs (a lost or regenerated file, or another instance
-- with its own) refuses to start instead of silently failing every invite code.
CREATE TABLE server_secret_fingerprint (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    fingerprint     BLOB NOT NULL CHECK (length(fingerprint) = 32),
    created_ms      INTEGER NOT NULL
) STRICT;
