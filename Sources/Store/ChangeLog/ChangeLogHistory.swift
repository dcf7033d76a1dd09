public import Storage

/// What a reader of the change log checks to know it still reads the history it delivered from:
/// after a failover to a standby that had not received every commit (asynchronous replication),
/// the new primary's log may end before seqs already delivered, or reuse them for other changes.
public struct ChangeLogAnchor: Sendable, Equatable {
    /// The log's newest seq (0: empty).
    public var head: Int64
    /// The chain hash of the row at the asked seq; nil when there is none (beyond the head, removed
    /// by compaction, or written before the chain existed).
    public var hash: [UInt8]?
    /// The log's epoch (nil before migration 0006).
    public var epoch: String?

    public init(head: Int64, hash: [UInt8]?, epoch: String?) {
        self.head = head
        self.hash = hash
        self.epoch = epoch
    }

    /// The head, the hash at `seq` and the epoch, in one statement (one round trip).
    public static func read(at seq: Int64, on db: any SQLConnection) throws -> ChangeLogAnchor {
        let row = try db.queryOne(
            """
            SELECT (SELECT COALESCE(MAX(seq), 0) FROM change_log) AS head, (SELECT hash FROM change_log WHERE seq = ?1) AS hash,
                   (SELECT epoch FROM log_epoch WHERE id = 1) AS epoch
            """, [.integer(seq)])
        return ChangeLogAnchor(head: row?.int("head") ?? 0, hash: row?.blob("hash"), epoch: row?.string("epoch"))
    }

    /// Why the log read now is not the history a reader delivered up to `position` — whose row's
    /// hash it remembered as `delivered` (nil: not known) under `epoch` — or nil when it is (as far
    /// as can be told: a row removed by compaction is not compared).
    public func divergence(position: Int64, delivered: [UInt8]?, epoch known: String?) -> String? {
        if let epoch, let known, epoch != known { return "the change log's epoch changed" }
        if head < position { return "the change log ends at seq \(head), before seq \(position) already delivered" }
        if let delivered, let hash, hash != delivered { return "the change log's row at seq \(position) is not the one delivered" }
        return nil
    }
}

extension LogEpoch {
    /// Replaces the epoch with a new random one only if it is still `expected` (call in a write
    /// transaction): of several instances noticing the same lost history, one rotates and the
    /// others find it done. Returns the epoch now current.
    public static func rotate(ifStill expected: String, on db: any SQLConnection) throws -> String {
        let current = try current(on: db)
        guard current == expected else { return current }
        return try rotate(on: db) ?? current
    }
}
