import Domain
import Foundation
import Logging
import SQLite
import Storage
import Store
import Synchronization
import TestSupport
import Testing
import Wire

@testable import App

/// A full, read-only or failing disk: writes answer 503 SERVICE_UNAVAILABLE with `Retry-After` and
/// one `request failed` error log line, reads keep working, and the writer recovers by itself when
/// space returns. A full disk is simulated without root with SQLite's `PRAGMA max_page_count` on the
/// writer connection, which makes SQLite report SQLITE_FULL exactly as a full filesystem does.
@Suite(
    "Storage failures — disk full, read-only, I/O errors",
    .enabled(if: TestBackend.current == .sqlite, "SQLite file limits; PostgreSQL outages: PostgresOutageTests"))
struct StorageFailureTests {
    @Test("SQLITE_FULL, SQLITE_READONLY and SQLITE_IOERR (with extended codes) map to 503 CA027 with Retry-After")
    func mapping() {
        // https://sqlite.org/rescode.html (the test target does not import the C module).
        let full: Int32 = 13
        let readOnly: Int32 = 8
        let ioError: Int32 = 10
        let busy: Int32 = 5
        let corrupt: Int32 = 11
        let codes: [Int32] = [
            full, readOnly, readOnly | (3 << 8) /* READONLY_ROLLBACK */, ioError, ioError | (3 << 8) /* IOERR_WRITE */,
            ioError | (4 << 8) /* IOERR_FSYNC */, busy,
        ]
        for code in codes {
            let error = ErrorMapping.apiError(for: SQLiteError(code: code, message: "disk I/O error"))
            #expect(error.code == .serviceUnavailable, "code \(code)")
            #expect(error.code.status.code == 503)
            #expect(error.retryAfterSeconds != nil)
            let response = ErrorMapping.response(for: error, requestID: "r")
            #expect(response.headers[first: "Retry-After"] != nil)
            #expect(!String(decoding: response.body, as: UTF8.self).contains("disk I/O error"))  // nothing internal leaks
        }
        // Other SQLite failures stay internal errors.
        #expect(ErrorMapping.apiError(for: SQLiteError(code: corrupt, message: "x")).code == .internalError)
    }

    @Test("a full database: writes get 503 and a log line, reads work, the writer recovers when space returns")
    func fullDatabase() async throws {
        let log = CapturedLog()
        let h = try AppHarness(defaultTier: .premium, logger: Logger(label: "test") { _ in log })
        defer { withExtendedLifetime(h) {} }
        do {
            let ana = try await h.register("ana@example.com")
            let groupID = try await h.createGroup(token: ana.token)

            try h.database.withWriter { db in try db.execute("PRAGMA max_page_count = 1") }  // = current size
            // Free pages inside the file may absorb a few writes; the file cannot grow, so one fails soon.
            var refused: Reply?
            for i in 0..<200 {
                let reply = await h.send(
                    .post, "/v1/groups", json: #"{"name":"\#(String(repeating: "x", count: 90))\#(i)"}"#, token: ana.token)
                if reply.status != 201 {
                    refused = reply
                    break
                }
            }
            let full = try #require(refused)
            #expect(full.status == 503)
            #expect(full.errorName == "SERVICE_UNAVAILABLE")
            #expect(full.header("Retry-After") == "5")
            #expect(log.lines.contains { $0.contains("request failed") && $0.contains("database or disk is full") })

            // Reads keep working.
            #expect(await h.send(.get, "/v1/groups/\(groupID)", token: ana.token).status == 200)
            #expect(await h.send(.get, "/v1/me", token: ana.token).status == 200)
            #expect(await h.send(.get, "/v1/groups", token: ana.token).status == 200)

            // Space returns: the same writer connection commits again, and the file is intact.
            try h.database.withWriter { db in try db.execute("PRAGMA max_page_count = 1073741823") }
            #expect(await h.send(.post, "/v1/groups", json: #"{"name":"After"}"#, token: ana.token).status == 201)
            _ = try await h.register("bo@example.com")
            let check = try h.database.readSync { db in try db.queryOne("PRAGMA integrity_check")?[0] }
            #expect(check == .text("ok"))
        }
    }

    @Test("a read-only database: writes get 503, reads work, even when the session touch is due")
    func readOnlyDatabase() async throws {
        let h = try AppHarness(defaultTier: .premium)
        defer { withExtendedLifetime(h) {} }
        do {
            let ana = try await h.register("ana@example.com")
            let groupID = try await h.createGroup(token: ana.token)
            // `query_only` makes the writer connection refuse writes with SQLITE_READONLY, as a
            // filesystem remounted read-only does.
            try h.database.withWriter { db in try db.execute("PRAGMA query_only = ON") }
            let reply = await h.send(.post, "/v1/groups", json: #"{"name":"Nope"}"#, token: ana.token)
            #expect(reply.status == 503)
            #expect(reply.errorName == "SERVICE_UNAVAILABLE")
            #expect(await h.send(.get, "/v1/groups/\(groupID)", token: ana.token).status == 200)
            // Also when authenticating wants to slide the session's expiry (a write) first.
            h.clock.advance(by: SessionStore.touchIntervalMilliseconds + 1)
            let me = await h.send(.get, "/v1/me", token: ana.token)
            #expect(me.status == 200, "\(me.text)")
            try h.database.withWriter { db in try db.execute("PRAGMA query_only = OFF") }
            #expect(await h.send(.post, "/v1/groups", json: #"{"name":"Yes"}"#, token: ana.token).status == 201)
        }
    }
}

/// A log handler that keeps every formatted line (message and metadata) in memory.
final class CapturedLog: LogHandler, Sendable {
    private let stored = Mutex<[String]>([])
    var lines: [String] { stored.withLock { $0 } }

    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    func log(event: LogEvent) {
        let fields = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        stored.withLock { $0.append("\(event.level) \(event.message) \(fields.joined(separator: " "))") }
    }
}
