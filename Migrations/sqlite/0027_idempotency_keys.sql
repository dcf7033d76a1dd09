-- 0027: Idempotency-Key (docs/apps.md#retries-idempotency-key). A signed-in POST that carries the
-- header claims (user_id, idem_key) in the transaction of its first write, so the write and the claim
-- commit together or not at all; the answer (status, content type, body) is stored right after, and a
-- retry with the same key and the same request gets it back without the write being done again. Rows
-- live 24 hours (IdempotencyStore.lifetimeMilliseconds), then the retention sweep deletes them.
CREATE TABLE idempotency_keys (
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    idem_key        TEXT NOT NULL,                 -- the header's value, 1…255 visible ASCII characters
    fingerprint     BLOB NOT NULL,                 -- SHA-256 of method, path and body (IdempotencyKey.fingerprint)
    created_ms      INTEGER NOT NULL,
    status          INTEGER,                       -- NULL until the answer is stored
    content_type    TEXT,
    body            BLOB,
    PRIMARY KEY (user_id, idem_key)
) STRICT;
CREATE INDEX idempotency_keys_created ON idempotency_keys(created_ms);
