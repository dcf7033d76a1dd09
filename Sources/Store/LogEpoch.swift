public import SQLite

/// The change log's epoch (migration 0006): a random 128-bit id, as 32 lowercase hex digits, naming
/// this database's history. Seqs are comparable only within one epoch: a restored backup may reuse
/// seqs for different changes, so every backup copy gets a new epoch (`rotate`) and realtime clients
/// that resume across epochs get a fresh snapshot.
public enum LogEpoch {
    /// The current epoch.
    public static func current(on db: Connection) throws -> String {
        guard case .text(let epoch) = try db.scalar("SELECT epoch FROM log_epoch WHERE id = 1") else {
            throw SQLiteError(code: 1, message: "log_epoch has no row (migration 0006 not applied?)")
        }
        return epoch
    }

    /// Replaces the epoch with a new random one and returns it (call in a write transaction); nil
    /// when the database predates migration 0006 (it gets an epoch when migrated).
    @discardableResult
    public static func rotate(on db: Connection) throws -> String? {
        guard try db.scalar("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'log_epoch'") == .integer(1)
        else { return nil }
        try db.run("UPDATE log_epoch SET epoch = lower(hex(randomblob(16))) WHERE id = 1")
        return try current(on: db)
    }
}
