import Storage
import Store
import TestSupport
import Testing

@Suite("Cluster presence — instances' rows, union, expiry (migration 0011)")
struct ClusterPresenceStoreTests {
    let staleAfter = ClusterPresenceStore.staleAfterMilliseconds(presenceIntervalMilliseconds: 2_000)

    func tick(
        _ db: any SQLDatabase, _ instance: String, _ changes: [String: Set<String>], all: [String: Set<String>]? = nil,
        at now: Int64
    ) throws -> ClusterPresenceStore.TickResult {
        try db.writeSync(.concurrent) {  // as ClusterPresence runs it
            try ClusterPresenceStore.tick(
                instance: instance, changes: changes, all: all ?? changes, at: now, staleAfter: staleAfter, on: $0)
        }
    }

    func others(_ db: any SQLDatabase, _ groups: Set<String>?, excluding instance: String, at now: Int64) throws
        -> [String: Set<String>]
    {
        try db.readSync {
            try ClusterPresenceStore.others(groups: groups, excluding: instance, freshSince: now - staleAfter, on: $0)
        }
    }

    @Test("each instance's rows replace per group; others see the union without their own rows", arguments: TestBackend.available)
    func writeAndUnion(_ backend: TestBackend) throws {
        let storage = try backend.open(migrations: Schema.migrations(for: backend.dialect))
        let a = storage.database
        let b = try openAnotherHandle(storage.database)
        let t: Int64 = 1_000_000
        let first = try tick(a, "A", ["g1": ["u1", "u2"], "g2": ["u1"]], at: t)
        #expect(first.rejoined && first.changedGroups == ["g1", "g2"] && first.expiredInstances.isEmpty)
        _ = try tick(b, "B", ["g1": ["u2", "u3"]], at: t)
        #expect(try others(a, ["g1", "g2"], excluding: "A", at: t) == ["g1": ["u2", "u3"]])
        #expect(try others(b, nil, excluding: "B", at: t) == ["g1": ["u1", "u2"], "g2": ["u1"]])
        #expect(try others(b, ["g3"], excluding: "B", at: t) == [:])

        // A's next interval: u2 left g1, nobody is left in g2; an unchanged group is not rewritten.
        let second = try tick(a, "A", ["g1": ["u1"], "g2": []], all: ["g1": ["u1"]], at: t + 2_000)
        #expect(!second.rejoined && second.changedGroups == ["g1", "g2"])
        #expect(try others(b, nil, excluding: "B", at: t + 2_000) == ["g1": ["u1"]])
        #expect(try tick(a, "A", [:], all: ["g1": ["u1"]], at: t + 4_000).changedGroups.isEmpty, "a heartbeat alone")

        // Graceful shutdown: B's rows go, and the groups they were in are returned.
        #expect(try b.writeSync { try ClusterPresenceStore.remove(instance: "B", on: $0) } == ["g1"])
        #expect(try others(a, nil, excluding: "A", at: t + 4_000) == [:])
    }

    @Test(
        "an instance without a heartbeat for the limit is unseen, then expired with its rows by a live one's tick",
        arguments: TestBackend.available)
    func expiry(_ backend: TestBackend) throws {
        let db = try backend.open(migrations: Schema.migrations(for: backend.dialect)).database
        let t: Int64 = 1_000_000
        _ = try tick(db, "dead", ["g1": ["u9"], "g2": ["u9"]], at: t)
        _ = try tick(db, "A", ["g1": ["u1"]], at: t)
        #expect(try others(db, ["g1"], excluding: "A", at: t + staleAfter) == ["g1": ["u9"]], "at the limit: alive")
        #expect(try others(db, ["g1"], excluding: "A", at: t + staleAfter + 1) == [:], "past it: not counted")

        let atLimit = try tick(db, "A", [:], all: ["g1": ["u1"]], at: t + staleAfter)
        #expect(atLimit.expiredInstances.isEmpty, "a heartbeat exactly staleAfter old is kept")
        let past = try tick(db, "A", [:], all: ["g1": ["u1"]], at: t + staleAfter + 1)
        #expect(past.expiredInstances == ["dead"])
        #expect(past.changedGroups == ["g1", "g2"], "the dead instance's groups, to re-announce")
        let rows = try db.readSync { try $0.scalar("SELECT COUNT(*) FROM presence WHERE instance_id = 'dead'") }
        #expect(rows == .integer(0))
        #expect(try db.readSync { try $0.scalar("SELECT COUNT(*) FROM instances") } == .integer(1))

        // The dead instance comes back (it only stalled): its row is recreated and ALL its groups rewritten.
        let back = try tick(db, "dead", ["g2": []], all: ["g1": ["u9"]], at: t + staleAfter + 2)
        #expect(back.rejoined && back.changedGroups == ["g1", "g2"])
        #expect(try others(db, nil, excluding: "A", at: t + staleAfter + 2) == ["g1": ["u9"]])
    }

