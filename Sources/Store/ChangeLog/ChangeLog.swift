public import Domain
import Hashing
public import Storage

/// Who caused a change, as recorded in `change_log.actor`.
public struct Actor: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// A signed-in user acting through the API.
    public static func user(_ id: String) -> Actor { Actor(rawValue: "user:\(id)") }
    /// An operator using chronir-admin.
    public static let admin = Actor(rawValue: "admin")
    /// The server itself (sweeper, schedule advance).
    public static let system = Actor(rawValue: "system")
}

/// The append-only `change_log` — the spine every mutation writes in its own transaction.
public enum ChangeLog {
    /// Topic of a user's private feed (my groups, my invitations, my profile).
    public static func userTopic(_ userID: String) -> String { "user:\(userID)" }
    /// Topic of a group's feed (group, members, shared alarms, completions).
    public static func groupTopic(_ groupID: String) -> String { "group:\(groupID)" }
    /// The PostgreSQL channel every append notifies at COMMIT with the log's last seq, which every
    /// instance LISTENs on to read new batches at once (docs/architecture.md).
    public static let notifyChannel = "chronir_changes"

    /// Topic of the log's own bookkeeping rows (compaction checkpoints); no client subscribes to it.
    public static let systemTopic = "system"

    /// Appends one mutation's changes as one batch, inside the caller's write transaction:
    /// consecutive `seq`s, all rows carrying the batch's first seq, its `event` name and `actor`, each
    /// row hash-chained to the one before (`ChangeLogChain`), seqs visible in commit order — so a
    /// resuming reader never skips one, in this process, another process or another instance.
    ///
    /// SQLite (one writer at a time): reads the head and inserts the rows now. PostgreSQL: every row is
    /// one `INSERT … SELECT` that reads the head, numbers the row and finishes its hash in SQL, sent
    /// at COMMIT (`SQLConnection.sendAtCommit`) after the append lock (`appendLockKey`), so writers on
    /// every instance run their own statements concurrently and meet only there; the lock is held for
    /// those statements and the COMMIT's flush, which travel in one pipeline — never across a round
    /// trip to an instance — and released after the commit is visible, so seqs become visible in
    /// order. Either way nothing is read back here: the seqs are known once the transaction committed.
    public static func append(
        _ changes: [Change], event: ChangeEvent, actor: Actor, at now: Int64, on db: any SQLConnection
    ) throws {
        precondition(!changes.isEmpty, "a mutation appends at least one change")
        if db.dialect == .postgres { return try appendAtCommit(changes, event: event, actor: actor, at: now, on: db) }
        let head = try head(on: db)
        let first = head.seq + 1
        var previousHash = head.hash
        for (offset, change) in changes.enumerated() {
            let row = chainRow(change, seq: first + Int64(offset), batch: first, event: event, actor: actor, at: now)
            let hash = ChangeLogChain.hash(row, previous: previousHash)
            // Nothing reads its outcome (seq is unique only by the writer lock, so a failure is a
            // broken invariant that fails the transaction).
            try db.send(
                """
                INSERT INTO change_log
                    (seq, batch, event, at_ms, actor, topic, kind, op, entity_id, document, reason, hash, document_digest)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
                """,
                [
                    .integer(row.seq), .integer(row.batch), .text(row.event), .integer(now), .text(row.actor),
                    .text(row.topic), .text(row.kind), .text(row.op), .text(row.entityID),
                    row.document.map { .text($0) } ?? .null, row.reason.map { .text($0) } ?? .null, .blob(hash),
                    row.documentDigest.map { .blob($0) } ?? .null,
                ])
            previousHash = hash
        }
        let lastSeq = first + Int64(changes.count) - 1
        db.transactionMemo[headMemoKey] = [.integer(lastSeq), .blob(previousHash)]
    }

    /// The advisory-lock key (ASCII "chronlog") a PostgreSQL transaction takes at COMMIT before it
    /// appends: one append at a time in the cluster, from its lock to its COMMIT.
    public static let appendLockKey: Int64 = 0x63_68_72_6f_6e_6c_6f_67

    /// Where a PostgreSQL transaction remembers that it queued the append lock.
    static let lockMemoKey = "change_log.append_lock"

