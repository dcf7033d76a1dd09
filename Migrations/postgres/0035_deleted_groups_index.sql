-- 0035: the retention sweep's purge of groups deleted 30 days ago (GroupStore.purgeDeleted, docs/design.md#retention)
-- finds them without scanning every group: only deleted groups are in this index.
CREATE INDEX groups_deleted ON groups(deleted_ms) WHERE deleted_ms IS NOT NULL;
