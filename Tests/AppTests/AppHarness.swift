import Domain
import Foundation
import Glibc
import Logging
import SQLite
import Storage
import Synchronization
import TestSupport
import Transport
import Wire

@testable import App

/// An Application on a temporary database and a manual clock, driven without sockets.
extension Logger {
    /// A logger that keeps the test output to what matters: critical lines only.
    static let quiet: Logger = {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }()
}

final class AppHarness: Sendable {
    let directory: TemporaryDirectory
    let clock: ManualClock
    let app: Application
    let database: any SQLDatabase
    /// The database as SQLite's `SQLiteDatabase`, for checks only SQLite can answer (file, query plans);
    /// such tests are `.enabled(if: TestBackend.current == .sqlite)`.
    var sqlite: SQLiteDatabase { database as! SQLiteDatabase }

    init(
        defaultTier: Tier = .free, publicDirectory: String? = nil, logger: Logger? = nil, accessLog: AccessLog? = nil,
        trustedProxies: Set<String> = [], writeBudget: WriteBudget = .standard, hashing: WorkerPool? = nil,
        databaseURL: String? = nil, vapidPublicKey: String? = nil, configure: (inout AppConfiguration) -> Void = { _ in },
        oidc: ((ManualClock) -> OIDCService?)? = nil, apps: AppsConfigurationSource = AppsConfigurationSource(),
        restoring snapshot: HarnessSnapshot? = nil
    ) throws {
        directory = TemporaryDirectory()
        clock = snapshot.map { ManualClock(milliseconds: $0.clockMilliseconds) } ?? ManualClock()
        let logger = logger ?? .quiet
        var config = AppConfiguration(
            dataDirectory: directory.path, publicDirectory: publicDirectory, defaultTier: defaultTier,
            workerThreads: 2, passwordHashing: .fast)
        config.trustedProxies = trustedProxies
        config.writeBudget = writeBudget
        // Tests register many accounts from one address on a clock that does not move: suites that
        // test the registration limit set their own (`configure`).
        config.registrationLimits = RegistrationLimits(perNetworkPerHour: 1_000_000, totalPerHour: 1_000_000)
        // PostgreSQL: `databaseURL` (a dedicated server a test stops and starts), else a fresh
        // database in the process's shared cluster.
        if let snapshot {
            // A copy of the snapshot's database where this harness opens its own.
            config.databaseURL = try snapshot.database.restore(sqlitePath: config.databasePath)
        } else if TestBackend.current == .postgres {
            config.databaseURL = try databaseURL ?? PostgresServer.freshDatabaseURL()
        }
        configure(&config)
        // The database observer is the metrics' own, as `chronir-server` wires it.
        let metrics = ChronirMetrics()
        database = try Bootstrap.openDatabase(
            config: config, logger: logger, nowMilliseconds: clock.nowMilliseconds(), observer: metrics.database)
        let services = Services(
            config: config, database: database, clock: clock, workers: WorkerPool(width: 2), hashing: hashing, logger: logger,
            secret: Array(repeating: 0x5A, count: 32), metrics: metrics, vapidPublicKey: vapidPublicKey, oidc: oidc?(clock),
            apps: apps)
        app = Application(services: services, accessLog: accessLog)
    }

