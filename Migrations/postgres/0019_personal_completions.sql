-- 0019 (PostgreSQL): personal completions and profile fields (see Migrations/sqlite/0019_personal_completions.sql).
ALTER TABLE users ADD COLUMN locale TEXT COLLATE "C";
ALTER TABLE users ADD COLUMN avatar_url TEXT COLLATE "C";
ALTER TABLE users ADD COLUMN last_seen_ms BIGINT;

CREATE TABLE personal_completions (
    user_id         TEXT COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    id              TEXT COLLATE "C" NOT NULL,
    alarm_id        TEXT COLLATE "C" NOT NULL,
    scheduled_ms    BIGINT NOT NULL,
    status          TEXT COLLATE "C" NOT NULL CHECK (status IN ('completed', 'skipped')),
    completed_ms    BIGINT NOT NULL,
    document        TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (user_id, id)
);
CREATE UNIQUE INDEX personal_completions_occurrence ON personal_completions(user_id, alarm_id, scheduled_ms);
CREATE INDEX personal_completions_listed ON personal_completions(user_id, completed_ms, id);
CREATE INDEX personal_completions_completed ON personal_completions(completed_ms);
