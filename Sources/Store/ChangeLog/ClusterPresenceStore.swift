import Hashing
public import Storage

/// Presence across instances (migration 0011): which users have a group topic subscribed on which
/// instance, and each instance's heartbeat. Every instance writes its own rows once per presence
/// interval (`tick`, one write transaction) and reads the other instances' rows for the groups a
/// notification names (`others`). An instance that stops heartbeating — killed without a goodbye —
/// is deleted with its rows by the next `tick` of any live instance once its heartbeat is older than
/// `staleAfterMilliseconds`. The App drives it (App/Realtime/ClusterPresence.swift).
public enum ClusterPresenceStore {
    /// The PostgreSQL channel a `tick` or `remove` notifies in its transaction (delivered at COMMIT)
    /// with the groups whose rows changed (`Notice`); every instance LISTENs on it and re-reads them.
    public static let notifyChannel = "chronir_presence"

    /// Heartbeat age past which an instance counts as dead: three presence intervals (a live instance
    /// heartbeats once per interval, so two missed ticks — a slow transaction, a busy machine — are
    /// tolerated), and never under 10 s (instances' wall clocks may disagree by a second or two).
    public static func staleAfterMilliseconds(presenceIntervalMilliseconds interval: Int) -> Int64 {
        max(3 * Int64(interval), minimumStaleAfterMilliseconds)
    }

    /// The floor of `staleAfterMilliseconds`.
    public static let minimumStaleAfterMilliseconds: Int64 = 10_000

    /// A fresh instance id: 128 random bits as 32 lowercase hex digits, one per process start (a
    /// restarted instance never inherits its predecessor's rows; those expire).
    public static func newInstanceID() -> String { Hex.encode(SecureRandom.bytes(16)) }

    /// What one `tick` did.
    public struct TickResult: Sendable, Equatable {
        /// The instance's row was missing (first tick, or expired by another instance while this one
        /// stalled): every group it holds had to be written, not only the changed ones.
        public var rejoined: Bool
        /// Groups whose rows this tick changed: the written ones and those of expired instances.
        public var changedGroups: Set<String>
        /// Instances deleted as dead.
        public var expiredInstances: [String]
    }

    /// One presence interval of `instance`, in the caller's write transaction: refreshes its
    /// heartbeat to `now`; deletes every OTHER instance whose heartbeat is older than `now −
    /// staleAfter` (with its rows); replaces this instance's rows of each group in `changes` with the
    /// given users (empty: none) — or, when the instance row was missing, of every group in `all`
    /// (its complete local presence), since its old rows went with it. On PostgreSQL it notifies
    /// `notifyChannel` with the changed groups. `changes` must be a subset of `all`'s groups or name
    /// groups now empty. The transaction must be its own (`SQLDatabase.writeSync`, never the group
    /// commit of `write`): it turns `synchronous_commit` off for the whole transaction, which would
    /// drop the durability of any write batched with it.
    ///
    /// Safe as a `.concurrent` write (beside other instances' writes, their ticks included): what it
    /// writes is this instance's own rows, and the stale instances it expires are taken with
    /// `forUpdateSkipLocked` — two instances never expire one at once, and an instance whose tick is
    /// refreshing its heartbeat right now (its row locked) is skipped, not deleted under it.
    public static func tick(
        instance: String, changes: [String: Set<String>], all: [String: Set<String>], at now: Int64,
        staleAfter: Int64, on db: any SQLConnection
    ) throws -> TickResult {
        if db.dialect == .postgres {
            // Presence is rewritten every interval and worthless after a database crash: COMMIT need
            // not wait for the WAL flush, so the writer lock this transaction holds is released sooner.
            try db.send("SELECT set_config('synchronous_commit', 'off', true)", [])
        }
        let refreshed = try db.run(
            "UPDATE instances SET heartbeat_ms = ?2 WHERE instance_id = ?1", [.text(instance), .integer(now)])
        let rejoined = refreshed == 0
        if rejoined {
            try db.run("INSERT INTO instances (instance_id, heartbeat_ms) VALUES (?1, ?2)", [.text(instance), .integer(now)])
        }
        let cutoff = now - staleAfter
        var changed = Set<String>()
        let expired = try db.query(
            "SELECT instance_id FROM instances i WHERE heartbeat_ms < ?1 AND instance_id <> ?2 ORDER BY instance_id"
                + db.forUpdateSkipLocked(of: "i"),
            [.integer(cutoff), .text(instance)]
        ).compactMap { $0.string("instance_id") }
        for dead in expired {
            for row in try db.query("SELECT DISTINCT group_id FROM presence WHERE instance_id = ?1", [.text(dead)]) {
                if let group = row.string("group_id") { changed.insert(group) }
            }
            try db.run("DELETE FROM instances WHERE instance_id = ?1", [.text(dead)])  // cascades to presence
        }
        let writes = rejoined ? all.merging(changes) { _, new in new } : changes
        for (group, users) in writes.sorted(by: { $0.key < $1.key }) {
            try replace(instance: instance, group: group, users: users, on: db)
            changed.insert(group)
        }
        try notify(Notice(instance: instance, groups: changed), on: db)
        return TickResult(rejoined: rejoined, changedGroups: changed, expiredInstances: expired)
    }

