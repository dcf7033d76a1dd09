-- 0005 (PostgreSQL 15): operators can freeze a group (chronir-admin groups freeze): it becomes
-- read-only for everyone — members, admins, the owner, and chronir-admin itself — until unfrozen.
-- Enforced here, by triggers, so no write path can forget it: any insert or update of a frozen
-- group's rows aborts with the message 'group_frozen' (SQLSTATE 23514), which the API maps to
-- 409 GROUP_FROZEN. The only update a frozen group row accepts is the unfreeze itself (frozen_ms
-- back to NULL). Same meaning and trigger names as Migrations/sqlite/0005_group_freeze.sql.
-- A freeze cannot slip between the check and the write: every PostgreSQL write transaction holds
-- the writer advisory lock (0001), so writers run one at a time as on SQLite.
ALTER TABLE groups ADD COLUMN frozen_ms BIGINT;

CREATE TRIGGER groups_frozen_update BEFORE UPDATE ON groups
FOR EACH ROW WHEN (OLD.frozen_ms IS NOT NULL AND NEW.frozen_ms IS NOT NULL)
EXECUTE FUNCTION raise_abort('group_frozen');

-- The SQLite triggers' WHEN `(SELECT frozen_ms FROM groups WHERE id = NEW.group_id) IS NOT NULL`:
-- a PostgreSQL trigger's WHEN cannot hold a subquery, so the function tests it.
CREATE FUNCTION reject_if_group_frozen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT frozen_ms FROM groups WHERE id = NEW.group_id) IS NOT NULL THEN
        RAISE EXCEPTION 'group_frozen' USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER group_members_frozen_insert BEFORE INSERT ON group_members
FOR EACH ROW EXECUTE FUNCTION reject_if_group_frozen();
CREATE TRIGGER group_members_frozen_update BEFORE UPDATE ON group_members
FOR EACH ROW EXECUTE FUNCTION reject_if_group_frozen();

CREATE TRIGGER invite_codes_frozen_insert BEFORE INSERT ON invite_codes
FOR EACH ROW EXECUTE FUNCTION reject_if_group_frozen();
CREATE TRIGGER invite_codes_frozen_update BEFORE UPDATE ON invite_codes
FOR EACH ROW EXECUTE FUNCTION reject_if_group_frozen();

CREATE TRIGGER invitations_frozen_insert BEFORE INSERT ON invitations
FOR EACH ROW EXECUTE FUNCTION reject_if_group_frozen();
CREATE TRIGGER invitations_frozen_update BEFORE UPDATE ON invitations
FOR EACH ROW EXECUTE FUNCTION reject_if_group_frozen();

CREATE TRIGGER shared_alarms_frozen_insert BEFORE INSERT ON shared_alarms
FOR EACH ROW EXECUTE FUNCTION reject_if_group_frozen();
CREATE TRIGGER shared_alarms_frozen_update BEFORE UPDATE ON shared_alarms
FOR EACH ROW EXECUTE FUNCTION reject_if_group_frozen();

CREATE TRIGGER shared_completions_frozen_insert BEFORE INSERT ON shared_completions
FOR EACH ROW EXECUTE FUNCTION reject_if_group_frozen();
