-- 0005: operators can freeze a group (chronir-admin groups freeze): it becomes read-only for
-- everyone — members, admins, the owner, and chronir-admin itself — until unfrozen.
-- Enforced here, by triggers, so no write path can forget it: any insert or update of a frozen
-- group's rows aborts with the message 'group_frozen', which the API maps to 409 GROUP_FROZEN.
-- The only update a frozen group row accepts is the unfreeze itself (frozen_ms back to NULL).
ALTER TABLE groups ADD COLUMN frozen_ms INTEGER;

CREATE TRIGGER groups_frozen_update BEFORE UPDATE ON groups
WHEN OLD.frozen_ms IS NOT NULL AND NEW.frozen_ms IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'group_frozen'); END;

CREATE TRIGGER group_members_frozen_insert BEFORE INSERT ON group_members
WHEN (SELECT frozen_ms FROM groups WHERE id = NEW.group_id) IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'group_frozen'); END;
CREATE TRIGGER group_members_frozen_update BEFORE UPDATE ON group_members
WHEN (SELECT frozen_ms FROM groups WHERE id = NEW.group_id) IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'group_frozen'); END;

CREATE TRIGGER invite_codes_frozen_insert BEFORE INSERT ON invite_codes
WHEN (SELECT frozen_ms FROM groups WHERE id = NEW.group_id) IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'group_frozen'); END;
CREATE TRIGGER invite_codes_frozen_update BEFORE UPDATE ON invite_codes
WHEN (SELECT frozen_ms FROM groups WHERE id = NEW.group_id) IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'group_frozen'); END;

CREATE TRIGGER invitations_frozen_insert BEFORE INSERT ON invitations
WHEN (SELECT frozen_ms FROM groups WHERE id = NEW.group_id) IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'group_frozen'); END;
CREATE TRIGGER invitations_frozen_update BEFORE UPDATE ON invitations
WHEN (SELECT frozen_ms FROM groups WHERE id = NEW.group_id) IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'group_frozen'); END;

CREATE TRIGGER shared_alarms_frozen_insert BEFORE INSERT ON shared_alarms
WHEN (SELECT frozen_ms FROM groups WHERE id = NEW.group_id) IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'group_frozen'); END;
CREATE TRIGGER shared_alarms_frozen_update BEFORE UPDATE ON shared_alarms
WHEN (SELECT frozen_ms FROM groups WHERE id = NEW.group_id) IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'group_frozen'); END;

CREATE TRIGGER shared_completions_frozen_insert BEFORE INSERT ON shared_completions
WHEN (SELECT frozen_ms FROM groups WHERE id = NEW.group_id) IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'group_frozen'); END;
