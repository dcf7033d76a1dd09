import Hashing

/// One schema migration: a SQL script identified by name (`Migrations/sqlite/0001_init.sql` → "0001_init").
/// The script must not contain BEGIN/COMMIT or PRAGMAs that cannot run inside a transaction
/// (e.g. `foreign_keys`): the runner wraps it in its own transaction.
public struct Migration: Sendable, Equatable {
    /// Sort key and identity, e.g. "0001_init"; applied in ascending order of name.
    public var name: String
    /// The script, run with `SQLConnection.execute` (one dialect's SQL: `Migrations/<dialect>/`).
    public var sql: String
    /// Lowercase hex SHA-256 of `sql`'s UTF-8 bytes, recorded when applied.
    public var checksum: String

    /// Creates a migration and computes its checksum.
    public init(name: String, sql: String) {
        self.name = name
        self.sql = sql
        self.checksum = Hex.encode(SHA256.hash(sql.utf8))
    }
}

/// Why `MigrationRunner` refused to run or stopped.
public struct MigrationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The failure cases.
    public enum Kind: Sendable, Equatable {
        /// An applied migration's SQL changed since it ran (recorded vs current checksum).
        case checksumMismatch(name: String, recorded: String, actual: String)
        /// The database has a migration this binary does not know: a newer binary ran here.
        case unknownApplied(name: String)
        /// A pending migration sorts before one already applied (e.g. branches merged late).
        case outOfOrder(name: String, appliedAfter: String)
        /// Two given migrations share a name.
        case duplicateName(String)
        /// The database failed while applying the migration (or reading `schema_migrations`);
        /// nothing of that migration was kept.
        case failed(name: String, any StorageFailure)

        public static func == (lhs: Kind, rhs: Kind) -> Bool {
            switch (lhs, rhs) {
            case (.checksumMismatch(let a, let b, let c), .checksumMismatch(let d, let e, let f)): a == d && b == e && c == f
            case (.unknownApplied(let a), .unknownApplied(let b)): a == b
            case (.outOfOrder(let a, let b), .outOfOrder(let c, let d)): a == c && b == d
            case (.duplicateName(let a), .duplicateName(let b)): a == b
            case (.failed(let a, let b), .failed(let c, let d)): a == c && b.description == d.description
            default: false
            }
        }
    }

    /// What went wrong.
    public var kind: Kind

    /// Wraps `kind`.
    public init(_ kind: Kind) { self.kind = kind }

    /// A message for operators.
    public var description: String {
        switch kind {
        case .checksumMismatch(let name, let recorded, let actual):
            "migration \(name) was changed after it was applied (recorded checksum \(recorded), now \(actual))"
        case .unknownApplied(let name):
            "database has migration \(name) which this binary does not know (was it run by a newer version?)"
        case .outOfOrder(let name, let after):
            "migration \(name) is pending but sorts before \(after), which is already applied"
        case .duplicateName(let name):
            "two migrations are named \(name)"
        case .failed(let name, let error):
            "migration \(name) failed: \(error)"
        }
    }
}

