-- 0027 (PostgreSQL): Idempotency-Key claims and stored answers (see Migrations/sqlite/0027_idempotency_keys.sql).
CREATE TABLE idempotency_keys (
    user_id         TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    idem_key        TEXT COLLATE "C" NOT NULL,
    fingerprint     BYTEA NOT NULL,
    created_ms      BIGINT NOT NULL,
    status          BIGINT,
    content_type    TEXT COLLATE "C",
    body            BYTEA,
    PRIMARY KEY (user_id, idem_key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys(created_ms);
