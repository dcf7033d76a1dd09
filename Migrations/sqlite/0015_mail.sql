-- 0015: outbound mail and verified email (issue 18; docs/mail.md).
-- When the account's current address was proved to be its owner's (a verification link used, or
-- `chronir-admin users verify-email`); NULL: not verified. Only a verified address may accept an
-- email invitation. Changing the address sets it again when the new address's link is used.
ALTER TABLE users ADD COLUMN email_verified_ms INTEGER;

-- One-use tokens that travel by mail: only SHA-256(token) is stored. `email` is the address the
-- token proves (verify_email: the account's address, or the new one of an address change;
-- password_reset: the address it was sent to, which must still be the account's when used).
CREATE TABLE email_tokens (
    token_hash      BLOB PRIMARY KEY NOT NULL,
    purpose         TEXT NOT NULL CHECK (purpose IN ('verify_email', 'password_reset')),
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    email           TEXT NOT NULL,
    created_ms      INTEGER NOT NULL,
    expires_ms      INTEGER NOT NULL,
    used_ms         INTEGER
) STRICT, WITHOUT ROWID;
CREATE INDEX email_tokens_user ON email_tokens(user_id, purpose, created_ms);
CREATE INDEX email_tokens_expires ON email_tokens(expires_ms);

-- The mail outbox: a change that causes a mail inserts its row in the change's own transaction
-- (nothing mailed for a rolled-back change, nothing lost on a crash). The dispatcher claims due
-- pending rows with a lease, sends them over SMTP, and settles: sent | retried (next_attempt_ms,
-- back-off) | failed (a permanent refusal, or expired). Without SMTP configured rows are written
-- 'unsendable'. `body` holds the mail's link (a credential) only while it may still be sent: it is
-- cleared when the row leaves 'pending'.
CREATE TABLE mail_outbox (
    id              INTEGER PRIMARY KEY,
    kind            TEXT NOT NULL,                 -- MailKind: 'verify_email', 'password_reset', …
    recipient       TEXT NOT NULL,
    subject         TEXT NOT NULL,
    body            TEXT,                          -- plain text; NULL once not pending
    user_id         TEXT,                          -- the account it concerns, when there is one
    created_ms      INTEGER NOT NULL,
    next_attempt_ms INTEGER NOT NULL,
    expires_ms      INTEGER NOT NULL,              -- not sent after this (the link's own lifetime)
    attempts        INTEGER NOT NULL DEFAULT 0,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'sent', 'failed', 'unsendable')),
    lease_owner     TEXT,
    lease_until_ms  INTEGER,
    last_error      TEXT,
    done_ms         INTEGER,
    CHECK ((state = 'pending') = (done_ms IS NULL)),
    CHECK (state = 'pending' OR body IS NULL)
) STRICT;
CREATE INDEX mail_outbox_due ON mail_outbox(next_attempt_ms) WHERE state = 'pending';
CREATE INDEX mail_outbox_done ON mail_outbox(done_ms) WHERE done_ms IS NOT NULL;
