import ArgumentParser
import Domain
import Foundation
import Postgres
import SQLite
import Storage
import Store

/// Options every command takes: where the database is, and how to print.
struct AdminOptions: ParsableArguments {
    @Option(help: "Server data directory holding chronir.sqlite. [env: CHRONIR_DATA_DIR] (default: ./data)")
    var dataDir: String?

    @Option(help: "SQLiteDatabase file; overrides --data-dir. [env: CHRONIR_DB]")
    var db: String?

    @Option(help: "PostgreSQL database of the instances (libpq URI), instead of the SQLite file. [env: CHRONIR_DATABASE_URL]")
    var databaseUrl: String?

    @Flag(help: "Print JSON instead of a table.")
    var json = false

    /// The database path from flags, then environment, then the server's default.
    var databasePath: String {
        let env = ProcessInfo.processInfo.environment
        if let db = db ?? env["CHRONIR_DB"] { return db }
        return (dataDir ?? env["CHRONIR_DATA_DIR"] ?? "./data") + "/chronir.sqlite"
    }

    /// The server secret file: in the data directory, or next to `--db`.
    var secretPath: String {
        (databasePath as NSString).deletingLastPathComponent + "/server.secret"
    }

    /// The PostgreSQL URL from the flag or the environment; nil: the SQLite file.
    var postgresURL: String? { databaseUrl ?? ProcessInfo.processInfo.environment["CHRONIR_DATABASE_URL"] }

    /// Opens the existing database — PostgreSQL with `--database-url`, else the SQLite file — and
    /// checks its schema is the one this binary knows.
    func openDatabase(requireCurrentSchema: Bool = true) throws -> any SQLDatabase {
        let database: any SQLDatabase
        if let url = postgresURL {
            database = try PostgresDatabase(url: url, options: PostgresConfiguration(readerCount: 1, concurrentWriterCount: 0))
        } else {
            database = try openSQLiteFile()
        }
        if requireCurrentSchema {
            let pending = try MigrationRunner.pending(database, migrations: Schema.migrations(for: database.dialect))
            guard pending.isEmpty else {
                throw AdminError(
                    "the database schema is behind this chronir-admin (pending: \(pending.joined(separator: ", "))); "
                        + "run `chronir-admin db migrate`")
            }
        }
        return database
    }

    /// The SQLite file, for the commands only SQLite has (`db check`, `db backup`); with
    /// `--database-url` they refuse and say what to use instead (`instead`).
    func openSQLite(orOnPostgres instead: String) throws -> SQLiteDatabase {
        if postgresURL != nil { throw AdminError("not available on PostgreSQL: \(instead)") }
        return try openSQLiteFile()
    }

    /// The existing SQLite file.
    private func openSQLiteFile() throws -> SQLiteDatabase {
        guard FileManager.default.fileExists(atPath: databasePath) else {
            throw AdminError("no database at \(databasePath) (start chronir-server once, or run `chronir-admin db migrate`)")
        }
        return try SQLiteDatabase(path: databasePath, options: SQLiteConfiguration(readerCount: 1))
    }

    /// Milliseconds now.
    var now: Int64 { SystemClock().nowMilliseconds() }
}

/// Asks for confirmation on a terminal unless `--yes`; without a terminal, refuses.
func confirm(_ question: String, yes: Bool) throws {
    if yes { return }
    guard isatty(0) == 1 else { throw AdminError("\(question) — refusing without --yes (no terminal to ask)") }
    print("\(question) [y/N] ", terminator: "")
    guard let answer = readLine(), ["y", "yes"].contains(answer.lowercased()) else { throw AdminError("cancelled") }
}
