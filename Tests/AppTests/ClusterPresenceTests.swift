import Domain
import Postgres
import Storage
import Store
import TestSupport
import Testing
import Transport

@testable import App

/// presence is cluster-wide. Two Applications (instances) on one PostgreSQL database —
/// whatever `CHRONIR_TEST_BACKEND` says, since cluster presence exists only there — each behind the
/// real transport on 127.0.0.1. Every wait is bounded (`Feed.next`, 10 s); presence travels on the
/// instances' real 2-s presence timers, so a hop takes up to two intervals.
@Suite("Cluster presence — two instances on one PostgreSQL database", .enabled(if: PostgresServer.isAvailable))
struct ClusterPresenceTests {
    typealias Feed = RealtimeTests.Feed

    /// An instance on the database at `url`.
    func instance(_ url: String) throws -> (AppHarness, HTTPServer, Int) {
        let h = try AppHarness(defaultTier: .premium) { $0.databaseURL = url }
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.loopCount = 1
        let server = HTTPServer(configuration: configuration, responder: h.app)
        return (h, server, try server.start())
    }

    /// A `presence` message for `topic` that names `user` among `key` ("joined" or "left").
    static func presence(_ topic: String, _ key: String, _ user: String) -> ([String: Any]) -> Bool {
        { m in m["type"] as? String == "presence" && m["topic"] as? String == topic && (m[key] as? [String])?.contains(user) == true }
    }

    /// Returns once `feed` has been told `user` is present: in the snapshot it read (a flush may run
    /// while the snapshot is being read, and then only the snapshot says so), or in a later message.
    static func awaitPresent(_ feed: Feed, snapshot: RealtimeTests.Message, _ topic: String, _ user: String) throws {
        guard (snapshot["presence"] as? [String])?.contains(user) != true else { return }
        _ = try feed.next(presence(topic, "joined", user))
    }

    /// A feed on `port` as `token`, subscribed to `topic`, and the snapshot it was sent (the feed is
    /// closed when the subscription or the snapshot fails).
    private func subscribed(port: Int, token: String, _ topic: String) async throws -> (feed: Feed, snapshot: RealtimeTests.Message) {
        try await blocking {
            let feed = try Feed(port: port, token: token)
            do {
                try feed.send(#"{"op":"subscribe","topic":"\#(topic)"}"#)
                return (feed, try feed.next(RealtimeTests.type("snapshot", topic)))
            } catch {
                feed.close()
                throw error
            }
        }
    }

    /// A group with its owner and one member, made through `h`.
    func group(on h: AppHarness) async throws -> (group: String, owner: (token: String, id: String), member: (token: String, id: String)) {
        let owner = try await h.register("owner@example.com", name: "Owner")
        let member = try await h.register("member@example.com", name: "Member")
        let group = try await h.createGroup(token: owner.token)
        let code = try await h.inviteCode(group, token: owner.token)
        let joined = await h.join(code, token: member.token)
        guard joined.status == 200 else { throw AppHarness.HarnessError.unexpected(joined.text) }
        return (group, owner, member)
    }

    @Test("a member subscribed on instance B is present on A (message and snapshot), and leaves when B's socket closes")
    func acrossInstances() async throws {
        let url = try PostgresServer.freshDatabaseURL()
        let (a, serverA, portA) = try instance(url)
        defer { serverA.shutdown() }
        let (b, serverB, portB) = try instance(url)
        defer { serverB.shutdown() }
        defer {
            a.app.realtime.stop()
            b.app.realtime.stop()
        }
        let (group, owner, member) = try await group(on: a)
        let topic = "group:\(group)"

        let watching = try await subscribed(port: portA, token: owner.token, topic)
        let watcher = watching.feed
        defer { watcher.close() }
        try await blocking { try Self.awaitPresent(watcher, snapshot: watching.snapshot, topic, owner.id) }
        let onB = try await subscribed(port: portB, token: member.token, topic)
        // B's flush writes its row and notifies; A reads it and announces it at its next flush.
        let joined = try await blocking { try watcher.next(Self.presence(topic, "joined", member.id)) }
        #expect(joined["joined"] as? [String] == [member.id], "the owner was announced before")
        // A new subscriber on A gets both in its snapshot: the member is known before any message.
        let second = try await subscribed(port: portA, token: owner.token, topic)
        second.feed.close()
        #expect(Set(second.snapshot["presence"] as? [String] ?? []) == [owner.id, member.id])
        // And B, reading A's row the same way, shows the owner to the member.
        try await blocking { try Self.awaitPresent(onB.feed, snapshot: onB.snapshot, topic, owner.id) }

        onB.feed.close()
        let left = try await blocking { try watcher.next(Self.presence(topic, "left", member.id)) }
        #expect(left["left"] as? [String] == [member.id])
        #expect(left["joined"] as? [String] == [])
    }

    @Test("an instance whose heartbeat stopped (killed) is expired by a live one, and its users leave")
    func deadInstanceExpires() async throws {
        let url = try PostgresServer.freshDatabaseURL()
        let (a, server, port) = try instance(url)
        defer { server.shutdown() }
        defer { a.app.realtime.stop() }
        let (group, owner, member) = try await group(on: a)
        let topic = "group:\(group)"
        let watcher = try await subscribed(port: port, token: owner.token, topic).feed
        defer { watcher.close() }
        // Another instance's one tick, as its process would write it, and then nothing (SIGKILL).
        let other = try a.openAnotherHandle()
        defer { other.close() }
        let staleAfter = ClusterPresenceStore.staleAfterMilliseconds(presenceIntervalMilliseconds: 2_000)
        let now = a.clock.nowMilliseconds()
        _ = try other.writeSync { db in
            try ClusterPresenceStore.tick(
                instance: "killed", changes: [group: [member.id]], all: [group: [member.id]], at: now,
                staleAfter: staleAfter, on: db)
        }
        _ = try await blocking { try watcher.next(Self.presence(topic, "joined", member.id)) }

        // Time passes for A (its clock; no sleeping): the killed instance's heartbeat is now too old.
        a.clock.advance(by: staleAfter + 1)
        let left = try await blocking { try watcher.next(Self.presence(topic, "left", member.id)) }
        #expect(left["left"] as? [String] == [member.id])
        let instances = try a.database.readSync { try $0.query("SELECT instance_id FROM instances") }
        #expect(instances.count == 1 && instances.first?.string("instance_id") != "killed")
    }

    @Test("graceful shutdown deletes the instance's rows, so its users leave at once")
    func shutdownRemovesRows() async throws {
        let url = try PostgresServer.freshDatabaseURL()
        let (a, serverA, portA) = try instance(url)
        defer { serverA.shutdown() }
        defer { a.app.realtime.stop() }
        let (b, serverB, portB) = try instance(url)
        defer { serverB.shutdown() }
        let (group, owner, member) = try await group(on: a)
        let topic = "group:\(group)"
        let watcher = try await subscribed(port: portA, token: owner.token, topic).feed
        defer { watcher.close() }
        let onB = try await subscribed(port: portB, token: member.token, topic).feed
        defer { onB.close() }
        _ = try await blocking { try watcher.next(Self.presence(topic, "joined", member.id)) }
        b.app.realtime.stop()  // what chronir-server does on SIGTERM, before the database closes
        let rows = try a.database.readSync { try $0.scalar("SELECT COUNT(*) FROM presence WHERE user_id = ?1", [.text(member.id)]) }
        #expect(rows == .integer(0), "B's rows are gone before stop() returns")
        _ = try await blocking { try watcher.next(Self.presence(topic, "left", member.id)) }
    }
}
