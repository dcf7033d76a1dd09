import Dispatch
import Foundation
import Postgres
import Storage
import Synchronization
import TestSupport
import Testing

/// Waits (bounded) until `condition` holds; the bound only turns a hang into a failure (TestSupport's `eventually`).
private func waitUntil(_ condition: () -> Bool) -> Bool { eventually(timeout: .seconds(10), condition) }

/// A connection to a fresh database with table `name` (`k` text key, `n` int8) holding `rows` (SQL
/// `VALUES` text), and `SELECT column FROM name WHERE k = ?1` already prepared on it (run once with
/// key 'a'), so what a test counts next is only its own round trips.
private func keyedTable(_ name: String, rows: String, reading column: String) throws -> (PostgresConnection, String) {
    let connection = try PostgresConnection(url: try PostgresServer.freshDatabaseURL())
    try connection.execute("CREATE TABLE \(name) (k text PRIMARY KEY, n int8)")
    try connection.run("INSERT INTO \(name) VALUES \(rows)", [])
    let read = "SELECT \(column) FROM \(name) WHERE k = ?1"
    _ = try connection.query(read, [.text("a")])
    return (connection, read)
}

@Suite(
    "PostgreSQL client over libpq (a real server on loopback)",
    .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries: apt-get install postgresql"))
struct PostgresConnectionTests {
    @Test("parameters and columns round-trip by type: int8, float8, text, bytea, bool, NULL")
    func roundTrip() throws {
        let connection = try PostgresConnection(url: try PostgresServer.freshDatabaseURL())
        try connection.execute("CREATE TABLE t (i int8, r float8, s text, b bytea, f bool, n text)")
        let bytes: [UInt8] = [0, 1, 0x7f, 0x80, 0xff, 0x5c, 0x78]
        let inserted = try connection.run(
            "INSERT INTO t VALUES ($1, $2, $3, $4, $5::bool, $6)",
            [.integer(Int64.min), .real(-0.125), .text("h\u{e9}llo 'x' \\ ☃"), .blob(bytes), .text("true"), .null])
        #expect(inserted == 1)
        let rows = try connection.query("SELECT i, r, s, b, f, n FROM t")
        #expect(rows.first?.columnNames == ["i", "r", "s", "b", "f", "n"])
        #expect(
            rows.map(\.values) == [[.integer(Int64.min), .real(-0.125), .text("h\u{e9}llo 'x' \\ ☃"), .blob(bytes), .integer(1), .null]])
    }

    @Test("a unique violation carries SQLSTATE 23505 and leaves the connection usable")
    func constraintViolation() throws {
        let connection = try PostgresConnection(url: try PostgresServer.freshDatabaseURL())
        try connection.execute("CREATE TABLE u (k text PRIMARY KEY)")
        try connection.run("INSERT INTO u VALUES ($1)", [.text("a")])
        let error = #expect(throws: PostgresError.self) { try connection.query("INSERT INTO u VALUES ($1)", [.text("a")]) }
        #expect(error?.sqlState == "23505")
        #expect(error?.isConstraintViolation == true)
        #expect(error?.kind == .statement)
        #expect(try connection.query("SELECT count(*) FROM u").map(\.values) == [[.integer(1)]])
    }

    @Test("a rolled-back transaction leaves nothing behind")
    func rollback() throws {
        let connection = try PostgresConnection(url: try PostgresServer.freshDatabaseURL())
        try connection.execute("CREATE TABLE v (x int8)")
        try connection.execute("BEGIN")
        try connection.run("INSERT INTO v VALUES ($1)", [.integer(7)])
        try connection.execute("ROLLBACK")
        #expect(try connection.query("SELECT count(*) FROM v").map(\.values) == [[.integer(0)]])
    }

    @Test(
        """
        pipelining: a write transaction's BEGIN, lock, SAVEPOINTs, RELEASEs and sends travel with the next read or COMMIT \
        (a read-modify-write of two rows: 2 round trips; in two savepoints: one per read, plus COMMIT)
        """
    )
    func pipelinedRoundTrips() throws {
        let connection = try PostgresConnection(url: try PostgresServer.freshDatabaseURL())
        try connection.execute("CREATE TABLE p (k text PRIMARY KEY, n int8)")
        try connection.run("INSERT INTO p VALUES ('a', 1), ('b', 1)", [])
        func readModifyWrite(_ db: any SQLConnection, _ key: String) throws {
            let n = try db.scalar("SELECT n FROM p WHERE k = ?1", [.text(key)])
            guard case .integer(let value) = n else { throw PostgresError(.misuse, message: "no row") }
            try db.send("UPDATE p SET n = ?2 WHERE k = ?1", [.text(key), .integer(value + 1)])
        }
        var before = connection.roundTrips
        try connection.transaction(.immediate) { db in
            try readModifyWrite(db, "a")  // BEGIN + lock + SELECT: 1
        }  // UPDATE + COMMIT: 1
        #expect(connection.roundTrips - before == 2)
        before = connection.roundTrips
        try connection.transaction(.immediate) { db in
            try db.transaction { try readModifyWrite($0, "a") }  // BEGIN + lock + SAVEPOINT + SELECT: 1
            try db.transaction { try readModifyWrite($0, "b") }  // UPDATE + RELEASE + SAVEPOINT + SELECT: 1
        }  // UPDATE + RELEASE + COMMIT: 1
        #expect(connection.roundTrips - before == 3)
        #expect(try connection.query("SELECT n FROM p ORDER BY k").map(\.values) == [[.integer(3)], [.integer(2)]])
        // A transaction that ran no statement costs nothing.
        before = connection.roundTrips
        try connection.transaction(.immediate) { _ in }
        #expect(connection.roundTrips == before)
    }

    @Test(
        """
        prefetch: inside a transaction the read leaves with the next statement whose result is needed (no round \
        trip of its own) and sees what was sent before it; row() alone sends it; outside one it runs at once; \
        dropped with a savepoint that rolls back before it left, row() throws
        """
    )
    func prefetchTravelsWithTheNextStatement() throws {
        let (connection, read) = try keyedTable("f", rows: "('a', 1), ('b', 2)", reading: "n")
        var before = connection.roundTrips
        try connection.transaction(.immediate) { db in
            try db.send("UPDATE f SET n = 10 WHERE k = ?1", [.text("a")])
            let a = try db.prefetch(read, [.text("a")])
            let missing = try db.prefetch(read, [.text("zz")])
            #expect(connection.roundTrips == before, "held back")
            // BEGIN + lock + UPDATE + both reads + this one: one round trip.
            #expect(try db.scalar(read, [.text("b")]) == .integer(2))
            #expect(connection.roundTrips - before == 1)
            #expect(try a.row()?.values == [.integer(10)], "it sees the UPDATE sent before it")
            #expect(try missing.row() == nil)
            #expect(connection.roundTrips - before == 1, "row() of an arrived read costs nothing")
            let alone = try db.prefetch(read, [.text("b")])
            #expect(try alone.row()?.values == [.integer(2)])
            #expect(connection.roundTrips - before == 2, "row() sends a read nothing carried")
        }
        before = connection.roundTrips
        let outside = try connection.prefetch(read, [.text("b")])
        #expect(connection.roundTrips - before == 1)
        #expect(try outside.row()?.values == [.integer(2)])
        struct Refused: Error {}
        try connection.transaction(.immediate) { db in
            var dropped: PrefetchedRow?
            #expect(throws: Refused.self) {
                try db.transaction { inner in
                    dropped = try inner.prefetch(read, [.text("a")])
                    throw Refused()
                }
            }
            #expect(throws: StorageError.closed) { try dropped?.row() }
        }
    }

    @Test(
        """
        a .statement read is its one statement in autocommit: one round trip against a .deferred read's two (BEGIN + \
        statement, COMMIT), no transaction left open; a second statement throws misuse and leaves the connection usable
        """
    )
    func statementRead() throws {
        let (connection, select) = try keyedTable("s", rows: "('a', 1)", reading: "k")
        var before = connection.roundTrips
        let rows = try connection.transaction(.statement) { try $0.query(select, [.text("a")]) }
        #expect(rows.map(\.values) == [[.text("a")]])
        #expect(connection.roundTrips - before == 1)
        #expect(!connection.isInTransaction)
        before = connection.roundTrips
        _ = try connection.transaction(.deferred) { try $0.query(select, [.text("a")]) }
        #expect(connection.roundTrips - before == 2)
        let error = #expect(throws: PostgresError.self) {
            try connection.transaction(.statement) { db in
                _ = try db.query(select, [.text("a")])
                _ = try db.query(select, [.text("b")])
            }
        }
        #expect(error?.kind == .misuse)
        #expect(!connection.isInTransaction)
        #expect(try connection.transaction(.statement) { try $0.scalar("SELECT count(*) FROM s") } == .integer(1))
    }

    @Test(
        """
        sendOnceAtCommit: the same statement given three times runs once, after every sendAtCommit statement; \
        one given only inside a savepoint that rolls back never runs
        """
    )
    func sendOnceAtCommit() throws {
        let connection = try PostgresConnection(url: try PostgresServer.freshDatabaseURL())
        try connection.execute("CREATE TABLE o (i serial PRIMARY KEY, v text)")
        let once = "INSERT INTO o (v) VALUES ('once')"
        struct Refused: Error {}
        try connection.transaction(.immediate) { db in
            try db.sendOnceAtCommit(once, [])
            try db.sendAtCommit("INSERT INTO o (v) VALUES ('a')", [])
            try db.sendOnceAtCommit(once, [])
            try db.transaction { inner in
                try inner.sendOnceAtCommit(once, [])
                try inner.sendAtCommit("INSERT INTO o (v) VALUES ('b')", [])
            }
            #expect(throws: Refused.self) {
                try db.transaction { inner in
                    try inner.sendOnceAtCommit("INSERT INTO o (v) VALUES ('undone')", [])
                    throw Refused()
                }
            }
        }
        #expect(try connection.query("SELECT v FROM o ORDER BY i").map(\.values) == [[.text("a")], [.text("b")], [.text("once")]])
    }

    @Test(
        """
        pipelining: a savepoint that throws undoes only its own statements, whether its SAVEPOINT had left or not; \
        a held-back statement that fails fails the whole transaction, even after its savepoint returned
        """
    )
    func pipelinedFailures() throws {
        let connection = try PostgresConnection(url: try PostgresServer.freshDatabaseURL())
        try connection.execute("CREATE TABLE f (k text PRIMARY KEY)")
        struct Refused: Error {}
        try connection.transaction(.immediate) { db in
            try db.send("INSERT INTO f VALUES ('kept1')", [])
            // Throws before anything left: its SAVEPOINT and INSERT are dropped unsent.
            #expect(throws: Refused.self) {
                try db.transaction { inner in
                    try inner.send("INSERT INTO f VALUES ('undone1')", [])
                    throw Refused()
                }
            }
            // Throws after a read sent its SAVEPOINT and INSERT: ROLLBACK TO undoes them.
            #expect(throws: Refused.self) {
                try db.transaction { inner in
                    try inner.send("INSERT INTO f VALUES ('undone2')", [])
                    _ = try inner.scalar("SELECT count(*) FROM f")
                    try inner.send("INSERT INTO f VALUES ('undone3')", [])
                    throw Refused()
                }
            }
            // A statement's own error inside a savepoint is that savepoint's: the transaction goes on.
            #expect(throws: PostgresError.self) {
                try db.transaction { inner in try inner.run("INSERT INTO f VALUES ('kept1')", []) }
            }
            try db.transaction { inner in try inner.send("INSERT INTO f VALUES ('kept2')", []) }
        }
        #expect(try connection.query("SELECT k FROM f ORDER BY k").map(\.values) == [[.text("kept1")], [.text("kept2")]])

        // The duplicate is sent only with the next savepoint's read: the whole transaction fails.
        let error = #expect(throws: PostgresError.self) {
            try connection.transaction(.immediate) { db in
                try db.transaction { inner in try inner.send("INSERT INTO f VALUES ('new')", []) }
                try db.transaction { inner in try inner.send("INSERT INTO f VALUES ('kept1')", []) }
                try db.transaction { inner in _ = try inner.scalar("SELECT 1") }
            }
        }
        #expect(error?.sqlState == "23505")
        #expect(try connection.query("SELECT count(*) FROM f").map(\.values) == [[.integer(2)]])
        #expect(try connection.transaction(.immediate) { try $0.scalar("SELECT count(*) FROM f") } == .integer(2))
    }

    @Test("text with NUL is refused before it reaches the server")
    func nulInText() throws {
        let connection = try PostgresConnection(url: try PostgresServer.freshDatabaseURL())
        let error = #expect(throws: PostgresError.self) { try connection.query("SELECT $1::text", [.text("a\u{0}b")]) }
        #expect(error?.kind == .misuse)
    }

    @Test("nobody listening on the port: a connection error that says the database is unavailable")
    func refused() throws {
        let server = try PostgresServer.shared()
        let url = server.url.replacingOccurrences(of: ":\(server.port)/", with: ":1/")
        let error = #expect(throws: PostgresError.self) { try PostgresConnection(url: url) }
        #expect(error?.kind == .connection)
        #expect(error?.isUnavailable == true)
    }

    @Test("LISTEN through a DispatchSource: committed NOTIFYs arrive in order, rolled-back ones never")
    func listenNotify() throws {
        let url = try PostgresServer.freshDatabaseURL()
        let events = Mutex<[PostgresListener.Event]>([])
        let listener = try PostgresListener(url: url, channels: ["chronir_changes"]) { event in
            events.withLock { $0.append(event) }
        }
        listener.start()
        defer { listener.stop() }
        let sender = try PostgresConnection(url: url)
        try sender.execute("BEGIN")
        try sender.run("SELECT pg_notify($1, $2)", [.text("chronir_changes"), .text("rolled back")])
        try sender.execute("ROLLBACK")
        try sender.run("SELECT pg_notify($1, $2)", [.text("other_channel"), .text("not listened to")])
        try sender.execute("BEGIN")
        try sender.run("SELECT pg_notify($1, $2)", [.text("chronir_changes"), .text("seq 1")])
        try sender.execute("COMMIT")
        try sender.run("SELECT pg_notify($1, $2)", [.text("chronir_changes"), .text("seq 2")])
        #expect(waitUntil { events.withLock { $0.count } >= 2 })
        let payloads = events.withLock { $0 }.compactMap { event -> String? in
            if case .notification(let notification) = event { notification.payload } else { nil }
        }
        #expect(payloads == ["seq 1", "seq 2"])
    }
}

