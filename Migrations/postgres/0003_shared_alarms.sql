-- 0003 (PostgreSQL 15): shared alarms and their completions (issue 4; data-schema seed §4.6, §4.7).
-- Same tables and meaning as Migrations/sqlite/0003_shared_alarms.sql; dialect conventions in 0001.

-- One row per shared alarm. `document` is the whole alarm document (SharedAlarm JSON, the bytes the
-- API and the change log show); the other columns are copies of the fields queries filter and order on.
CREATE TABLE shared_alarms (
    id              TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    group_id        TEXT COLLATE "C" NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    created_by      TEXT COLLATE "C" NOT NULL,                 -- creator's user id (also counts the 5/minute limit)
    document        TEXT COLLATE "C" NOT NULL,                 -- whole SharedAlarm JSON
    next_fire_ms    BIGINT,                                    -- NULL: the alarm never fires again
    open_ms         BIGINT,                                    -- scheduled time of the open occurrence; NULL when none
    grace_ms        BIGINT NOT NULL CHECK (grace_ms > 0),      -- open this long past open_ms → missed
    version         BIGINT NOT NULL,
    created_ms      BIGINT NOT NULL,
    updated_ms      BIGINT NOT NULL,
    deleted_ms      BIGINT                                     -- soft delete; purged 30 days later (retention)
);
CREATE INDEX shared_alarms_group ON shared_alarms(group_id, created_ms, id);
CREATE INDEX shared_alarms_creator ON shared_alarms(created_by, created_ms);
CREATE INDEX shared_alarms_open ON shared_alarms(open_ms) WHERE open_ms IS NOT NULL AND deleted_ms IS NULL;
CREATE INDEX shared_alarms_deleted ON shared_alarms(deleted_ms) WHERE deleted_ms IS NOT NULL;

-- Completions are immutable answers to one occurrence: one per (alarm, occurrence, member). Account
-- deletion anonymises them (user_id NULL, user_name 'Deleted User'); nothing else ever updates a row.
CREATE TABLE shared_completions (
    id                TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    group_id          TEXT COLLATE "C" NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
    alarm_id          TEXT COLLATE "C" NOT NULL REFERENCES shared_alarms(id) ON DELETE CASCADE,
    user_id           TEXT COLLATE "C",                        -- NULL once the account is deleted
    user_name         TEXT COLLATE "C" NOT NULL,               -- denormalised display name (seed: completed_by_name)
    scheduled_ms      BIGINT NOT NULL,                         -- the occurrence answered (seed: scheduled_date)
    status            TEXT COLLATE "C" NOT NULL CHECK (status IN ('completed', 'skipped')),
    completion_method TEXT COLLATE "C" NOT NULL CHECK (completion_method IN ('on_time', 'snoozed_then_done', 'manual_backfill', 'skipped')),
    snooze_count      BIGINT NOT NULL CHECK (snooze_count >= 0),
    note              TEXT COLLATE "C",                        -- ≤ 500 characters
    completed_ms      BIGINT NOT NULL
);
-- NULLs are distinct here as in SQLite: anonymised answers (user_id NULL) never collide.
CREATE UNIQUE INDEX shared_completions_one_answer ON shared_completions(alarm_id, scheduled_ms, user_id);
CREATE INDEX shared_completions_alarm ON shared_completions(alarm_id, completed_ms, id);
CREATE INDEX shared_completions_group ON shared_completions(group_id, completed_ms, id);
CREATE INDEX shared_completions_user ON shared_completions(user_id) WHERE user_id IS NOT NULL;

-- Like SQLite's `UPDATE OF`, fires when the statement's SET names one of these columns.
CREATE TRIGGER shared_completions_immutable BEFORE UPDATE OF alarm_id, scheduled_ms, status, completion_method,
    snooze_count, note, completed_ms ON shared_completions
FOR EACH ROW EXECUTE FUNCTION raise_abort('completions are immutable');
