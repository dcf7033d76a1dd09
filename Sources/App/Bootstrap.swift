import Foundation
public import Logging
import Postgres
import SQLite
public import Storage
import Store

/// Start-up steps shared by the server and (later) the admin CLI: data directory, database, schema.
public enum Bootstrap {
    /// A start-up refusal with the reason and the fix, for the operator.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// What `checkDataDirectory` found.
    public enum DataDirectoryMode: Equatable, Sendable {
        /// Only the owner has access (0700 or narrower).
        case ownerOnly
        /// Group or others may list or enter it (e.g. 0755): the files in it are 0600 anyway, but
        /// their names and sizes show. Start-up continues with a warning.
        case readableByOthers(mode: UInt32)
    }

    /// Refuses a data directory that group or others may write (they could replace the database or
    /// `server.secret`, or plant a `-wal`), and reports one they may read. Follows a
    /// symlinked directory, as opening files in it does.
    public static func checkDataDirectory(_ path: String) throws(Failure) -> DataDirectoryMode {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw Failure(description: "cannot stat data directory \(path): \(String(cString: strerror(errno)))")
        }
        let mode = info.st_mode & 0o7777
        let octal = String(mode, radix: 8)
        guard info.st_mode & 0o022 == 0 else {
            throw Failure(
                description:
                    """
                    data directory \(path) is writable by group or others (mode \(octal)); it holds password and token hashes: chmod 700 \
                    \(path)
                    """
            )
        }
        return info.st_mode & 0o055 == 0 ? .ownerOnly : .readableByOthers(mode: UInt32(mode))
    }

    /// Prepares the data directory (`prepareDataDirectory`: it holds `server.secret` on either
    /// engine), then opens the configured database and applies pending migrations (a changed applied
    /// migration stops start-up): PostgreSQL when `config.databaseURL` is set, else the SQLite file
    /// in the data directory (`openSQLite`). `observer` times every transaction
    /// (`ChronirMetrics.database`).
    public static func openDatabase(
        config: AppConfiguration, logger: Logger, nowMilliseconds: Int64, observer: (any DatabaseObserver)? = nil
    ) throws -> any SQLDatabase {
        try prepareDataDirectory(config: config, logger: logger)
        let database: any SQLDatabase
        if let url = config.databaseURL {
            database = try PostgresDatabase(
                url: url, options: PostgresConfiguration(concurrentWriterCount: config.databaseWriters, observer: observer))
        } else {
            database = try openSQLite(config: config, logger: logger, observer: observer)
        }
        let applied = try MigrationRunner.migrate(
            database, migrations: Schema.migrations(for: database.dialect), nowMilliseconds: nowMilliseconds)
        for name in applied { logger.info("migration applied", metadata: ["migration": "\(name)"]) }
        return database
    }

    /// Creates the data directory (0700) when missing and checks its mode (`checkDataDirectory`:
    /// refuse when group/world-writable, warn when readable).
    static func prepareDataDirectory(config: AppConfiguration, logger: Logger) throws {
        try FileManager.default.createDirectory(
            atPath: config.dataDirectory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        if case .readableByOthers(let mode) = try checkDataDirectory(config.dataDirectory) {
            logger.warning(
                "data directory is readable by group or others; chmod 700 it",
                metadata: ["path": "\(config.dataDirectory)", "mode": "\(String(mode, radix: 8))"])
        }
    }

    /// Opens the SQLite file in the data directory with the configured durability (every database
    /// file 0600, `FileProtection`).
    static func openSQLite(config: AppConfiguration, logger: Logger, observer: (any DatabaseObserver)?) throws -> SQLiteDatabase {
        let database = try SQLiteDatabase(
            path: config.databasePath, options: SQLiteConfiguration(durability: config.durability, observer: observer))
        for file in database.narrowedFiles {
            logger.warning("database file was readable by group or others; narrowed to 0600", metadata: ["path": "\(file)"])
        }
        return database
    }
}
