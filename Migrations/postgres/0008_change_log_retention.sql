-- 0008 (PostgreSQL): compaction and redaction of the change log (see Migrations/sqlite/0008 for the
-- scheme). Still append-only, except that a document may be redacted, and only together with
-- redacted_ms; deleting the oldest rows is compaction (ChangeLog.compact).
ALTER TABLE change_log ADD COLUMN document_digest BYTEA CHECK (document_digest IS NULL OR length(document_digest) = 32);
ALTER TABLE change_log ADD COLUMN redacted_ms BIGINT;

DROP TRIGGER change_log_no_update ON change_log;
CREATE TRIGGER change_log_no_update
BEFORE UPDATE OF seq, batch, event, at_ms, actor, topic, kind, op, entity_id, reason, hash, document_digest ON change_log
FOR EACH ROW EXECUTE FUNCTION chronir_refuse('change_log is append-only');
CREATE TRIGGER change_log_redact_only
BEFORE UPDATE OF document, redacted_ms ON change_log
FOR EACH ROW WHEN (NEW.redacted_ms IS NULL OR (OLD.redacted_ms IS NOT NULL AND NEW.redacted_ms IS DISTINCT FROM OLD.redacted_ms))
EXECUTE FUNCTION chronir_refuse('a change_log document may only be redacted');
