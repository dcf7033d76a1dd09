-- 0023 (PostgreSQL): attachment quotas (see Migrations/sqlite/0023_attachment_quotas.sql).
CREATE INDEX attachments_uploader_live ON attachments(uploaded_by, size_bytes) WHERE deleted_ms IS NULL;
CREATE INDEX attachments_group_live ON attachments(group_id, owner_kind, size_bytes) WHERE deleted_ms IS NULL;
