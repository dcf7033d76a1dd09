import Foundation
public import Logging
public import SQLite
import Store

/// Start-up steps shared by the server and (later) the admin CLI: data directory, database, schema.
public enum Bootstrap {
    /// Creates the data directory (0700) when missing, opens the database with the configured
    /// durability and applies pending migrations. A changed applied migration stops start-up.
    /// `observer` times every transaction (`ChronirMetrics.database`).
    public static func openDatabase(
        config: AppConfig, logger: Logger, nowMilliseconds: Int64, observer: (any DatabaseObserver)? = nil
    ) throws -> Database {
        try FileManager.default.createDirectory(
            atPath: config.dataDirectory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let database = try Database(
            path: config.databasePath, options: DatabaseOptions(durability: config.durability, observer: observer))
        let applied = try MigrationRunner.migrate(database, migrations: Schema.migrations, nowMilliseconds: nowMilliseconds)
        for name in applied { logger.info("migration applied", metadata: ["migration": "\(name)"]) }
        return database
    }
}