@Suite(
    "PostgreSQL listener across a server restart", .serialized,
    .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries: apt-get install postgresql"))
struct PostgresRestartTests {
    @Test("a restart ends the LISTEN connection with .disconnected, and a new connection works")
    func restartDisconnects() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let events = Mutex<[PostgresListener.Event]>([])
        let listener = try PostgresListener(url: server.url, channels: ["c"]) { event in events.withLock { $0.append(event) } }
        listener.start()
        defer { listener.stop() }
        try server.restart()
        #expect(waitUntil { events.withLock { $0.contains { if case .disconnected = $0 { true } else { false } } } })
        let again = try PostgresConnection(url: server.url)
        #expect(try again.query("SELECT 1").map(\.values) == [[.integer(1)]])
    }

    @Test(
        """
        a server that stops answering while its kernel still acknowledges (every process SIGSTOPped) ends a listener with a \
        heartbeat: .disconnected names the heartbeat
        """
    )
    func silentServerEndsListener() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let events = Mutex<[PostgresListener.Event]>([])
        let listener = try PostgresListener(url: server.url, channels: ["c"], heartbeat: .milliseconds(200)) { event in
            events.withLock { $0.append(event) }
        }
        listener.start()
        defer { listener.stop() }
        try server.pause()
        defer { try? server.resume() }
        #expect(waitUntil { events.withLock { !$0.isEmpty } })
        let first = events.withLock { $0.first }
        guard case .disconnected(let message) = first else {
            Issue.record("expected .disconnected, got \(String(describing: first))")
            return
        }
        #expect(message.contains("heartbeat"))
    }

    @Test(
        """
        the commit watcher leaves a silent server (SIGSTOP) by its heartbeat, says so, and listens again once the server answers \
        (.listening resumed); a NOTIFY then arrives
        """
    )
    func commitWatcherLeavesSilentServer() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let database = try PostgresDatabase(
            url: server.url, options: PostgresConfiguration(readerCount: 1, concurrentWriterCount: 0, listenerHeartbeat: .milliseconds(200))
        )
        defer { database.close() }
        let events = Mutex<[CommitWatcherEvent]>([])
        let watcher = try database.watchCommits(channels: CommitChannels(changes: "c")) { event in events.withLock { $0.append(event) } }
        defer { watcher.stop() }
        #expect(waitUntil { events.withLock { $0.contains(.listening(resumed: false)) } })
        try server.pause()
        let left = waitUntil {
            events.withLock { $0.contains { if case .notListening(let reason, _) = $0 { reason.contains("heartbeat") } else { false } } }
        }
        try server.resume()
        #expect(left)
        #expect(waitUntil { events.withLock { $0.contains(.listening(resumed: true)) } })
        events.withLock { $0.removeAll() }
        let sender = try PostgresConnection(url: server.url)
        try sender.run("SELECT pg_notify('c', 'after')", [])
        #expect(waitUntil { events.withLock { $0.contains(.commitAnnounced) } })
    }

    @Test("a restart between transactions is invisible: the next transaction finds the connection closed at BEGIN, reconnects and runs")
    func restartBetweenTransactions() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let connection = try PostgresConnection(url: server.url)
        #expect(try connection.transaction(.immediate) { try $0.scalar("SELECT 1") } == .integer(1))
        try server.restart()
        #expect(try connection.transaction(.deferred) { try $0.scalar("SELECT 2") } == .integer(2))
        try server.shutDown(.immediate)
        try server.start()
        #expect(try connection.transaction(.immediate) { try $0.scalar("SELECT 3") } == .integer(3))
        // A `.statement` read has no BEGIN to find the connection closed: its statement does, and runs again.
        try server.restart()
        #expect(try connection.transaction(.statement) { try $0.scalar("SELECT 4") } == .integer(4))
    }

    @Test(
        """
        reconnect back-off: after a failed reconnect the next is due in 50 ms, doubling to 2 s, and transactions fail at once meanwhile; \
        a success resets it
        """
    )
    func reconnectBackoff() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let origin = ContinuousClock.now
        let elapsed = Mutex<Duration>(.zero)
        let connection = try PostgresConnection(
            url: server.url, backoff: ReconnectBackoff(now: { origin + elapsed.withLock { $0 } }))
        func advance(_ duration: Duration) { elapsed.withLock { $0 += duration } }
        /// The transaction's error (nil when it ran) and whether it dialled the server.
        func attempt() -> (error: PostgresError?, dialled: Bool) {
            do {
                _ = try connection.transaction(.deferred) { try $0.scalar("SELECT 1") }
                return (nil, true)
            } catch {
                let error = error as? PostgresError
                return (error, !(error?.message.contains("reconnecting after a back-off") ?? true))
            }
        }

        try server.shutDown(.fast)
        let first = attempt()  // finds the connection closed, dials, fails: 50 ms back-off
        #expect(first.error?.kind == .connection && first.error?.isStorageUnavailable == true && first.dialled)
        let blocked = attempt()
        #expect(blocked.error?.isStorageUnavailable == true && !blocked.dialled)
        var delay = ReconnectBackoff.delays.first
        for _ in 0..<8 {  // 50, 100, 200, … ms, then 2 s each time
            advance(delay - .milliseconds(1))
            #expect(!attempt().dialled)
            advance(.milliseconds(1))
            let due = attempt()
            #expect(due.dialled && due.error?.kind == .connection)
            delay = min(delay * 2, ReconnectBackoff.delays.longest)
        }
        #expect(delay == ReconnectBackoff.delays.longest)

        try server.start()
        #expect(!attempt().dialled)  // up, but the back-off has not passed
        advance(delay)
        #expect(attempt().error == nil)
        // Reset: the next outage starts at the first delay again.
        try server.shutDown(.immediate)
        #expect(attempt().dialled)
        advance(ReconnectBackoff.delays.first)
        #expect(attempt().dialled)
    }
}

