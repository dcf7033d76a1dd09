import Domain
import Foundation
import Logging
import Postgres
import Realtime
import Storage
import Synchronization
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// Faults: PostgreSQL stopped and started again, or the realtime `LISTEN` connection
/// dropped, under a running App. Each case runs on a dedicated throwaway server it stops (never the
/// process's shared cluster). Every wait is a bounded `eventually`; the assertions are about answers
/// and messages, never about how long anything took.
@Suite(
    "PostgreSQL outages — stop, start, a dropped LISTEN connection", .serialized,
    .enabled(if: TestBackend.current == .postgres, "CHRONIR_TEST_BACKEND=postgres: each case stops its own PostgreSQL server"))
struct PostgresOutageTests {
    /// The bound on every recovery. Reconnects back off to at most `ReconnectBackoff.delays`
    /// (storage) and `NotifyWatcher.reconnectDelays` (LISTEN); the rest is room for a loaded machine.
    static let recovery: Duration = .seconds(60)

    @Test(
        """
        stopped: /readyz and writes 503 CA027 with Retry-After, /healthz 200, never a 500; started: every pooled connection recovers and \
        every acknowledged write is there
        """,
        arguments: [PostgresServer.ShutdownMode.fast, .immediate])
    func stopAndStart(_ mode: PostgresServer.ShutdownMode) async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let h = try AppHarness(defaultTier: .premium, writeBudget: .unlimited, databaseURL: server.url)
        defer { withExtendedLifetime(h) {} }
        let ana = try await h.register("ana@example.com")
        #expect(await h.send(.get, "/readyz").status == 200)

