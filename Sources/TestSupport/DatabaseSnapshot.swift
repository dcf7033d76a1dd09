import Foundation
import Postgres
import SQLite
public import Storage

/// A database's contents, kept so that many tests can each start from a copy instead of building
/// the same state again (migrations, accounts, a group…): a file on SQLite, a template database in
/// the process's shared cluster on PostgreSQL. A copy is independent of the snapshot and of every
/// other copy.
public enum DatabaseSnapshot: Sendable {
    /// A self-contained SQLite file (online backup, rollback-journal mode) in a directory of its own.
    case sqliteFile(path: String, directory: TemporaryDirectory)
    /// A database of the shared PostgreSQL cluster that no longer accepts connections: the template
    /// of `CREATE DATABASE … TEMPLATE`.
    case postgresTemplate(name: String)

    /// Takes a snapshot of `database`, whose owner is done with it: SQLite's online backup into a new
    /// file; on PostgreSQL the database itself becomes the template — it refuses new connections and
    /// its open ones are ended (a template may have none), so `database` must not be used afterwards.
    public static func take(of database: any SQLDatabase) throws -> DatabaseSnapshot {
        switch database {
        case let sqlite as SQLiteDatabase:
            let directory = TemporaryDirectory(prefix: "snapshot")
            let path = directory.file(named: "snapshot.sqlite")
            try sqlite.backup(to: path)
            return .sqliteFile(path: path, directory: directory)
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
        case .sqliteFile(let path, _):
            try FileManager.default.copyItem(atPath: path, toPath: sqlitePath)
            return nil
        case .postgresTemplate(let name):
            return try PostgresServer.freshDatabaseURL(template: name)
        }
    }
}
