import Dispatch
import Foundation
import Postgres
import Storage
import Synchronization
import TestSupport
import Testing

/// Waits (bounded) until `condition` holds; the bound only turns a hang into a failure.
private func waitUntil(_ condition: () -> Bool) -> Bool {
    for _ in 0..<2_000 {
        if condition() { return true }
        usleep(5_000)
    }
    return condition()
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
        #expect(rows.map(\.values) == [[.integer(Int64.min), .real(-0.125), .text("h\u{e9}llo 'x' \\ ☃"), .blob(bytes), .integer(1), .null]])
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
}