@Suite("Reconnect back-off shared by a database's connections")
struct ReconnectBackoffTests {
    @Test(
        """
        one connection's failed reconnect holds the other back without dialling; once one reconnects, the other, broken \
        too, reconnects on its next use
        """,
        .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries: apt-get install postgresql")
    )
    func shared() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let origin = ContinuousClock.now
        let elapsed = Mutex<Duration>(.zero)
        let backoff = ReconnectBackoff(now: { origin + elapsed.withLock { $0 } })
        let first = try PostgresConnection(url: server.url, backoff: backoff)
        let second = try PostgresConnection(url: server.url, backoff: backoff)
        func read(_ connection: PostgresConnection) -> PostgresError? {
            do {
                _ = try connection.transaction(.deferred) { try $0.scalar("SELECT 1") }
                return nil
            } catch { return error as? PostgresError }
        }

        try server.shutDown(.fast)
        #expect(read(first)?.message.contains("reconnecting after a back-off") == false)  // dialled, failed
        let held = read(second)
        #expect(held?.isStorageUnavailable == true && held?.message.contains("reconnecting after a back-off") == true)
        for _ in 0..<4 {  // the delay grows to 800 ms
            elapsed.withLock { $0 += .seconds(1) }
            #expect(read(first)?.kind == .connection)
        }
        try server.start()
        elapsed.withLock { $0 += .seconds(1) }
        #expect(read(first) == nil)
        // `second` lost its server too and never dialled since: nothing holds it back now.
        #expect(read(second) == nil)
    }

    @Test("a dial that failed after another succeeded, but began before it, holds nobody back")
    func staleFailure() throws {
        let backoff = ReconnectBackoff()
        let stale = try backoff.permit()
        backoff.succeeded()
        backoff.failed(stale, message: "connection refused")
        #expect(throws: Never.self) { try backoff.permit() }
        let fresh = try backoff.permit()
        backoff.failed(fresh, message: "connection refused")
        let error = #expect(throws: PostgresError.self) { try backoff.permit() }
        #expect(error?.kind == .connection && error?.message.contains("connection refused") == true)
    }
}

