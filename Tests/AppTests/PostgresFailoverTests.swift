import Domain
import Foundation
import Logging
import Storage
import Store
import Synchronization
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// Failover: a primary and its synchronous streaming standby (two real clusters on loopback), two
/// instances on the multi-host URL with `target_session_attrs=read-write`; the primary's machine dies
/// (every process SIGKILLed) and the standby is promoted. Every wait is a bounded `eventually`; the
/// assertions are about answers and messages, never about how long anything took.
@Suite(
    "PostgreSQL failover — the primary dies, the standby is promoted", .serialized,
    .enabled(if: TestBackend.current == .postgres, "CHRONIR_TEST_BACKEND=postgres: each case kills its own PostgreSQL servers"))
struct PostgresFailoverTests {
    @Test(
        """
        the realtime feed follows the promoted standby: a subscriber on B gets every change made through A across the failover, \
        once and in order with no reset, and a socket subscribed on B after it gets A's next change; writes meanwhile are 2xx or 503
        """
    )
    func feedFollowsPromotedStandby() async throws {
        try await withFailoverPair(synchronous: true) { pair in
            let (primary, standby, a, b, token, groupID) = (pair.primary, pair.standby, pair.a, pair.b, pair.token, pair.groupID)
            let (port, subscriber) = (pair.port, pair.subscriber)
            #expect(await eventually(timeout: PostgresOutageTests.recovery) { b.listening(primary) })
            try await a.rename(groupID, to: "A1", token: token)
            try await subscriber.read(through: "A1")

            try await blocking { try primary.kill() }
            // Writes while no primary exists are refused as retryable, never a 500.
            let down = await a.h.send(.patch, "/v1/groups/\(groupID)", json: #"{"name":"During"}"#, token: token)
            PostgresOutageTests.expectUnavailable(down)
            PostgresOutageTests.expectUnavailable(await b.h.send(.get, "/readyz"))
            try await blocking { try standby.promote() }

            // The first write after the promotion, through A: refusals until A's writer finds the new
            // primary are 503s.
            let renamed = await eventuallyAsync(timeout: PostgresOutageTests.recovery) {
                let reply = await a.h.send(.patch, "/v1/groups/\(groupID)", json: #"{"name":"A2"}"#, token: token)
                if reply.status != 200 { PostgresOutageTests.expectUnavailable(reply) }
                return reply.status == 200
            }
            #expect(renamed)
            // A found no primary from the kill (the PATCH above) until the rename that succeeded.
            let unavailable = Exposition(a.h.app.services.metrics.exposition())["chronir_database_unavailable_seconds_total"]
            #expect((unavailable ?? 0) > 0)
            try await subscriber.read(through: "A2")
            subscriber.expectExactly(["A1", "A2"])
            #expect(await eventually(timeout: PostgresOutageTests.recovery) { b.listening(standby) })
            // B's readiness names the role reached and a live feed again.
            let ready = await eventuallyAsync(timeout: PostgresOutageTests.recovery) {
                let reply = await b.h.send(.get, "/readyz")
                return reply.status == 200 && reply.json["database_role"] as? String == "primary"
                    && reply.json["change_feed"] as? String == "live"
            }
            #expect(ready)
            let metrics = String(decoding: b.h.app.services.metrics.exposition(), as: UTF8.self)
            #expect(metrics.contains("chronir_realtime_listener_reconnects_total 1"))

            // A group created after the failover, a socket on B subscribed to it, a change through A.
            let later = try await a.h.createGroup(token: token)
            let second = try await PostgresOutageTests.Subscriber.open(port: port, token: token, groupID: later)
            defer { second.close() }
            try await a.rename(later, to: "After", token: token)
            try await second.read(through: "After")
            second.expectExactly(["After"])
        }
    }

    @Test(
        """
        asynchronous replication loses a commit already delivered: the instance notices, the log gets a new epoch, its sockets close \
        1012, and a resume with the old epoch gets a reset snapshot holding the new primary's state
        """
    )
    func lostCommitsStartNewEpoch() async throws {
        try await withFailoverPair(synchronous: false) { pair in
            let (primary, standby, a, b, token, groupID) = (pair.primary, pair.standby, pair.a, pair.b, pair.token, pair.groupID)
            let (port, subscriber) = (pair.port, pair.subscriber)
            try await a.rename(groupID, to: "A1", token: token)
            try await subscriber.read(through: "A1")
            let oldEpoch = try primary.psql("SELECT epoch FROM log_epoch").trimmingCharacters(in: .whitespacesAndNewlines)
            // The standby has everything up to A1 replayed; then it stops receiving WAL.
            #expect(
                await eventually(timeout: PostgresOutageTests.recovery) {
                    (try? standby.psql("SELECT count(*) FROM groups WHERE name = 'A1'"))?.hasPrefix("1") == true
                })
            try standby.psql("ALTER SYSTEM SET primary_conninfo = 'host=127.0.0.1 port=1 user=chronir'")
            try standby.psql("SELECT pg_reload_conf()")
            #expect(
                await eventually(timeout: PostgresOutageTests.recovery) {
                    (try? primary.psql("SELECT count(*) FROM pg_stat_replication"))?.hasPrefix("0") == true
                })
            try await a.rename(groupID, to: "Lost", token: token)
            try await subscriber.read(through: "Lost")  // delivered, never replicated

            try await blocking { try primary.kill() }
            try await blocking { try standby.promote() }
            let renamed = await eventuallyAsync(timeout: PostgresOutageTests.recovery) {
                let reply = await a.h.send(.patch, "/v1/groups/\(groupID)", json: #"{"name":"New"}"#, token: token)
                if reply.status != 200 { PostgresOutageTests.expectUnavailable(reply) }
                return reply.status == 200
            }
            #expect(renamed)
            // B's feed finds its delivered history gone: its socket closes 1012 (never a silent gap).
            let code = try await blocking { try subscriber.feed.closeCode() }
            #expect(code == 1012)
            let newEpoch = try standby.psql("SELECT epoch FROM log_epoch").trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(newEpoch != oldEpoch)
            let metrics = String(decoding: b.h.app.services.metrics.exposition(), as: UTF8.self)
            #expect(metrics.contains("chronir_realtime_history_resets_total 1"))
            let lastSeq = subscriber.changes.last?.seq ?? 0
            let resumed = try await blocking {
                let feed = try RealtimeTests.Feed(port: port, token: token)
                defer { feed.close() }
                try feed.send(#"{"op":"subscribe","topic":"group:\#(groupID)","since":\#(lastSeq),"epoch":"\#(oldEpoch)"}"#)
                return try feed.next { $0["type"] as? String == "snapshot" }
            }
            #expect(resumed.object["reset"] as? Bool == true)
            #expect(resumed.object["epoch"] as? String == newEpoch)
            let group = (resumed.object["data"] as? [String: Any])?["group"] as? [String: Any]
            #expect(group?["name"] as? String == "New")
        }
    }

    @Test(
        """
        outbox leases and staged fires survive the promotion: a fire staged before is not staged again, a claim made before holds \
        its lease on the new primary and is claimed again once it lapses (at-least-once, nothing lost), and a fire due while no \
        primary existed is staged after, not skipped
        """
    )
    func leasesAndFiresSurvivePromotion() async throws {
        try await withFailoverPair(synchronous: true) { pair in
            let (primary, standby, a, b, token) = (pair.primary, pair.standby, pair.a, pair.b, pair.token)
            let quiet = Logger.quiet
            let ahead = NotificationScheduler.lookaheadMilliseconds
            let schedule =
                #""schedule":{"type":"custom_days","interval_days":1,"start_date":"2026-02-01"},"timezone":"UTC","assigned_to_uids":[]"#
            func alarm(_ title: String, hour: Int, minute: Int) async throws {
                try await a.h.expect(
                    201, .post, "/v1/groups/\(pair.groupID)/alarms",
                    json: #"{"title":"\#(title)",\#(schedule),"times_of_day":[{"hour":\#(hour),"minute":\#(minute)}]}"#, token: token)
            }
            try await alarm("Before", hour: 10, minute: 0)
            try await alarm("During", hour: 10, minute: 5)
            let before = try #require(Timestamp.parse("2026-02-06T10:00:00Z"))
            let during = try #require(Timestamp.parse("2026-02-06T10:05:00Z"))
            // Ana's phone, after her own notifications were expanded (they go to nobody else).
            let start = a.h.clock.nowMilliseconds()
            _ = try a.h.database.writeSync { db in
                try NotificationDeliveries.expand(at: start, providers: [.apns], webhook: false, limit: 1_000, on: db)
            }
            try await a.h.expect(
                201, .put, "/v1/me/devices/phone",
                json: #"{"platform":"ios","provider":"apns","token":"\#(String(repeating: "ab", count: 32))"}"#,
                token: token)

            // On the old primary: the 10:00 fire staged and expanded, then claimed by instance A until 10:01.
            #expect(try FireScheduler.runOnce(database: a.h.database, at: before - ahead, logger: quiet).queued == 1)
            _ = try a.h.database.writeSync { db in
                try NotificationDeliveries.expand(
                    at: before - ahead, lookahead: ahead, providers: [.apns], webhook: false, limit: 1_000, on: db)
            }
            let claimedByA = try a.h.database.writeSync { db in
                try NotificationDeliveries.claim(owner: "instance_a", at: before, leaseUntil: before + 60_000, limit: 1_000, on: db)
            }
            #expect(claimedByA.deliveries.count == 1)
            #expect(claimedByA.deliveries.first.map { $0.type == .alarmFired && $0.key.hasSuffix(":\(before)") } == true)

            // The machine dies at 10:00 with A's claim unsettled (A died with it, say); the standby is promoted.
            try await blocking { try primary.kill() }
            try await blocking { try standby.promote() }

            // B's first pass after the promotion, at 10:00:30: the fire is not staged twice and A's lease holds.
            let firstPass = await eventually(timeout: PostgresOutageTests.recovery) {
                (try? FireScheduler.runOnce(database: b.h.database, at: before + 30_000, logger: quiet)) != nil
            }
            #expect(firstPass)
            #expect(try FireScheduler.runOnce(database: b.h.database, at: before + 30_000, logger: quiet).total == 0, "staged once")
            let early = try b.h.database.writeSync { db in
                try NotificationDeliveries.claim(
                    owner: "instance_b", at: before + 30_000, leaseUntil: before + 90_000, limit: 1_000, on: db)
            }
            #expect(early.deliveries.isEmpty && early.cancelled == 0, "A's lease came through the promotion")
            // At 10:07 (no pass ran while there was no primary): the 10:05 fire is staged late, not skipped, and
            // A's lapsed claim is B's: the 10:00 fire is sent again, not lost.
            let late = during + 2 * 60_000
            #expect(
                try FireScheduler.runOnce(database: b.h.database, at: late, logger: quiet)
                    == NotificationScheduler.Pass(queued: 1, skipped: 0))
            _ = try b.h.database.writeSync { db in
                try NotificationDeliveries.expand(at: late, providers: [.apns], webhook: false, limit: 1_000, on: db)
            }
            let claimedByB = try b.h.database.writeSync { db in
                try NotificationDeliveries.claim(owner: "instance_b", at: late, leaseUntil: late + 60_000, limit: 1_000, on: db)
            }
            let keys = Set(claimedByB.deliveries.map(\.key))
            #expect(claimedByA.deliveries.allSatisfy { keys.contains($0.key) }, "the lapsed lease is claimed again")
            #expect(keys.contains { $0.hasPrefix("alarm_fired:") && $0.hasSuffix(":\(during)") }, "the 10:05 fire is sent late")
            #expect(claimedByB.deliveries.count == 2)
            for delivery in claimedByB.deliveries {
                try b.h.database.writeSync { db in try NotificationDeliveries.settle(delivery.id, on: db) }
            }
            let after = try b.h.database.writeSync { db in
                try NotificationDeliveries.claim(owner: "instance_b", at: late + 120_000, leaseUntil: late + 180_000, limit: 1_000, on: db)
            }
            #expect(after.deliveries.isEmpty, "settled once, never again")
        }
    }

    /// Everything the cases start from: a primary and its streaming standby, instances A and B on the
    /// multi-host URL with `target_session_attrs=read-write`, an account with a group made through A, and a
    /// subscriber to that group on B's served port.
    struct Pair {
        let primary: PostgresServer
        let standby: PostgresServer
        let a: PostgresOutageTests.Instance
        let b: PostgresOutageTests.Instance
        /// The account's session token.
        let token: String
        let groupID: String
        /// B's HTTP port.
        let port: Int
        let subscriber: PostgresOutageTests.Subscriber
    }

    /// Builds a `Pair` (with `synchronous_standby_names = '*'` when `synchronous`, waiting until the standby
    /// is in sync), runs `body` on it, then closes the subscriber and stops B's server and both clusters.
    private func withFailoverPair(synchronous: Bool, _ body: (Pair) async throws -> Void) async throws {
        let primary = try PostgresServer()
        defer { primary.stop() }
        let standby = try PostgresServer.standby(of: primary)
        defer { standby.stop() }
        if synchronous {
            // A COMMIT is acknowledged once the standby has its WAL, so the promotion loses nothing.
            try primary.psql("ALTER SYSTEM SET synchronous_standby_names = '*'")
            try primary.psql("SELECT pg_reload_conf()")
            #expect(
                await eventually(timeout: PostgresOutageTests.recovery) {
                    (try? primary.psql("SELECT sync_state FROM pg_stat_replication"))?.contains("sync") == true
                })
        }
        let url =
            "postgresql://chronir@127.0.0.1:\(primary.port),127.0.0.1:\(standby.port)/postgres"
            + "?sslmode=disable&connect_timeout=10&target_session_attrs=read-write"
        let a = try PostgresOutageTests.Instance(url: url, name: "instance_a")
        let b = try PostgresOutageTests.Instance(url: url, name: "instance_b")
        let ana = try await a.h.register("ana@example.com")
        let groupID = try await a.h.createGroup(token: ana.token)
        let (http, port) = try PostgresOutageTests.serve(b.h)
        defer { http.shutdown() }
        let subscriber = try await PostgresOutageTests.Subscriber.open(port: port, token: ana.token, groupID: groupID)
        defer { subscriber.close() }
        try await body(
            Pair(primary: primary, standby: standby, a: a, b: b, token: ana.token, groupID: groupID, port: port, subscriber: subscriber))
    }
}
