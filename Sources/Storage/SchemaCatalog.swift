/// Questions about the schema itself, asked of each engine's catalog (a dialect hook).
public enum SchemaCatalog {
    /// Whether a table named `name` exists (SQLite `sqlite_schema`; PostgreSQL the current schema in
    /// `information_schema.tables`).
    public static func tableExists(_ name: String, on db: any SQLConnection) throws -> Bool {
        let sql =
            switch db.dialect {
            case .sqlite: "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1"
            case .postgres:
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?1"
            }
        return try db.scalar(sql, [.text(name)]) != .integer(0)
    }
}