@Suite(
    "PostgreSQL connection broken inside a transaction",
    .enabled(if: PostgresServer.isAvailable, "no PostgreSQL server binaries: apt-get install postgresql"))
struct PostgresBrokenTransactionTests {
    @Test(
        """
        its backend terminated mid-transaction: the statement fails as unavailable (57P01, connection), nothing commits, the next \
        transaction reconnects
        """
    )
    func terminatedMidTransaction() throws {
        let url = try PostgresServer.freshDatabaseURL()
        let connection = try PostgresConnection(url: url)
        let admin = try PostgresConnection(url: url)
        try connection.execute("CREATE TABLE kept (x int8)")
        let error = #expect(throws: PostgresError.self) {
            try connection.transaction(.immediate) { db in
                try db.run("INSERT INTO kept VALUES (1)")
                let pid = try db.scalar("SELECT pg_backend_pid()")
                // With a timeout, pg_terminate_backend waits until the backend has exited.
                #expect(try admin.scalar("SELECT pg_terminate_backend(CAST($1 AS integer), 60000)", [pid]) == .integer(1))
                try db.run("INSERT INTO kept VALUES (2)")
            }
        }
        #expect(error?.kind == .connection)
        #expect(error?.isStorageUnavailable == true)
        #expect(!connection.isHealthy)
        #expect(try connection.transaction(.deferred) { try $0.scalar("SELECT count(*) FROM kept") } == .integer(0))
    }
}
