-- 0045: the change log is appended at COMMIT, under the log's own short lock (docs/scaling.md,
-- "Appended at commit"). A write transaction no longer reads the log's head and inserts rows itself:
-- `ChangeLog.append` queues each change in `change_log_pending` (seq and hash not yet known), and
-- the deferred trigger below runs once per transaction as it commits. It takes the append lock
-- (advisory key 0x6368726f6e6c6f67, ASCII "chronlog", `PostgresConnection.appendLockKey`), reads the
-- head, gives the queued rows the next seqs in queue order (`batch` = the seq of the first row of each
-- `append`), chains their hashes exactly as `ChangeLogChain.hash` does (SHA-256 of the previous hash,
-- seq and batch as length-prefixed decimal text, then `content`: the row's other fields, encoded by
-- `ChangeLogChain.content`), inserts them into `change_log`, empties the queue and notifies
-- `chronir_changes` with the last seq. The lock is released after the commit is visible, so seqs
-- still become visible in order (a resuming reader never skips one), while the transaction's own
-- statements ran without it: the lock is held for this function and the COMMIT's flush, never for a
-- network round trip.
--
-- UNLOGGED: a queued row lives only inside its transaction (the trigger deletes it before the
-- commit), so it needs no WAL and no replica; other transactions never see one.
CREATE UNLOGGED TABLE change_log_pending (
    id              BIGSERIAL PRIMARY KEY,                     -- queue order within the transaction
    batch_id        BIGINT NOT NULL,                           -- one per `append` call (change_log_pending_batch)
    event           TEXT COLLATE "C" NOT NULL,
    at_ms           BIGINT NOT NULL,
    actor           TEXT COLLATE "C" NOT NULL,
    topic           TEXT COLLATE "C" NOT NULL,
    kind            TEXT COLLATE "C" NOT NULL,
    op              TEXT COLLATE "C" NOT NULL,
    entity_id       TEXT COLLATE "C" NOT NULL,
    document        TEXT COLLATE "C",
    reason          TEXT COLLATE "C",
    document_digest BYTEA,
    content         BYTEA NOT NULL                             -- ChangeLogChain.content: what the hash covers after seq and batch
);
CREATE SEQUENCE change_log_pending_batch;

CREATE FUNCTION change_log_append_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    head_seq BIGINT;
    head_hash BYTEA;
    batch_seq BIGINT;
    current_batch BIGINT;
    seq_text TEXT;
    batch_text TEXT;
    queued RECORD;
BEGIN
    -- Every queued row fired this trigger; the first firing appends them all.
    IF current_setting('chronir.change_log_appended', true) = 'yes' THEN
        RETURN NULL;
    END IF;
    PERFORM set_config('chronir.change_log_appended', 'yes', true);
    PERFORM pg_advisory_xact_lock(7163101030252310375);
    SELECT seq, hash INTO head_seq, head_hash FROM change_log ORDER BY seq DESC LIMIT 1;
    IF head_seq IS NULL THEN
        head_seq := 0;
    END IF;
    IF head_hash IS NULL THEN
        head_hash := decode(repeat('00', 32), 'hex');
    END IF;
    FOR queued IN SELECT * FROM change_log_pending ORDER BY id LOOP
        head_seq := head_seq + 1;
        IF current_batch IS DISTINCT FROM queued.batch_id THEN
            current_batch := queued.batch_id;
            batch_seq := head_seq;
        END IF;
        seq_text := head_seq::text;
        batch_text := batch_seq::text;
        head_hash := sha256(head_hash
            || int8send(octet_length(seq_text)::bigint) || convert_to(seq_text, 'UTF8')
            || int8send(octet_length(batch_text)::bigint) || convert_to(batch_text, 'UTF8')
            || queued.content);
        INSERT INTO change_log
            (seq, batch, event, at_ms, actor, topic, kind, op, entity_id, document, reason, hash, document_digest)
        VALUES (head_seq, batch_seq, queued.event, queued.at_ms, queued.actor, queued.topic, queued.kind, queued.op,
            queued.entity_id, queued.document, queued.reason, head_hash, queued.document_digest);
    END LOOP;
    DELETE FROM change_log_pending;
    PERFORM pg_notify('chronir_changes', head_seq::text);
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER change_log_append_at_commit
AFTER INSERT ON change_log_pending
DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION change_log_append_at_commit();
