import Foundation
import Postgres
import SQLite
public import Storage

/// The database engines a storage test runs on. Store and App suites take `TestBackend.available`
/// as arguments, so every case runs on SQLite and on a real PostgreSQL server.
public enum TestBackend: String, Sendable, CaseIterable, CustomStringConvertible {
    case sqlite
    case postgres

    /// SQLite always; PostgreSQL when its server binaries are installed — and always under CI
    /// (`PostgresServer.isAvailable`), where a missing server fails the cases instead of skipping.
    /// Without them it says so once on stderr.
    ///
    /// With PostgreSQL it also starts the process's shared cluster here, while the test plan is
    /// made and before any test runs: started lazily by the first test instead, initdb blocked the
    /// cooperative threads of every test waiting for it (tens of seconds on a busy machine), and
    /// servers under test that answer on a task starved meanwhile.
    public static let available: [TestBackend] = {
        if PostgresServer.isAvailable {
            _ = try? PostgresServer.shared()  // a failure is reported by the tests that use it
            return [.sqlite, .postgres]
        }
        FileHandle.standardError.write(
            Data("note: no PostgreSQL server binaries (apt-get install postgresql): PostgreSQL test cases skipped\n".utf8))
        return [.sqlite]
    }()

    /// The engine the App suites run on in this process: `CHRONIR_TEST_BACKEND=postgres swift test
    /// --filter AppTests` runs them on PostgreSQL (CI does both); default SQLite.
    public static let current: TestBackend = {
        ProcessInfo.processInfo.environment["CHRONIR_TEST_BACKEND"].flatMap(TestBackend.init(rawValue:)) ?? .sqlite
    }()

    /// The dialect the engine speaks (to pick its migrations).
    public var dialect: SQLDialect {
        switch self {
        case .sqlite: .sqlite
        case .postgres: .postgres
        }
    }

    public var description: String { rawValue }

    /// A new empty database on this engine with `migrations` applied: a file in a temporary
    /// directory, or a fresh database in the process's shared PostgreSQL cluster.
    public func open(migrations: [Migration], readers: Int = 2) throws -> TestStorage {
        switch self {
        case .sqlite:
            let directory = TemporaryDirectory()
            let database = try SQLiteDatabase(path: directory.path + "/t.sqlite", options: SQLiteConfiguration(readerCount: readers))
            _ = try MigrationRunner.migrate(database, migrations: migrations, nowMilliseconds: 1)
            return TestStorage(database: database, directory: directory)
        case .postgres:
            let database = try PostgresDatabase(
                url: try PostgresServer.freshDatabaseURL(), options: PostgresConfiguration(readerCount: readers))
            _ = try MigrationRunner.migrate(database, migrations: migrations, nowMilliseconds: 1)
            return TestStorage(database: database, directory: TemporaryDirectory())
        }
    }
}

/// A test's database and the directory it may use for other files. Connections close when the
/// database is released (no explicit close: Swift may release this holder before its last use).
public struct TestStorage: Sendable {
    /// The migrated database.
    public let database: any SQLDatabase
    /// A temporary directory of the test's own (the SQLite file lives here).
    public let directory: TemporaryDirectory

    init(database: any SQLDatabase, directory: TemporaryDirectory) {
        self.database = database
        self.directory = directory
    }
}

/// Another handle on `database`, as another process (SQLite: the same file) or instance
/// (PostgreSQL: the same URL) would open it — its own connections and writer queue.
public func openAnotherHandle(_ database: any SQLDatabase) throws -> any SQLDatabase {
    switch database {
    case let sqlite as SQLiteDatabase: try SQLiteDatabase(path: sqlite.path)
    case let postgres as PostgresDatabase: try PostgresDatabase(url: postgres.url, options: PostgresConfiguration(readerCount: 1))
    default: preconditionFailure("no second handle for \(type(of: database))")
    }
}

extension PostgresServer {
    /// One throwaway cluster for this test process, started on first use and stopped at exit.
    static let sharedCluster: Result<PostgresServer, any Error> = {
        let result = Result { try PostgresServer() }
        if case .success = result {
            atexit { if case .success(let server) = PostgresServer.sharedCluster { server.stop() } }
        }
        return result
    }()

    /// The process's shared cluster, or the reason it could not start (a test failure, not a skip).
    public static func shared() throws -> PostgresServer { try sharedCluster.get() }

    /// A fresh database in the shared cluster, so tests never see each other's tables: empty, or a
    /// copy of `template` (a `DatabaseSnapshot`'s).
    public static func freshDatabaseURL(template: String? = nil) throws -> String {
        let server = try shared()
        let name = "t\(UInt64.random(in: 0...UInt64.max))"
        let admin = try PostgresConnection(url: server.url)
        try admin.execute("CREATE DATABASE \(name)" + (template.map { " TEMPLATE \($0)" } ?? ""))
        return server.url.replacingOccurrences(of: "/postgres?", with: "/\(name)?")
    }

    /// Turns the shared cluster's database at `url` into a template and returns its name: it refuses
    /// new connections, and its open ones are ended (waiting until each backend is gone), since
    /// `CREATE DATABASE … TEMPLATE` copies only a database nobody is connected to.
    static func freezeAsTemplate(url: String) throws -> String {
        let (admin, name) = try adminConnection(for: url)
        try admin.execute("ALTER DATABASE \(name) WITH ALLOW_CONNECTIONS false")
        _ = try admin.query("SELECT pg_terminate_backend(pid, 60000) FROM pg_stat_activity WHERE datname = $1", [.text(name)])
        return name
    }

    /// Drops the shared cluster's database at `url`, ending its connections (`WITH (FORCE)`).
    public static func dropDatabase(url: String) throws {
        let (admin, name) = try adminConnection(for: url)
        try admin.execute("DROP DATABASE \(name) WITH (FORCE)")
    }

    /// A superuser connection to the shared cluster, and the name of its database at `url`.
    private static func adminConnection(for url: String) throws -> (PostgresConnection, String) {
        let server = try shared()
        guard url.hasPrefix(server.url.components(separatedBy: "/postgres?")[0] + "/"),
            let path = url.split(separator: "?").first, let name = path.split(separator: "/").last
        else { preconditionFailure("not a database of the shared cluster: \(url)") }
        return (try PostgresConnection(url: server.url), String(name))
    }
}
