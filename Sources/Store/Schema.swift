public import Storage

/// The database schema this binary expects: `Migrations/*.sql`, embedded at build time by the
/// EmbedMigrations plugin (see Package.swift), in name order.
public enum Schema {
    /// Every migration the binary knows, in the order they apply.
    public static let migrations: [Migration] = embeddedMigrations.map { Migration(name: $0.name, sql: $0.sql) }
}
