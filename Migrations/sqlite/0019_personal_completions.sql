-- 0019: personal completions and profile fields (issue 19; docs/personal-sync.md#completions, docs/api.md#accounts).

-- Profile fields: `locale` (a BCP 47 tag, ≤ 35 bytes) and `avatar_url` (an https URL, ≤ 2,048 bytes)
-- set by the user; `last_seen_ms` set by the server when a session is used (at most hourly, with the
-- session's own touch). Shown only in the user's own document.
ALTER TABLE users ADD COLUMN locale TEXT;
ALTER TABLE users ADD COLUMN avatar_url TEXT;
ALTER TABLE users ADD COLUMN last_seen_ms INTEGER;

-- Completions of personal alarms: immutable, one per (user, alarm, occurrence), kept 3 years from
-- `completed_ms`, gone with the alarm's tombstone (30 days after its delete) and with the account.
-- No foreign key to personal_alarms: the alarm row may be replaced (PUT) while its history stays.
CREATE TABLE personal_completions (
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    id              TEXT NOT NULL,                 -- client-chosen UUID or the server's, lowercase
    alarm_id        TEXT NOT NULL,
    scheduled_ms    INTEGER NOT NULL,              -- the occurrence answered
    status          TEXT NOT NULL CHECK (status IN ('completed', 'skipped')),
    completed_ms    INTEGER NOT NULL,              -- the device's time of the answer
    document        TEXT NOT NULL,                 -- whole PersonalCompletion JSON
    PRIMARY KEY (user_id, id)
) STRICT, WITHOUT ROWID;
CREATE UNIQUE INDEX personal_completions_occurrence ON personal_completions(user_id, alarm_id, scheduled_ms);
CREATE INDEX personal_completions_listed ON personal_completions(user_id, completed_ms, id);
CREATE INDEX personal_completions_completed ON personal_completions(completed_ms);
