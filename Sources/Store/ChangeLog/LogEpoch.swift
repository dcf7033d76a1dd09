import Hashing
public import Storage

/// The change log's epoch (migration 0006): a random 128-bit id, as 32 lowercase hex digits, naming
/// this database's history. Seqs are comparable only within one epoch: a restored backup may reuse
/// seqs for different changes, so every backup copy gets a new epoch (`rotate`) and realtime clients
/// that resume across epochs get a fresh snapshot.
public enum LogEpoch {
    /// The current epoch.
    public static func current(on db: any SQLConnection) throws -> String {
        guard case .text(let epoch) = try db.scalar("SELECT epoch FROM log_epoch WHERE id = 1") else {
            throw StoreError.corruptRow(table: "log_epoch")
        }
        return epoch
    }

    /// Replaces the epoch with a new random one and returns it (call in a write transaction); nil
    /// when the database predates migration 0006 (it gets an epoch when migrated).
    @discardableResult
    public static func rotate(on db: any SQLConnection) throws -> String? {
        guard try SchemaCatalog.tableExists("log_epoch", on: db) else { return nil }
        try db.run("UPDATE log_epoch SET epoch = ?1 WHERE id = 1", [.text(Hex.encode(SecureRandom.bytes(16)))])
        return try current(on: db)
    }
}
