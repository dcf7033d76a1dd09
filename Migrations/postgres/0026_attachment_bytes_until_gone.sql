-- 0026 (PostgreSQL): quota bytes count until their file is gone (see Migrations/sqlite/0026_attachment_bytes_until_gone.sql).
DROP INDEX attachments_uploader_live;
DROP INDEX attachments_group_live;
CREATE INDEX attachments_uploader_bytes ON attachments(uploaded_by, size_bytes);
CREATE INDEX attachments_group_bytes ON attachments(group_id, size_bytes);
CREATE INDEX attachments_tombstones ON attachments(sha256) WHERE deleted_ms IS NOT NULL;