    @Test(
        """
        PostgreSQL: ticks are concurrent writes — one instance's tick holding its transaction open (having expired a dead \
        instance) never makes another's wait, and the other does not expire the same instance again
        """,
        .enabled(if: TestBackend.available.contains(.postgres)), .timeLimit(.minutes(5)))
    func concurrentTicks() async throws {
        let a = try TestBackend.postgres.open(migrations: Schema.postgresMigrations).database
        let b = try openAnotherHandle(a)
        defer { b.close() }
        let t: Int64 = 1_000_000
        _ = try tick(a, "dead", ["g1": ["u9"]], at: t)
        _ = try tick(a, "A", ["g1": ["u1"]], at: t)
        _ = try tick(b, "B", ["g2": ["u2"]], at: t)

        let later = t + staleAfter + 1
        _ = try tick(b, "B", [:], all: ["g2": ["u2"]], at: later - 1)  // B is alive; A and dead have gone quiet
        let staleAfter = staleAfter
        let held = try await HeldWrite(on: a) { db in
            try ClusterPresenceStore.tick(
                instance: "A", changes: [:], all: ["g1": ["u1"]], at: later, staleAfter: staleAfter, on: db
            ).expiredInstances
        }
        // B's tick runs while A's is open: it passes over the instances A holds (the dead one it is
        // expiring, and A itself, stale in B's snapshot but being refreshed) instead of waiting for them.
        // A lock wait would be a hang: `lock_timeout` turns it into an error.
        let other = try await blocking {
            try b.writeSync(.concurrent) { db in
                _ = try db.run("SET LOCAL lock_timeout = '30s'")
                return try ClusterPresenceStore.tick(
                    instance: "B", changes: ["g2": ["u2", "u3"]], all: ["g2": ["u2", "u3"]], at: later, staleAfter: staleAfter, on: db)
            }
        }
        #expect(try await held.commit() == ["dead"])
        #expect(other.expiredInstances.isEmpty)
        #expect(try others(a, nil, excluding: "A", at: later) == ["g2": ["u2", "u3"]])
        #expect(try a.readSync { try $0.scalar("SELECT COUNT(*) FROM instances") } == .integer(2))
    }

    @Test("a notice names its sender and groups, or every group when the list is too long or unsafe")
    func noticePayload() {
        typealias Notice = ClusterPresenceStore.Notice
        let notice = Notice(instance: "abc", groups: ["g2", "g1"])
        #expect(notice.payload == "abc:g1,g2")
        #expect(Notice(payload: notice.payload) == notice)
        #expect(Notice(instance: "abc", groups: nil).payload == "abc:*")
        #expect(Notice(payload: "abc:*") == Notice(instance: "abc", groups: nil))
        #expect(Notice(instance: "abc", groups: ["a,b"]).payload == "abc:*")
        // 36-character ids (UUIDs): "abc:" + n ids + (n − 1) commas = 3 + 37n bytes.
        func id(_ n: Int) -> String { "g" + String(repeating: "0", count: 35 - String(n).count) + String(n) }
        let fits = Set((0..<(Notice.maxPayloadBytes - 3) / 37).map(id))
        #expect(Notice(instance: "abc", groups: fits).payload.utf8.count == 3 + 37 * fits.count)
        #expect(Notice(instance: "abc", groups: fits).payload.utf8.count > Notice.maxPayloadBytes - 37)
        #expect(Notice(instance: "abc", groups: fits.union([id(9_999)])).payload == "abc:*")
        #expect(Notice(payload: "") == nil && Notice(payload: "abc") == nil && Notice(payload: ":g1") == nil)
        #expect(Notice(payload: "abc:") == nil)
    }

    @Test("on PostgreSQL a tick notifies chronir_presence at COMMIT with the changed groups")
    func notifies() throws {
        guard TestBackend.available.contains(.postgres) else { return }
        let db = try TestBackend.postgres.open(migrations: Schema.postgresMigrations).database
        let listener = try ChannelListener(db, channel: ClusterPresenceStore.notifyChannel)
        _ = try tick(db, "A", ["g1": ["u1"]], at: 1_000)
        _ = try tick(db, "A", [:], all: ["g1": ["u1"]], at: 2_000)  // nothing changed: no notice
        _ = try db.writeSync { try ClusterPresenceStore.remove(instance: "A", on: $0) }
        #expect(listener.payloads(atLeast: 2) == ["A:g1", "A:g1"])
    }
}