/// Applies `Migration`s in name order and records them in `schema_migrations`.
public enum MigrationRunner {
    /// The bookkeeping table.
    static let createTable = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            name TEXT PRIMARY KEY, checksum TEXT NOT NULL, applied_ms BIGINT NOT NULL)
        """

    /// Creates `schema_migrations(name TEXT PRIMARY KEY, checksum TEXT NOT NULL, applied_ms INTEGER NOT NULL)` if missing; verifies every
    /// applied migration's checksum (mismatch → throw, stop); applies pending ones in name order, each in its own IMMEDIATE transaction
    /// together with its schema_migrations row. Returns the names applied now.
    ///
    /// Nothing is applied unless every check passes (also unknown applied names and out-of-order
    /// pending ones throw). Safe against another process migrating at the same time: each
    /// migration re-checks `schema_migrations` inside its transaction.
    public static func migrate(_ database: any SQLDatabase, migrations: [Migration], nowMilliseconds: Int64) throws -> [String] {
        let ordered = try sortedUnique(migrations)
        return try database.withWriter { connection in
            do {
                try connection.execute(createTable)
            } catch let error as any StorageFailure {
                throw MigrationError(.failed(name: "schema_migrations", error))
            }
            let applied = try appliedChecksums(connection)
            try check(applied: applied, known: ordered)

            var appliedNow: [String] = []
            for migration in ordered where applied[migration.name] == nil {
                do {
                    let didApply = try connection.transaction(.immediate) { connection in
                        let recorded = try connection.scalar(
                            "SELECT checksum FROM schema_migrations WHERE name = ?1", [.text(migration.name)])
                        if case .text(let checksum) = recorded {
                            guard checksum == migration.checksum else {
                                throw MigrationError(
                                    .checksumMismatch(name: migration.name, recorded: checksum, actual: migration.checksum))
                            }
                            return false  // another process applied it meanwhile
                        }
                        try connection.execute(migration.sql)
                        try connection.run(
                            "INSERT INTO schema_migrations (name, checksum, applied_ms) VALUES (?1, ?2, ?3)",
                            [.text(migration.name), .text(migration.checksum), .integer(nowMilliseconds)])
                        return true
                    }
                    if didApply { appliedNow.append(migration.name) }
                } catch let error as any StorageFailure {
                    throw MigrationError(.failed(name: migration.name, error))
                }
            }
            return appliedNow
        }
    }

    /// Names of the given migrations not yet applied, in name order; empty means the schema is up
    /// to date (for /readyz). Reads through the reader pool; a database never migrated has all pending.
    /// A failing database throws its own `StorageFailure` (unwrapped: /readyz answers an unreachable
    /// database with 503, as any request).
    public static func pending(_ database: any SQLDatabase, migrations: [Migration]) throws -> [String] {
        let applied = try database.readSync { connection in
            try SchemaCatalog.tableExists("schema_migrations", on: connection) ? try readAppliedChecksums(connection) : [:]
        }
        return try sortedUnique(migrations).map(\.name).filter { applied[$0] == nil }
    }

    /// Recorded checksum by migration name; a failure is a `MigrationError` naming the table.
    private static func appliedChecksums(_ connection: any SQLConnection) throws -> [String: String] {
        do {
            return try readAppliedChecksums(connection)
        } catch let error as any StorageFailure {
            throw MigrationError(.failed(name: "schema_migrations", error))
        }
    }

    /// Recorded checksum by migration name; throws the engine's error as is.
    private static func readAppliedChecksums(_ connection: any SQLConnection) throws -> [String: String] {
        var applied: [String: String] = [:]
        for row in try connection.query("SELECT name, checksum FROM schema_migrations") {
            if let name = row.string("name"), let checksum = row.string("checksum") { applied[name] = checksum }
        }
        return applied
    }

    /// Throws unless every applied migration is known and unchanged and no pending one sorts before
    /// an applied one.
    private static func check(applied: [String: String], known ordered: [Migration]) throws {
        let known = Dictionary(uniqueKeysWithValues: ordered.map { ($0.name, $0) })
        for name in applied.keys.sorted() {
            guard let migration = known[name] else { throw MigrationError(.unknownApplied(name: name)) }
            if applied[name] != migration.checksum {
                throw MigrationError(
                    .checksumMismatch(name: name, recorded: applied[name] ?? "", actual: migration.checksum))
            }
        }
        if let lastApplied = applied.keys.max(),
            let early = ordered.first(where: { applied[$0.name] == nil && $0.name < lastApplied })
        {
            throw MigrationError(.outOfOrder(name: early.name, appliedAfter: lastApplied))
        }
    }

    /// `migrations` sorted by name; throws on a duplicate name.
    private static func sortedUnique(_ migrations: [Migration]) throws -> [Migration] {
        let ordered = migrations.sorted { $0.name < $1.name }
        for (previous, next) in zip(ordered, ordered.dropFirst()) where previous.name == next.name {
            throw MigrationError(.duplicateName(next.name))
        }
        return ordered
    }
}
