-- 0026: quota bytes count until their file is gone (issue 37, finding 5; docs/attachments.md#limits).
-- A deleted attachment's row (its tombstone) stays, and its bytes keep counting against the uploader's
-- and the group's quotas, until the orphan sweep has removed its file; the sweep then deletes the
-- tombstone. The quota sums therefore read every row of an uploader or a group, live or not: the
-- partial indexes of 0023 become full ones, and the sweep finds tombstones through their own index.
DROP INDEX attachments_uploader_live;
DROP INDEX attachments_group_live;
CREATE INDEX attachments_uploader_bytes ON attachments(uploaded_by, size_bytes);
CREATE INDEX attachments_group_bytes ON attachments(group_id, size_bytes);
CREATE INDEX attachments_tombstones ON attachments(sha256) WHERE deleted_ms IS NOT NULL;
