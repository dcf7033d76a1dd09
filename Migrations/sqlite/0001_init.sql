-- 0001: accounts, sessions and the change log.
-- Times are integer epoch milliseconds (*_ms). Enum columns hold canonical lowercase strings
-- guarded by CHECK constraints. IDs are lowercase UUID strings.

CREATE TABLE users (
    id              TEXT PRIMARY KEY NOT NULL,
    email           TEXT NOT NULL UNIQUE,          -- normalised: trimmed, lowercased
    display_name    TEXT NOT NULL,
    password_hash   TEXT NOT NULL,                 -- scrypt$<log2 N>$r$p$salt$key (base64url)
    timezone        TEXT,                          -- IANA zone name, optional
    tier            TEXT NOT NULL DEFAULT 'free' CHECK (tier IN ('free', 'plus', 'premium')),
    status          TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
    version         INTEGER NOT NULL DEFAULT 1,
    created_ms      INTEGER NOT NULL,
    updated_ms      INTEGER NOT NULL,
    deleted_ms      INTEGER
) STRICT;

-- Bearer tokens: only SHA-256(token) is stored. A token expires after `idle` ms without use.
CREATE TABLE sessions (
    token_hash      BLOB PRIMARY KEY NOT NULL,
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_ms      INTEGER NOT NULL,
    last_used_ms    INTEGER NOT NULL,
    expires_ms      INTEGER NOT NULL,
    revoked_ms      INTEGER,
    user_agent      TEXT,
    client_ip       TEXT
) STRICT, WITHOUT ROWID;
CREATE INDEX sessions_user ON sessions(user_id);
CREATE INDEX sessions_expires ON sessions(expires_ms);

-- Failed login attempts, for rate limiting per email and per client IP.
CREATE TABLE login_failures (
    id              INTEGER PRIMARY KEY,
    subject         TEXT NOT NULL,                 -- 'email:<normalised>' or 'ip:<address>'
    at_ms           INTEGER NOT NULL
) STRICT;
CREATE INDEX login_failures_subject ON login_failures(subject, at_ms);

-- The append-only spine: every mutation appends its rows here in the same transaction.
-- Realtime fan-out, resume, the admin audit view and cross-process propagation read it.
-- One mutation = one batch of consecutive rows sharing `batch` (the batch's first seq) and `event`.
CREATE TABLE change_log (
    seq             INTEGER PRIMARY KEY,           -- assigned by the store, never reused
    batch           INTEGER NOT NULL,              -- seq of the first row written by the same mutation
    event           TEXT NOT NULL,                 -- what happened: 'user_registered', 'member_joined', ...
    at_ms           INTEGER NOT NULL,
    actor           TEXT NOT NULL,                 -- 'user:<id>', 'admin', 'system'
    topic           TEXT NOT NULL,                 -- 'user:<id>', 'group:<id>'
    kind            TEXT NOT NULL,                 -- document kind: 'user', 'group', 'member', ...
    op              TEXT NOT NULL CHECK (op IN ('added', 'modified', 'removed')),
    entity_id       TEXT NOT NULL,
    document        TEXT,                          -- whole new document as JSON; NULL when removed
    reason          TEXT
) STRICT;
CREATE INDEX change_log_topic ON change_log(topic, seq);
CREATE INDEX change_log_batch ON change_log(batch);

CREATE TRIGGER change_log_no_update BEFORE UPDATE ON change_log
BEGIN SELECT RAISE(ABORT, 'change_log is append-only'); END;