    /// PostgreSQL's `append`: the lock (once per transaction), one `INSERT … SELECT` per change
    /// and the notification (once per transaction, after its last append), all at COMMIT. The
    /// row's hash is `ChangeLogChain.hash` computed in SQL: SHA-256 of the previous row's hash
    /// (genesis when none or unchained), the seq and the batch as length-prefixed decimal text,
    /// then `ChangeLogChain.content`, computed here.
    private static func appendAtCommit(
        _ changes: [Change], event: ChangeEvent, actor: Actor, at now: Int64, on db: any SQLConnection
    ) throws {
        if db.transactionMemo[lockMemoKey] == nil {
            try db.sendAtCommit("SELECT pg_advisory_xact_lock(?1)", [.integer(appendLockKey)])
            db.transactionMemo[lockMemoKey] = [.integer(1)]
        }
        for (offset, change) in changes.enumerated() {
            let row = chainRow(change, seq: 0, batch: 0, event: event, actor: actor, at: now)
            try db.sendAtCommit(
                offset == 0 ? appendFirstSQL : appendNextSQL,
                [
                    .text(row.event), .integer(now), .text(row.actor), .text(row.topic), .text(row.kind), .text(row.op),
                    .text(row.entityID), row.document.map { .text($0) } ?? .null, row.reason.map { .text($0) } ?? .null,
                    row.documentDigest.map { .blob($0) } ?? .null, .blob(ChangeLogChain.content(row)),
                ])
        }
        // Once per transaction, after every append of it: the payload is the transaction's last seq.
        try db.sendOnceAtCommit("SELECT pg_notify(?1, CAST((SELECT MAX(seq) FROM change_log) AS TEXT))", [.text(notifyChannel)])
    }

    /// One row of a PostgreSQL append; `batch` is the SQL of its batch over `head` (`seq`: a batch's
    /// first row; `last_batch`: the row before it is of the same batch).
    private static func appendSQL(batch: String) -> String {
        func field(_ text: String) -> String { "int8send(CAST(octet_length(\(text)) AS BIGINT)) || convert_to(\(text), 'UTF8')" }
        return """
            WITH last AS (SELECT seq, batch, hash FROM change_log ORDER BY seq DESC LIMIT 1),
            head AS (
                SELECT COALESCE((SELECT seq FROM last), 0) + 1 AS seq, (SELECT batch FROM last) AS last_batch,
                    COALESCE((SELECT hash FROM last), decode(repeat('00', 32), 'hex')) AS previous)
            INSERT INTO change_log
                (seq, batch, event, at_ms, actor, topic, kind, op, entity_id, document, reason, hash, document_digest)
            SELECT seq, \(batch), ?1, ?2, ?3, ?4, ?5, ?6, ?7, CAST(?8 AS TEXT), CAST(?9 AS TEXT),
                sha256(previous || \(field("CAST(seq AS TEXT)")) || \(field("CAST(\(batch) AS TEXT)")) || ?11), CAST(?10 AS BYTEA)
            FROM head
            """
    }
    private static let appendFirstSQL = appendSQL(batch: "seq")
    private static let appendNextSQL = appendSQL(batch: "last_batch")

    /// The chained form of `change` (seq and batch as given: SQLite's, or placeholders for the queue).
    private static func chainRow(
        _ change: Change, seq: Int64, batch: Int64, event: ChangeEvent, actor: Actor, at now: Int64
    ) -> ChangeLogChain.Row {
        ChangeLogChain.Row(
            seq: seq, batch: batch, event: event.rawValue, atMilliseconds: now, actor: actor.rawValue,
            topic: change.topic, kind: change.kind.rawValue, op: change.op.rawValue, entityID: change.entityID,
            document: change.document.map { String(decoding: $0, as: UTF8.self) }, reason: change.reason,
            documentDigest: change.document.map { SHA256.hash($0) })
    }

    /// Where `append` remembers the head it wrote for the rest of the transaction.
    static let headMemoKey = "change_log.head"

    /// The last row's seq and hash (0 and the genesis hash when empty), on SQLite: what this
    /// transaction appended last (`transactionMemo`: SQLite's write lock is held from BEGIN, so no
    /// other writer appended since), else read — a primary-key search for MAX(seq) (SQLite
    /// answers MAX from the end of the b-tree), whatever the log's length.
    private static func head(on db: any SQLConnection) throws -> (seq: Int64, hash: [UInt8]) {
        if let memo = db.transactionMemo[headMemoKey], memo.count == 2, case .integer(let seq) = memo[0],
            case .blob(let hash) = memo[1]
        {
            return (seq, hash)
        }
        let last = try db.queryOne("SELECT seq, hash FROM change_log WHERE seq = (SELECT MAX(seq) FROM change_log)")
        return (last?.int("seq") ?? 0, last?.blob("hash") ?? ChangeLogChain.genesis)
    }

    /// The highest `seq` written so far (0 when empty).
    public static func latestSeq(on db: any SQLConnection) throws -> Int64 {
        if case .integer(let v) = try db.scalar("SELECT COALESCE(MAX(seq), 0) FROM change_log") { return v }
        return 0
    }
}
