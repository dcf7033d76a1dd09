-- 0008 (PostgreSQL 15): the change log can be compacted and a deleted account's personal data erased
-- from it, while `chronir-admin audit verify` still verifies the chain (issue 15 #3, #12;
-- docs/security.md). Same meaning as Migrations/sqlite/0008_change_log_retention.sql.
--
-- document_digest: SHA-256 of `document` for rows written from now on. Their chain hash covers the
-- digest instead of the document text, so a document can be redacted later while its row still
-- chains. Rows written before keep NULL here and their hash covers the document itself.
-- redacted_ms: when personal data was erased from `document` (account deletion). A redacted row's
-- document no longer matches its digest; verify reports such rows as redacted, not as tampering.
ALTER TABLE change_log ADD COLUMN document_digest BYTEA CHECK (document_digest IS NULL OR length(document_digest) = 32);
ALTER TABLE change_log ADD COLUMN redacted_ms BIGINT;

-- Still append-only, except that a document may be redacted (and only together with redacted_ms).
-- Deleting the oldest rows is compaction (ChangeLog.compact), which appends a checkpoint row naming
-- the chain hash of the last row it removed. Like SQLite's `UPDATE OF`, each trigger fires when the
-- statement's SET names one of its columns, whether or not the value changes.
DROP TRIGGER change_log_no_update ON change_log;
CREATE TRIGGER change_log_no_update
BEFORE UPDATE OF seq, batch, event, at_ms, actor, topic, kind, op, entity_id, reason, hash, document_digest ON change_log
FOR EACH ROW EXECUTE FUNCTION raise_abort('change_log is append-only');
-- SQLite: WHEN NEW.redacted_ms IS NULL OR OLD.redacted_ms IS NOT NULL AND NEW.redacted_ms IS NOT OLD.redacted_ms
-- (AND binds tighter than OR; `IS NOT` between values is IS DISTINCT FROM).
CREATE TRIGGER change_log_redact_only
BEFORE UPDATE OF document, redacted_ms ON change_log
FOR EACH ROW WHEN (NEW.redacted_ms IS NULL OR (OLD.redacted_ms IS NOT NULL AND NEW.redacted_ms IS DISTINCT FROM OLD.redacted_ms))
EXECUTE FUNCTION raise_abort('a change_log document may only be redacted');
