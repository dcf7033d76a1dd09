-- 0018: personal alarms mirrored for backup and sync across a user's devices, and synced settings (issue 19;
-- docs/personal-sync.md; data-schema §4.2, §7). Same conventions as 0003.

-- One row per (user, client-chosen alarm id). `document` is the whole PersonalAlarm JSON, the bytes
-- the API and the change log show; the other columns copy what queries need.
CREATE TABLE personal_alarms (
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    id              TEXT NOT NULL,                 -- client-chosen UUID, lowercase
    document        TEXT NOT NULL,                 -- whole PersonalAlarm JSON
    version         INTEGER NOT NULL CHECK (version >= 1),
    updated_ms      INTEGER NOT NULL,              -- the client's updated_at: last-write-wins compares it
    created_ms      INTEGER NOT NULL,
    deleted_ms      INTEGER,                       -- tombstone; purged 30 days later (retention)
    PRIMARY KEY (user_id, id)
) STRICT, WITHOUT ROWID;
CREATE INDEX personal_alarms_deleted ON personal_alarms(deleted_ms) WHERE deleted_ms IS NOT NULL;

-- Versions that lost a last-write-wins comparison, kept 30 days so a client can show "updated on
-- another device" (data-schema §7.2).
CREATE TABLE personal_alarm_conflicts (
    id              INTEGER PRIMARY KEY,
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    alarm_id        TEXT NOT NULL,
    document        TEXT NOT NULL,                 -- the losing version, as a PersonalAlarm JSON
    archived_ms     INTEGER NOT NULL
) STRICT;
CREATE INDEX personal_alarm_conflicts_alarm ON personal_alarm_conflicts(user_id, alarm_id, archived_ms);
CREATE INDEX personal_alarm_conflicts_archived ON personal_alarm_conflicts(archived_ms);

-- A user's synced preferences (UserSettings JSON); no row = the defaults, version 0.
CREATE TABLE user_settings (
    user_id         TEXT PRIMARY KEY NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    document        TEXT NOT NULL,
    version         INTEGER NOT NULL CHECK (version >= 1),
    updated_ms      INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
