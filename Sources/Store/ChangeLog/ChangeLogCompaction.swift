import Domain
import Hashing
public import Storage

/// Change-log retention: the log keeps what resume, audit and other processes need —
/// every row younger than `window`, and always the newest `minimumRows` — and compaction deletes the
/// oldest rest. A client resuming from before the oldest kept row gets a `reset` snapshot (the path
/// `ChangeFeed.Replay.oldestRetainedSeq` already drives), so nothing a client needs is lost.
///
/// Compaction deletes a prefix of whole batches and appends, in the same transaction, one
/// checkpoint row (topic `system`, kind `checkpoint`, event `log_compacted`, entity id = the last seq
/// removed, document `{"through_seq", "head_hash", "rows_removed"}`): `ChangeLogChain.verify` then
/// verifies the first kept row against that head hash, and the checkpoint is covered by the chain
/// like any row.
public struct ChangeLogRetention: Sendable, Equatable {
    /// Rows younger than this are kept (the SQLite seed's event-log window: 30 days).
    public var windowMilliseconds: Int64
    /// The newest rows always kept, however old (a quiet server still has recent history to resume
    /// and audit). At least 1 whatever is set: the newest row numbers the next.
    public var minimumRows: Int64
    /// Most rows one compaction transaction deletes (named bound: the writer lock is held while it
    /// runs; the sweeper repeats until done).
    public var maxRowsPerTransaction: Int64
    /// Fewest rows worth a compaction. Each compaction appends a checkpoint row, which is one of the
    /// newest rows the next one keeps; without this floor, repeated compactions at the
    /// `minimumRows` bound would each remove one old row for one checkpoint row.
    public var minimumRowsPerCompaction: Int64

    public init(
        windowMilliseconds: Int64, minimumRows: Int64, maxRowsPerTransaction: Int64 = 20_000,
        minimumRowsPerCompaction: Int64 = 1_000
    ) {
        self.windowMilliseconds = windowMilliseconds
        self.minimumRows = minimumRows
        self.maxRowsPerTransaction = maxRowsPerTransaction
        self.minimumRowsPerCompaction = max(1, minimumRowsPerCompaction)
    }

    /// 30 days, at least the newest 10,000 rows.
    public static let standard = ChangeLogRetention(windowMilliseconds: 30 * 24 * 3600 * 1000, minimumRows: 10_000)
}

extension ChangeLog {
    /// What one compaction removed.
    public struct Compaction: Sendable, Equatable {
        /// Rows deleted (0: nothing was due; no checkpoint written).
        public var rowsRemoved: Int
        /// The last seq deleted.
        public var throughSeq: Int64?
    }

    /// Deletes the oldest batches past `retention` at `now` (at most `maxRowsPerTransaction` rows,
    /// never splitting a batch unless one batch alone is larger) and appends the checkpoint row, in
    /// the caller's write transaction.
    public static func compact(
        _ retention: ChangeLogRetention = .standard, at now: Int64, on db: any SQLConnection
    ) throws -> Compaction {
        guard let oldest = try ChangeFeed.oldestRetainedSeq(on: db) else { return Compaction(rowsRemoved: 0) }
        let latest = try latestSeq(on: db)
        // The first row young enough to keep, among the next `maxRowsPerTransaction` only: a
        // primary-key range, so the cost is bounded by what one transaction may remove anyway.
        let window = oldest + retention.maxRowsPerTransaction - 1
        let firstYoung =
            try db.queryOne(
                "SELECT MIN(seq) AS seq FROM change_log WHERE seq BETWEEN ?1 AND ?2 AND at_ms >= ?3",
                [.integer(oldest), .integer(window), .integer(now - retention.windowMilliseconds)])?.int("seq") ?? (window + 1)
        // The newest row always stays: `append` numbers the next row from it, so a seq is never reused.
        var through = min(
            firstYoung - 1, latest - max(1, retention.minimumRows), oldest + retention.maxRowsPerTransaction - 1)
        guard through - oldest + 1 >= retention.minimumRowsPerCompaction else { return Compaction(rowsRemoved: 0) }
        // Keep batches whole: if the next row belongs to a batch that starts at or before `through`,
        // end before that batch (unless that would remove nothing: one batch over the bound).
        if let next = try db.queryOne("SELECT batch FROM change_log WHERE seq = ?1", [.integer(through + 1)])?.int("batch"),
            next <= through, next > oldest
        {
            through = next - 1
        }
        guard through >= oldest else { return Compaction(rowsRemoved: 0) }
        guard let head = try db.queryOne("SELECT hash FROM change_log WHERE seq = ?1", [.integer(through)])?.blob("hash")
        else { return Compaction(rowsRemoved: 0) }  // an unchained row (before migration 0004): leave the log as it is
        let removed = try db.run("DELETE FROM change_log WHERE seq <= ?1", [.integer(through)])
        let checkpoint = Change(
            topic: systemTopic, kind: .checkpoint, op: .added, entityID: String(through),
            document: DocumentCoding.encode(
                ChangeLogChain.Checkpoint(throughSeq: through, headHash: Hex.encode(head), rowsRemoved: removed)))
        try append([checkpoint], event: .logCompacted, actor: .system, at: now, on: db)
        return Compaction(rowsRemoved: removed, throughSeq: through)
    }

    /// Compacts in as many transactions as it takes (each at most `maxRowsPerTransaction` rows, so
    /// writers wait for one bounded transaction at a time), stopping once a transaction removed fewer
    /// rows than that cap: the retention bound, not the cap, ended it. Used by the sweeper and by
    /// `chronir-admin db compact`.
    public static func compactUntilDone(
        _ retention: ChangeLogRetention = .standard, at now: Int64, database: any SQLDatabase
    ) throws -> Compaction {
        var total = Compaction(rowsRemoved: 0)
        while true {
            let step = try database.writeSync { try compact(retention, at: now, on: $0) }
            total.rowsRemoved += step.rowsRemoved
            total.throughSeq = step.throughSeq ?? total.throughSeq
            if Int64(step.rowsRemoved) < retention.maxRowsPerTransaction { return total }
        }
    }

    /// The log's size for operators (`chronir-admin stats`).
    public struct Size: Sendable, Equatable {
        public var rows: Int64
        public var oldestSeq: Int64?
        public var latestSeq: Int64
        /// Bytes of stored documents (the bulk of the log).
        public var documentBytes: Int64
    }

    /// Counts the log (a full scan: an operator's command).
    public static func size(on db: any SQLConnection) throws -> Size {
        let row = try db.queryOne(
            """
            SELECT count(*) AS n, min(seq) AS oldest, COALESCE(max(seq), 0) AS latest, COALESCE(sum(length(document)), 0) AS bytes FROM \
            change_log
            """
        )
        return Size(
            rows: row?.int("n") ?? 0, oldestSeq: row?.int("oldest"), latestSeq: row?.int("latest") ?? 0,
            documentBytes: row?.int("bytes") ?? 0)
    }
}
