-- 0005 (PostgreSQL): operators can freeze a group; any insert or update of a frozen group's rows
-- fails with 'group_frozen' (API: 409 GROUP_FROZEN). The only update a frozen group row accepts is
-- the unfreeze itself (frozen_ms back to NULL). Same rules as Migrations/sqlite/0005.
ALTER TABLE groups ADD COLUMN frozen_ms BIGINT;

CREATE TRIGGER groups_frozen_update BEFORE UPDATE ON groups
FOR EACH ROW WHEN (OLD.frozen_ms IS NOT NULL AND NEW.frozen_ms IS NOT NULL)
EXECUTE FUNCTION chronir_refuse('group_frozen');

-- A trigger WHEN clause cannot query another table, so the group's state is read in the function.
CREATE FUNCTION chronir_refuse_if_group_frozen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT frozen_ms FROM groups WHERE id = NEW.group_id) IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'check_violation', MESSAGE = 'group_frozen';
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER group_members_frozen BEFORE INSERT OR UPDATE ON group_members
FOR EACH ROW EXECUTE FUNCTION chronir_refuse_if_group_frozen();
CREATE TRIGGER invite_codes_frozen BEFORE INSERT OR UPDATE ON invite_codes
FOR EACH ROW EXECUTE FUNCTION chronir_refuse_if_group_frozen();
CREATE TRIGGER invitations_frozen BEFORE INSERT OR UPDATE ON invitations
FOR EACH ROW EXECUTE FUNCTION chronir_refuse_if_group_frozen();
CREATE TRIGGER shared_alarms_frozen BEFORE INSERT OR UPDATE ON shared_alarms
FOR EACH ROW EXECUTE FUNCTION chronir_refuse_if_group_frozen();
CREATE TRIGGER shared_completions_frozen BEFORE INSERT ON shared_completions
FOR EACH ROW EXECUTE FUNCTION chronir_refuse_if_group_frozen();
