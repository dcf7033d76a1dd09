-- 0021: Sign in with Apple and Google (issue 18; docs/sign-in.md).
-- An identity: a provider's stable user id (`sub` of its ID tokens) signed in to one account. At
-- most one identity per provider per account (DELETE /v1/me/identities/{provider} names it by the
-- provider). `email` is the address the token carried when the identity was linked (for the user's
-- list; the account's own address may change later). Deleted with the account (account deletion
-- deletes them in its transaction; the foreign key covers a hard delete).
CREATE TABLE identities (
    provider        TEXT NOT NULL CHECK (provider IN ('apple', 'google')),
    subject         TEXT NOT NULL,
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    email           TEXT,
    created_ms      INTEGER NOT NULL,
    PRIMARY KEY (provider, subject)
) STRICT, WITHOUT ROWID;
CREATE UNIQUE INDEX identities_user ON identities(user_id, provider);

-- Nonces of ID tokens that signed in, so a token (or its nonce) is not accepted twice: only
-- SHA-256(provider ‖ 0x00 ‖ nonce) is stored, until the token's `exp` plus the clock skew (after that
-- the token is refused as expired anyway); the retention sweep deletes rows past `expires_ms`.
CREATE TABLE oidc_nonces (
    nonce_hash      BLOB PRIMARY KEY NOT NULL,
    expires_ms      INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX oidc_nonces_expires ON oidc_nonces(expires_ms);
