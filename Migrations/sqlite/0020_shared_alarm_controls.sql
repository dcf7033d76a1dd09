-- 0020: shared-alarm controls and the "what do I have to do" list (issue 19; docs/design.md#pause-and-disable,
-- docs/design.md#occurrence-states). Same conventions as 0003.
--
-- `is_enabled`, `paused_until` and `answer_lead_minutes` live in the alarm document; the columns the
-- scheduler, the claim-time re-check and the overdue sweep read (open_ms, pre_alarm_ms) already follow
-- them, so shared_alarms gains no column. Documents without the fields read as enabled, not paused,
-- answerable from 1,440 minutes ahead.

-- The open occurrence's members who have not answered (its `pending_uids`), one row each, rewritten
-- with the alarm row (SharedAlarmStore.write): `GET /v1/me/shared-alarms?assigned=me` asks it.
CREATE TABLE shared_alarm_pending (
    alarm_id        TEXT NOT NULL REFERENCES shared_alarms(id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL,
    PRIMARY KEY (alarm_id, user_id)
) STRICT, WITHOUT ROWID;

INSERT INTO shared_alarm_pending (alarm_id, user_id)
SELECT DISTINCT a.id, j.value FROM shared_alarms a, json_each(a.document, '$.occurrence.pending_uids') j
WHERE a.deleted_ms IS NULL AND a.open_ms IS NOT NULL AND j.type = 'text';

-- My alarms across my groups, in next-fire order: one range per group.
CREATE INDEX shared_alarms_group_next ON shared_alarms(group_id, next_fire_ms, id)
    WHERE deleted_ms IS NULL AND next_fire_ms IS NOT NULL;
