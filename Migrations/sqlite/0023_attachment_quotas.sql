-- 0023: attachment quotas (issue 20; docs/attachments.md#limits). An upload sums the live bytes of its
-- uploader and of its group inside the write transaction; these partial indexes hold exactly the rows
-- each sum reads (and their size), so the check reads an index, not the table.
CREATE INDEX attachments_uploader_live ON attachments(uploaded_by, size_bytes) WHERE deleted_ms IS NULL;
CREATE INDEX attachments_group_live ON attachments(group_id, owner_kind, size_bytes) WHERE deleted_ms IS NULL;
