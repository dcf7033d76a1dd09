-- 0021 (PostgreSQL): Sign in with Apple and Google (see Migrations/sqlite/0021_identities.sql).
CREATE TABLE identities (
    provider        TEXT COLLATE "C" NOT NULL CHECK (provider IN ('apple', 'google')),
    subject         TEXT COLLATE "C" NOT NULL,
    user_id         TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    email           TEXT COLLATE "C",
    created_ms      BIGINT NOT NULL,
    PRIMARY KEY (provider, subject)
);
CREATE UNIQUE INDEX identities_user ON identities(user_id, provider);

CREATE TABLE oidc_nonces (
    nonce_hash      BYTEA PRIMARY KEY NOT NULL,
    expires_ms      BIGINT NOT NULL
);
CREATE INDEX oidc_nonces_expires ON oidc_nonces(expires_ms);
