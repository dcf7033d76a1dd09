-- 0011 (PostgreSQL): cluster-wide presence, as Migrations/sqlite/0011_presence.sql says: which
-- users have a group topic subscribed on which live instance, and each instance's heartbeat.
CREATE TABLE instances (
    instance_id     TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    heartbeat_ms    BIGINT NOT NULL
);
CREATE INDEX instances_heartbeat ON instances(heartbeat_ms);

CREATE TABLE presence (
    instance_id     TEXT COLLATE "C" NOT NULL REFERENCES instances(instance_id) ON DELETE CASCADE,
    group_id        TEXT COLLATE "C" NOT NULL,
    user_id         TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (instance_id, group_id, user_id)
);
CREATE INDEX presence_group ON presence(group_id);