        // Writes race the shutdown: each is acknowledged (201: it must survive) or refused, which
        // ends the loop — and a refusal must be the 503, never a 500.
        let acknowledged = Mutex<[String]>([])
        let writer = Task { () -> Reply in
            var i = 0
            while true {
                let reply = await h.send(.post, "/v1/groups", json: #"{"name":"Before \#(i)"}"#, token: ana.token)
                guard reply.status == 201, let id = (reply.json["group"] as? [String: Any])?["id"] as? String else { return reply }
                acknowledged.withLock { $0.append(id) }
                i += 1
            }
        }
        #expect(await eventually(timeout: Self.recovery) { acknowledged.withLock { $0.count } >= 5 })
        try await blocking { try server.shutDown(mode) }
        Self.expectUnavailable(await writer.value)

        // Down: what needs the database is refused with 503 + Retry-After; the process serves the rest.
        Self.expectUnavailable(await h.send(.get, "/readyz"))
        Self.expectUnavailable(await h.send(.patch, "/v1/me", json: #"{"display_name":"Ana B"}"#, token: ana.token))
        Self.expectUnavailable(await h.send(.post, "/v1/groups", json: #"{"name":"During"}"#, token: ana.token))
        for reply in await Self.burst(h, 8, "/v1/groups", token: ana.token) { Self.expectUnavailable(reply) }
        #expect(await h.send(.get, "/healthz").status == 200)
        #expect(await h.send(.get, "/v1/nothing-here").status == 404)

        try await blocking { try server.start() }
        // Back: readiness, a write and a burst of reads over HTTP…
        let recovered = await eventuallyAsync(timeout: Self.recovery) {
            guard await h.send(.get, "/readyz").status == 200,
                await h.send(.patch, "/v1/me", json: #"{"display_name":"Ana C"}"#, token: ana.token).status == 200
            else { return false }
            return await Self.burst(h, 8, "/v1/groups", token: ana.token).allSatisfy { $0.status == 200 }
        }
        #expect(recovered)
        // …and every pooled connection, the writer and each reader, completes a transaction again.
        let postgres = try #require(h.database as? PostgresDatabase)
        #expect(await eventuallyAsync(timeout: Self.recovery) { await Self.everyConnectionAnswers(postgres) })

        // Nothing acknowledged was lost.
        let stored = try await h.database.read { db in try db.query("SELECT id FROM groups").compactMap { $0.string("id") } }
        let missing = Set(acknowledged.withLock { $0 }).subtracting(stored)
        #expect(missing.isEmpty, "acknowledged groups missing after the restart: \(missing.sorted())")
        // The pool is whole: a burst and writes all succeed with no refusal.
        for reply in await Self.burst(h, 16, "/v1/groups", token: ana.token) { #expect(reply.status == 200, "\(reply.text)") }
        for i in 0..<3 {
            let reply = await h.send(.post, "/v1/groups", json: #"{"name":"After \#(i)"}"#, token: ana.token)
            #expect(reply.status == 201, "\(reply.text)")
        }
    }

    @Test(
        """
        the LISTEN connection dropped while another instance commits: on reconnect the subscriber catches up from the last seq it saw, \
        every change once and in order
        """
    )
    func listenerDropped() async throws {
        let scene = try await Scene.make()
        defer { scene.close() }
        let (server, a, b, ana, groupID, subscriber) = (scene.server, scene.a, scene.b, scene.ana, scene.groupID, scene.subscriber)

        var expected: [String] = []
        for (instance, name) in [(a, "A1"), (b, "B1")] {
            try await instance.rename(groupID, to: name, token: ana.token)
            expected.append(name)
        }
        try await subscriber.read(through: "B1")

        // Instance A loses every connection, its LISTEN included, and cannot open new ones
        // (`ALLOW_CONNECTIONS false`; B keeps the connections it has) while B commits twice.
        try server.psql("ALTER DATABASE postgres ALLOW_CONNECTIONS false", database: "template1")
        try server.psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'instance_a'", database: "template1")
        #expect(await eventually(timeout: Self.recovery) { a.backendCount(server) == 0 })
        for name in ["B2", "B3"] {
            try await b.rename(groupID, to: name, token: ana.token)
            expected.append(name)
        }
        try server.psql("ALTER DATABASE postgres ALLOW_CONNECTIONS true", database: "template1")

        // No commit follows until the subscriber has B2 and B3: only A's reconnect can deliver them.
        try await subscriber.read(through: "B3")
        #expect(await eventually(timeout: Self.recovery) { a.listening(server) })
        #expect(await eventuallyAsync(timeout: Self.recovery) { await Self.everyConnectionAnswers(a.postgres) })
        for (instance, name) in [(b, "B4"), (a, "A2")] {
            try await instance.rename(groupID, to: name, token: ana.token)
            expected.append(name)
        }
        try await subscriber.read(through: "A2")
        subscriber.expectExactly(expected)
    }

    @Test(
        """
        a change announced while the instance's readers are down (its LISTEN up) is read once they are back, with no later commit to \
        prompt it
        """
    )
    func readersDownWhileListening() async throws {
        let log = CapturedLog()
        let scene = try await Scene.make(log: log)
        defer { scene.close() }
        let (server, a, b, ana, groupID, subscriber) = (scene.server, scene.a, scene.b, scene.ana, scene.groupID, scene.subscriber)
        try await a.rename(groupID, to: "A1", token: ana.token)
        try await subscriber.read(through: "A1")

        // A keeps only its LISTEN connection and cannot open others while B commits: the NOTIFY
        // wakes A's feed, whose read of the change log fails.
        try server.psql("ALTER DATABASE postgres ALLOW_CONNECTIONS false", database: "template1")
        try server.psql(
            """
            SELECT pg_terminate_backend(pid, 60000) FROM pg_stat_activity WHERE application_name = 'instance_a' AND query NOT LIKE \
            'LISTEN%'
            """,
            database: "template1")
        #expect(await eventually(timeout: Self.recovery) { a.backendCount(server) == 1 })
        #expect(a.listening(server))
        try await b.rename(groupID, to: "B1", token: ana.token)
        #expect(await eventually(timeout: Self.recovery) { log.lines.contains { $0.contains("reading the change log failed") } })
        try server.psql("ALTER DATABASE postgres ALLOW_CONNECTIONS true", database: "template1")

        try await subscriber.read(through: "B1")
        subscriber.expectExactly(["A1", "B1"])
    }

    @Test(
        "a restart: a subscriber connected before it gets every change committed after it, by either instance, once and in order",
        arguments: [PostgresServer.ShutdownMode.fast, .immediate])
    func restartWithSubscriber(_ mode: PostgresServer.ShutdownMode) async throws {
        let scene = try await Scene.make()
        defer { scene.close() }
        let (server, a, b, ana, groupID, subscriber) = (scene.server, scene.a, scene.b, scene.ana, scene.groupID, scene.subscriber)
        try await a.rename(groupID, to: "A1", token: ana.token)
        try await subscriber.read(through: "A1")

        try await blocking { try server.shutDown(mode) }
        Self.expectUnavailable(await a.h.send(.get, "/readyz"))
        try await blocking { try server.start() }

        // B commits first, perhaps before A's LISTEN is back; then A; then B again. B sent nothing
        // during the outage, so no reconnect of its failed: its first request after the start is
        // served at once, each of its stale connections reconnecting at BEGIN.
        try await b.rename(groupID, to: "B1", token: ana.token)
        #expect(await eventuallyAsync(timeout: Self.recovery) { await Self.everyConnectionAnswers(a.postgres) })
        try await a.rename(groupID, to: "A2", token: ana.token)
        try await b.rename(groupID, to: "B2", token: ana.token)
        try await subscriber.read(through: "B2")
        subscriber.expectExactly(["A1", "B1", "A2", "B2"])
        #expect(await eventually(timeout: Self.recovery) { a.listening(server) })
    }

    @Test(
        """
        stopped: a bearer upgrade answers 503 CA027 with Retry-After and an in-band auth closes 1013 — never 4001 (a malformed token \
        still does); started: the same token authenticates both ways
        """
    )
    func realtimeAuthDuringOutage() async throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let h = try AppHarness(defaultTier: .premium, writeBudget: .unlimited, databaseURL: server.url)
        defer { withExtendedLifetime(h) {} }
        let ana = try await h.register("ana@example.com")
        let (http, port) = try Self.serve(h)
        defer { http.shutdown() }
        // The feed starts with its first socket (reading the log's position): start it while up.
        #expect(try await blocking { try RealtimeTests.authenticate(port: port, token: ana.token, inBand: true) } == .authenticated)

        try await blocking { try server.shutDown(.fast) }
        let down = try await blocking {
            (
                bearer: try RealtimeTests.authenticate(port: port, token: ana.token, inBand: false),
                inBand: try RealtimeTests.authenticate(port: port, token: ana.token, inBand: true),
                malformed: try RealtimeTests.authenticate(port: port, token: "nope", inBand: true)
            )
        }
        #expect(down.bearer == .refused(status: 503, code: "CA027", retryAfter: "5"))
        #expect(down.inBand == .closed(CloseCode.tryAgainLater.rawValue))
        #expect(down.malformed == .closed(CloseCode.authenticationFailed.rawValue))  // decided without the database

        try await blocking { try server.start() }
        let recovered = await eventuallyAsync(timeout: Self.recovery) {
            (try? await blocking {
                try RealtimeTests.authenticate(port: port, token: ana.token, inBand: false) == .authenticated
                    && RealtimeTests.authenticate(port: port, token: ana.token, inBand: true) == .authenticated
            }) ?? false
        }
        #expect(recovered, "the token kept through the outage authenticates again")
        let unknown = String(repeating: "A", count: 43)
        #expect(try await blocking { try RealtimeTests.authenticate(port: port, token: unknown, inBand: false) } == .closed(4001))
        #expect(try await blocking { try RealtimeTests.authenticate(port: port, token: unknown, inBand: true) } == .closed(4001))
    }

    // MARK: - Helpers

    /// Two instances A and B on a dedicated server, Ana's group, A's HTTP port with Ana's socket
    /// subscribed to the group, and A's LISTEN connection up. `close()` ends them in reverse order.
    final class Scene: Sendable {
        let server: PostgresServer
        let a: Instance
        let b: Instance
        let ana: (token: String, id: String)
        let groupID: String
        let http: HTTPServer
        let subscriber: Subscriber

        private init(
            server: PostgresServer, a: Instance, b: Instance, ana: (token: String, id: String), groupID: String,
            http: HTTPServer, subscriber: Subscriber
        ) {
            (self.server, self.a, self.b, self.ana, self.groupID, self.http, self.subscriber) =
                (server, a, b, ana, groupID, http, subscriber)
        }

        /// `log` captures A's log lines.
        static func make(log: CapturedLog? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Scene {
            let server = try PostgresServer()
            let a = try Instance(server: server, name: "instance_a", log: log)
            let b = try Instance(server: server, name: "instance_b")
            let ana = try await a.h.register("ana@example.com")
            let groupID = try await a.h.createGroup(token: ana.token)
            let (http, port) = try PostgresOutageTests.serve(a.h)
            let subscriber = try await Subscriber.open(port: port, token: ana.token, groupID: groupID)
            #expect(
                await eventually(timeout: PostgresOutageTests.recovery) { a.listening(server) }, sourceLocation: sourceLocation)
            return Scene(server: server, a: a, b: b, ana: ana, groupID: groupID, http: http, subscriber: subscriber)
        }

        func close() {
            subscriber.close()
            http.shutdown()
            server.stop()
        }
    }

    /// An App instance on the shared test server, its connections tagged `application_name` so a
    /// test can find (and terminate) exactly its backends.
    struct Instance: Sendable {
        let h: AppHarness
        let name: String
        var postgres: PostgresDatabase { h.database as! PostgresDatabase }

        init(server: PostgresServer, name: String, log: CapturedLog? = nil) throws {
            try self.init(url: server.url, name: name, log: log)
        }

        /// An instance on the database at `url` (a multi-host URL too).
        init(url: String, name: String, log: CapturedLog? = nil) throws {
            self.name = name
            h = try AppHarness(
                defaultTier: .premium, logger: log.map { log in Logger(label: "test") { _ in log } }, writeBudget: .unlimited,
                databaseURL: url + "&application_name=\(name)")
        }

        /// Renames the group through this instance (one write, acknowledged with 200).
        func rename(_ groupID: String, to name: String, token: String) async throws {
            try await h.expect(200, .patch, "/v1/groups/\(groupID)", json: #"{"name":"\#(name)"}"#, token: token)
        }

        /// This instance's server backends.
        func backendCount(_ server: PostgresServer) -> Int? { Self.count(server, "application_name = '\(name)'") }

        /// Whether this instance's realtime feed has its LISTEN connection.
        func listening(_ server: PostgresServer) -> Bool {
            Self.count(server, "application_name = '\(name)' AND query LIKE 'LISTEN%'") == 1
        }

        /// How many backends `pg_stat_activity` lists where `condition` holds (asked from
        /// `template1`, which no test closes); nil when psql fails.
        private static func count(_ server: PostgresServer, _ condition: String) -> Int? {
            let output = try? server.psql("SELECT count(*) FROM pg_stat_activity WHERE \(condition)", database: "template1")
            return output.flatMap { Int($0.filter(\.isNumber)) }
        }
    }

    /// A realtime client subscribed to one group: records every `change` of the group's topic.
    final class Subscriber: @unchecked Sendable {
        let feed: RealtimeTests.Feed
        let topic: String
        /// The group's name in each change received, and the change's seq (read on one task at a time).
        private(set) var changes: [(name: String, seq: Int)] = []

        private init(feed: RealtimeTests.Feed, topic: String) {
            self.feed = feed
            self.topic = topic
        }

        /// Connects with `token`, subscribes to the group and waits for its snapshot.
        static func open(port: Int, token: String, groupID: String) async throws -> Subscriber {
            let topic = "group:\(groupID)"
            return Subscriber(feed: try await RealtimeTests.subscribed(port: port, token: token, topic: topic), topic: topic)
        }

        /// Reads changes until one renames the group to `name` (the generous frame timeout only
        /// turns a change that never comes into a failure).
        func read(through name: String) async throws {
            try await blocking { [self] in
                while changes.last?.name != name {
                    let frame = try feed.ws.readFrame(timeout: PostgresOutageTests.recovery)
                    if frame.opcode == .close { throw RealtimeTests.Failure.closed(frame.closeCode) }
                    guard frame.opcode == .text,
                        let object = (try? JSONSerialization.jsonObject(with: Data(frame.payload))) as? [String: Any],
                        object["type"] as? String == "change", object["topic"] as? String == topic
                    else { continue }
                    let rows = object["changes"] as? [[String: Any]] ?? []
                    let group = rows.first { $0["kind"] as? String == "group" }?["doc"] as? [String: Any]
                    changes.append((group?["name"] as? String ?? "?", object["seq"] as? Int ?? -1))
                }
            }
        }

        /// Every change received is one of `names`, each once, in this order, with rising seqs.
        func expectExactly(_ names: [String], sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(changes.map(\.name) == names, sourceLocation: sourceLocation)
            let seqs = changes.map(\.seq)
            #expect(zip(seqs, seqs.dropFirst()).allSatisfy { $0 < $1 }, "seqs \(seqs)", sourceLocation: sourceLocation)
        }

        func close() { feed.close() }
    }

    /// 503 SERVICE_UNAVAILABLE (CA027) with `Retry-After`.
    static func expectUnavailable(_ reply: Reply, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(reply.status == 503, "\(reply.text)", sourceLocation: sourceLocation)
        #expect(reply.errorCode == "CA027", sourceLocation: sourceLocation)
        #expect(reply.header("Retry-After") != nil, sourceLocation: sourceLocation)
    }

    /// `count` concurrent GETs of `target`: together they take several pooled readers at once.
    static func burst(_ h: AppHarness, _ count: Int, _ target: String, token: String) async -> [Reply] {
        await withTaskGroup(of: Reply.self) { group in
            for _ in 0..<count { group.addTask { await h.send(.get, target, token: token) } }
            var replies: [Reply] = []
            for await reply in group { replies.append(reply) }
            return replies
        }
    }

    /// Whether the writer and every reader of `database` complete a transaction now — each through
    /// `transaction`, which re-establishes a broken connection as a request's would. Readers are
    /// checked while idle (no request is in flight here), all of them.
    static func everyConnectionAnswers(_ database: PostgresDatabase) async -> Bool {
        (try? await blocking {
            let probe: (PostgresConnection) -> Bool = { connection in
                (try? connection.transaction(.deferred) { try $0.scalar("SELECT 1") }) == .integer(1)
            }
            let writer = try database.queues.withWriter(probe)
            let readers = database.queues.withIdleReaders { readers in
                readers.count == PostgresConfiguration().readerCount && readers.allSatisfy(probe)
            }
            return writer && readers
        }) ?? false
    }

    /// The App behind the real transport on an ephemeral loopback port.
    static func serve(_ h: AppHarness) throws -> (HTTPServer, Int) {
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.loopCount = 2
        let server = HTTPServer(configuration: configuration, responder: h.app)
        return (server, try server.start())
    }
}

/// How PostgreSQL failures reach the API (pure; runs on every backend).
@Suite("PostgreSQL failures map to 503 CA027 with Retry-After exactly when the database is unavailable")
struct PostgresErrorMappingTests {
    @Test("class 08, 57P01–57P03, class 53, 25006, busy and a lost connection → 503 CA027 + Retry-After; others are not")
    func mapping() {
        // https://www.postgresql.org/docs/15/errcodes-appendix.html
        let unavailable: [PostgresError] = [
            PostgresError(.connection, message: "server closed the connection unexpectedly"),
            PostgresError(.connection, sqlState: "57P01", message: "terminating connection due to administrator command"),
            PostgresError(.statement, sqlState: "57P02", message: "crash shutdown"),
            PostgresError(.statement, sqlState: "57P03", message: "the database system is starting up"),
            PostgresError(.statement, sqlState: "08006", message: "connection failure"),
            PostgresError(.statement, sqlState: "08001", message: "could not connect"),
            PostgresError(.statement, sqlState: "53300", message: "too many connections"),
            PostgresError(.statement, sqlState: "53100", message: "disk full"),
            PostgresError(.statement, sqlState: "25006", message: "read-only transaction (a standby)"),
            PostgresError(.statement, sqlState: "40001", message: "serialization failure"),
            PostgresError(.statement, sqlState: "55P03", message: "lock not available"),
        ]
        for error in unavailable {
            #expect(error.isStorageUnavailable, "\(error)")
            let api = ErrorMapping.apiError(for: error)
            #expect(api.code == .serviceUnavailable, "\(error)")
            let response = ErrorMapping.response(for: api, requestID: "r")
            #expect(response.status.code == 503)
            #expect(response.headers[first: "Retry-After"] != nil)
            #expect(!String(decoding: response.body, as: UTF8.self).contains(error.message))  // nothing internal leaks
        }
        for error in [
            PostgresError(.statement, sqlState: "42P01", message: "undefined table"),
            PostgresError(.misuse, message: "connection is closed"),
        ] {
            #expect(!error.isStorageUnavailable, "\(error)")
            #expect(ErrorMapping.apiError(for: error).code == .internalError, "\(error)")
        }
    }
}
