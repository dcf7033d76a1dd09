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
    /// The PostgreSQL channel the commit trigger notifies with the transaction's last seq (delivered at
    /// COMMIT; Migrations/postgres/0045 names it too), which every instance LISTENs on to read new batches at once (docs/architecture.md).
    public static let notifyChannel = "chronir_changes"

    /// Topic of the log's own bookkeeping rows (compaction checkpoints); no client subscribes to it.
    public static let systemTopic = "system"

    /// Appends one mutation's changes as one batch, inside the caller's write transaction:
    /// consecutive `seq`s, all rows carrying the batch's first seq, its `event` name and `actor`, each
    /// row hash-chained to the one before (`ChangeLogChain`), seqs visible in commit order — so a
    /// resuming reader never skips one, in this process, another process or another instance.
    ///
    /// SQLite (one writer at a time): reads the head and inserts the rows now. PostgreSQL: queues the
    /// rows in `change_log_pending`; the commit trigger gives them their seqs and hashes under the
    /// append lock as the transaction commits (Migrations/postgres/0045, docs/scaling.md), so writers
    /// on every instance run their statements concurrently and serialise only at COMMIT. Either way
    /// nothing is read back here: the seqs are known once the transaction committed.
    public static func append(
        _ changes: [Change], event: ChangeEvent, actor: Actor, at now: Int64, on db: any SQLConnection
    ) throws {
        precondition(!changes.isEmpty, "a mutation appends at least one change")
        if db.dialect == .postgres { return try queue(changes, event: event, actor: actor, at: now, on: db) }
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

    /// PostgreSQL's `append`: one `change_log_pending` row per change, the first taking a new batch id
    /// and the others the same (`currval` is this connection's last `nextval`). Held back like any
    /// `send`: they travel with the next read or the COMMIT.
    private static func queue(_ changes: [Change], event: ChangeEvent, actor: Actor, at now: Int64, on db: any SQLConnection) throws {
        for (offset, change) in changes.enumerated() {
            let row = chainRow(change, seq: 0, batch: 0, event: event, actor: actor, at: now)
            let batch = offset == 0 ? "nextval('change_log_pending_batch')" : "currval('change_log_pending_batch')"
            try db.send(
                """
                INSERT INTO change_log_pending
                    (batch_id, event, at_ms, actor, topic, kind, op, entity_id, document, reason, document_digest, content)
                VALUES (\(batch), ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                """,
                [
                    .text(row.event), .integer(now), .text(row.actor), .text(row.topic), .text(row.kind), .text(row.op),
                    .text(row.entityID), row.document.map { .text($0) } ?? .null, row.reason.map { .text($0) } ?? .null,
                    row.documentDigest.map { .blob($0) } ?? .null, .blob(ChangeLogChain.content(row)),
                ])
        }
    }

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