    /// Deletes `instance` and its rows (graceful shutdown), in the caller's write transaction, and
    /// notifies its groups. Returns them.
    @discardableResult
    public static func remove(instance: String, on db: any SQLConnection) throws -> Set<String> {
        let groups = Set(
            try db.query("SELECT DISTINCT group_id FROM presence WHERE instance_id = ?1", [.text(instance)])
                .compactMap { $0.string("group_id") })
        try db.run("DELETE FROM instances WHERE instance_id = ?1", [.text(instance)])
        try notify(Notice(instance: instance, groups: groups), on: db)
        return groups
    }

    /// The users present in each of `groups` on instances other than `excluding` whose heartbeat is
    /// at or after `freshSince` (a dead instance not yet expired is not counted; a group with nobody
    /// is absent from the answer). `groups` nil: every group. Run in one read transaction.
    public static func others(
        groups: Set<String>?, excluding instance: String, freshSince: Int64, on db: any SQLConnection
    ) throws -> [String: Set<String>] {
        let select = """
            SELECT p.group_id, p.user_id FROM presence p JOIN instances i ON i.instance_id = p.instance_id
            WHERE p.instance_id <> ?1 AND i.heartbeat_ms >= ?2
            """
        var rows: [Row] = []
        if let groups {
            for group in groups.sorted() {
                rows += try db.query(select + " AND p.group_id = ?3", [.text(instance), .integer(freshSince), .text(group)])
            }
        } else {
            rows = try db.query(select, [.text(instance), .integer(freshSince)])
        }
        var present: [String: Set<String>] = [:]
        for row in rows {
            guard let group = row.string("group_id"), let user = row.string("user_id") else {
                throw StoreError.corruptRow(table: "presence")
            }
            present[group, default: []].insert(user)
        }
        return present
    }

    /// Replaces `instance`'s rows for `group` with `users`. Held back (`SQLConnection.send`): nothing
    /// reads their outcome, and under the writer lock, with the instance's row refreshed first, they
    /// cannot conflict — so a tick's rows travel with its COMMIT.
    static func replace(instance: String, group: String, users: Set<String>, on db: any SQLConnection) throws {
        try db.send("DELETE FROM presence WHERE instance_id = ?1 AND group_id = ?2", [.text(instance), .text(group)])
        for user in users.sorted() {
            try db.send(
                "INSERT INTO presence (instance_id, group_id, user_id) VALUES (?1, ?2, ?3)",
                [.text(instance), .text(group), .text(user)])
        }
    }

    /// Sends `notice` on `notifyChannel` (PostgreSQL only; delivered at COMMIT, never for a rollback).
    /// Nothing is sent for a notice without groups.
    static func notify(_ notice: Notice, on db: any SQLConnection) throws {
        guard db.dialect == .postgres, notice.groups?.isEmpty != true else { return }
        try db.send("SELECT pg_notify(?1, ?2)", [.text(notifyChannel), .text(notice.payload)])
    }

    /// A presence notification's payload: the sending instance, then the groups to re-read —
    ///
    ///     <instance id> ":" <group id> *("," <group id>)      or      <instance id> ":*"
    ///
    /// `*` (every group) when the list would pass `maxPayloadBytes` or a group id holds a `,`, `:` or
    /// `*`. Receivers ignore their own notices (their rows are their local presence).
    public struct Notice: Sendable, Equatable {
        /// PostgreSQL refuses a payload of 8000 bytes or more; this leaves room to spare.
        public static let maxPayloadBytes = 7_000

        /// The instance whose transaction sent it.
        public var instance: String
        /// The groups whose rows changed; nil: any group (re-read all).
        public var groups: Set<String>?

        public init(instance: String, groups: Set<String>?) {
            self.instance = instance
            self.groups = groups
        }

        /// The wire form (see the type's comment).
        public var payload: String {
            let all = instance + ":*"
            guard let groups else { return all }
            guard groups.allSatisfy({ !$0.isEmpty && !$0.contains(where: { ",:*".contains($0) }) }) else { return all }
            let list = instance + ":" + groups.sorted().joined(separator: ",")
            return list.utf8.count <= Self.maxPayloadBytes ? list : all
        }

        /// Parses a payload; nil when it is not one (ignored by receivers).
        public init?(payload: String) {
            guard let colon = payload.firstIndex(of: ":") else { return nil }
            instance = String(payload[..<colon])
            let rest = payload[payload.index(after: colon)...]
            guard !instance.isEmpty, !rest.isEmpty else { return nil }
            groups = rest == "*" ? nil : Set(rest.split(separator: ",").map(String.init))
        }
    }
}
