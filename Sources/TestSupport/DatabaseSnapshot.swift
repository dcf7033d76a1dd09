import Foundation
import Postgres
import SQLite
public import Storage

/// A database's contents, kept so that many tests can each start from a copy instead of building
/// the same state again (migrations, accounts, a group…): a file on SQLite, a template database in
/// the process's shared cluster on PostgreSQL. A copy is independent of the snapshot and of every
/// other copy.
public enum DatabaseSnapshot: Sendable {
    /// A self-contained SQLite file (online backup, rollback-journal mode), `sqliteFileName` in a
    /// directory of its own.
    case sqliteFile(TemporaryDirectory)
    /// A database of the shared PostgreSQL cluster that no longer accepts connections: the template
    /// of `CREATE DATABASE … TEMPLATE`.
    case postgresTemplate(name: String)

    /// The SQLite snapshot's file name in its directory.
    static let sqliteFileName = "snapshot.sqlite"

    /// Takes a snapshot of `database`, whose owner is done with it: SQLite's online backup into a new
    /// file; on PostgreSQL the database itself becomes the template — it refuses new connections and
    /// its open ones are ended (a template may have none), so `database` must not be used afterwards.
    public static func take(of database: any SQLDatabase) throws -> DatabaseSnapshot {
        switch database {
        case let sqlite as SQLiteDatabase:
            let directory = TemporaryDirectory(prefix: "snapshot")
            try sqlite.backup(to: directory.file(named: sqliteFileName))
            return .sqliteFile(directory)
        case let postgres as PostgresDatabase:
            let name = try PostgresServer.freezeAsTemplate(url: postgres.url)
            return .postgresTemplate(name: name)
        default:
            preconditionFailure("no snapshot of \(type(of: database))")
        }
    }

    /// Makes a copy where a test opens its database: the SQLite file copied to `sqlitePath`, or a new
    /// database of the shared cluster made from the template — its URL returned (nil on SQLite).
    public func restore(sqlitePath: String) throws -> String? {
        switch self {
        case .sqliteFile(let directory):
            try FileManager.default.copyItem(atPath: directory.file(named: Self.sqliteFileName), toPath: sqlitePath)
            return nil
        case .postgresTemplate(let name):
            return try PostgresServer.freshDatabaseURL(template: name)
        }
    }
}