    /// The response the application gives to one request.
    func send(
        _ method: HTTPMethod, _ target: String, json: String? = nil, token: String? = nil,
        headers extra: [(String, String)] = [], remoteAddress: String = "127.0.0.1"
    ) async -> Reply {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "test")
        if json != nil { headers.add(name: "Content-Type", value: "application/json") }
        if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in extra { headers.add(name: name, value: value) }
        let request = HTTPRequest(
            head: HTTPRequestHead(method: method, target: target, headers: headers),
            body: Array((json ?? "").utf8))
        let response = await withCheckedContinuation { (continuation: CheckedContinuation<HTTPResponse, Never>) in
            app.respond(
                to: request, context: RequestContext(remoteAddress: remoteAddress, connectionID: 1),
                sink: ResponseSink { continuation.resume(returning: $0) })
        }
        return Reply(response: response)
    }

    /// Registers an account and returns its token and id. `verified` marks its address verified
    /// directly in the table (no change-log row), as if its link had been used — what every test
    /// that is not about verification assumes of an account that accepts email invitations.
    func register(_ email: String, password: String = "correct horse", name: String = "Ana", verified: Bool = true) async throws
        -> (token: String, id: String)
    {
        var reply = await send(
            .post, "/v1/auth/register",
            json: #"{"email":"\#(email)","password":"\#(password)","display_name":"\#(name)"}"#)
        // With mail configured registration answers 202 without a session: sign in, as the web client does.
        if reply.status == 202 { reply = await login(email, password: password) }
        guard reply.status == 201 || reply.status == 200, let token = reply.json["token"] as? String,
            let user = reply.json["user"] as? [String: Any], let id = user["id"] as? String
        else { throw HarnessError.unexpected(reply.text) }
        if verified {
            let now = clock.nowMilliseconds()
            try await database.write { db in
                try db.run("UPDATE users SET email_verified_ms = ?2 WHERE id = ?1", [.text(id), .integer(now)])
            }
        }
        return (token, id)
    }

    /// `POST /v1/auth/login` with this email and password, from `remoteAddress`.
    func login(_ email: String, password: String = "correct horse", from remoteAddress: String = "127.0.0.1") async
        -> Reply
    {
        await send(
            .post, "/v1/auth/login", json: #"{"email":"\#(email)","password":"\#(password)"}"#,
            remoteAddress: remoteAddress)
    }

    /// A second handle on the same database, as another process (SQLite) or instance (PostgreSQL)
    /// would open it.
    func openAnotherHandle() throws -> any SQLDatabase { try TestSupport.openAnotherHandle(database) }

    enum HarnessError: Error { case unexpected(String) }

    /// Drops this harness's database when it is one of the shared PostgreSQL cluster's (its
    /// connections are ended): for tests that make harnesses by the hundred one after another, so the
    /// cluster does not keep every finished one. The harness must not be used afterwards. Nothing on
    /// SQLite (the file goes with the harness's directory).
    func dropDatabase() throws {
        guard TestBackend.current == .postgres, let url = app.services.config.databaseURL else { return }
        try PostgresServer.dropDatabase(url: url)
    }

    /// This harness's database and clock, for others to start from (`restoring:`); this harness must
    /// not be used afterwards (on PostgreSQL its database became the snapshot's template).
    func snapshot() throws -> HarnessSnapshot {
        HarnessSnapshot(database: try DatabaseSnapshot.take(of: database), clockMilliseconds: clock.nowMilliseconds())
    }
}

/// A harness's state to start others from: its database's contents and its clock's time. A harness
/// restored from it has a fresh Application — nothing held in memory (limiters, caches, metrics) is
/// carried over.
struct HarnessSnapshot: Sendable {
    let database: DatabaseSnapshot
    let clockMilliseconds: Int64
}

/// A response with JSON conveniences.
struct Reply: Sendable {
    /// The response, with a file body (`bodyFile`, a download) read into `body`.
    let response: HTTPResponse

    init(response: HTTPResponse) {
        var response = response
        if let file = response.bodyFile {
            var bytes = [UInt8](repeating: 0, count: Int(file.count))
            let n = bytes.withUnsafeMutableBytes { pread(file.descriptor, $0.baseAddress, $0.count, off_t(file.offset)) }
            bytes.removeSubrange(max(n, 0)...)
            response.body = bytes
            response.bodyFile = nil
        }
        self.response = response
    }

    var status: Int { response.status.code }
    var text: String { String(decoding: response.body, as: UTF8.self) }
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }
    /// `error.code` of an error envelope (`CA027`).
    var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
    /// `error.name` of an error envelope.
    var errorName: String? { (json["error"] as? [String: Any])?["name"] as? String }
    var errorField: String? { (json["error"] as? [String: Any])?["field"] as? String }
    func header(_ name: String) -> String? { response.headers[first: name] }
}
