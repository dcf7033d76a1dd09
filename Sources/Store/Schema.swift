public import Storage

/// The database schema this binary expects: `Migrations/<dialect>/*.sql`, embedded at build time by
/// the EmbedMigrations plugin (see Package.swift), in name order. Both dialects have the same
/// migration names and meaning (docs/architecture.md, Storage); only the SQL differs.
public enum Schema {
    /// Every SQLite migration the binary knows, in the order they apply.
    public static let migrations: [Migration] = embedded("sqlite")
    /// Every PostgreSQL migration the binary knows, in the order they apply.
    public static let postgresMigrations: [Migration] = embedded("postgres")

    private static func embedded(_ dialect: String) -> [Migration] {
        embeddedMigrations.filter { $0.dialect == dialect }.map { Migration(name: $0.name, sql: $0.sql) }
    }
}

extension Schema {
    /// The migrations of `dialect`'s schema (`Migrations/<dialect>/`).
    public static func migrations(for dialect: SQLDialect) -> [Migration] {
        switch dialect {
        case .sqlite: migrations
        case .postgres: postgresMigrations
        }
    }
}
