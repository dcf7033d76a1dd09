-- 0038: archiving a finished alarm (docs/design.md#done-and-archived). archived_ms copies the
-- document's archived_at (SharedAlarmStore.write keeps it) so the group's alarm list can leave
-- archived alarms out, or list only them, in SQL while paging. Existing alarms are not archived.
ALTER TABLE shared_alarms ADD COLUMN archived_ms INTEGER;
