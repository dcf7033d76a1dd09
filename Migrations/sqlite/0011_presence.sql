-- 0011: cluster-wide presence (issue 16). With several instances on one database (PostgreSQL), each
-- instance writes which users have a group topic subscribed on it, so every instance can announce
-- the union (Store/ClusterPresenceStore.swift; docs/architecture.md, Across instances). An instance
-- id is random per process start; its heartbeat is refreshed on every presence interval, and an
-- instance whose heartbeat is older than ClusterPresenceStore.staleAfterMilliseconds is deleted with
-- its rows (ON DELETE CASCADE) by whichever live instance notices. Unused with one SQLite server.
CREATE TABLE instances (
    instance_id     TEXT PRIMARY KEY NOT NULL,
    heartbeat_ms    INTEGER NOT NULL
) STRICT;
CREATE INDEX instances_heartbeat ON instances(heartbeat_ms);

-- One row per (instance, group, user) with at least one socket of the user subscribed to the
-- group's topic on that instance. No foreign key to groups or users: rows are rewritten by their
-- instance within one presence interval of any change, and a deleted group's subscriptions end
-- (revoked) first.
CREATE TABLE presence (
    instance_id     TEXT NOT NULL REFERENCES instances(instance_id) ON DELETE CASCADE,
    group_id        TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    PRIMARY KEY (instance_id, group_id, user_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX presence_group ON presence(group_id);
