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
    /// The PostgreSQL channel every append notifies in its transaction (delivered at COMMIT), which
    /// every instance LISTENs on to read new batches at once (docs/architecture.md).
    public static let notifyChannel = "chronir_changes"

    /// Topic of the log's own bookkeeping rows (compaction checkpoints); no client subscribes to it.
    public static let systemTopic = "system"

    /// Appends one mutation's changes as one batch, inside the caller's (IMMEDIATE) transaction:
    /// consecutive `seq`s, all rows carrying the batch's first seq, its `event` name and `actor`, each
    /// row hash-chained to the one before (`ChangeLogChain`). Returns the seqs written. Writers are
    /// serialised (SQLite's write lock; on PostgreSQL the writer advisory lock every `.immediate`
    /// transaction takes first), so reading the last row here cannot race another writer, in this
    /// process, another process or another instance — and seqs become visible in commit order.
    @discardableResult
    public static func append(
        _ changes: [Change], event: ChangeEvent, actor: Actor, at now: Int64, on db: any SQLConnection
    ) throws -> ClosedRange<Int64> {
        precondition(!changes.isEmpty, "a mutation appends at least one change")
        let head = try head(on: db)
        let first = head.seq + 1
        var previousHash = head.hash
        for (offset, change) in changes.enumerated() {
            let row = ChangeLogChain.Row(
                seq: first + Int64(offset), batch: first, event: event.rawValue, atMilliseconds: now, actor: actor.rawValue,
                topic: change.topic, kind: change.kind.rawValue, op: change.op.rawValue, entityID: change.entityID,
                document: change.document.map { String(decoding: $0, as: UTF8.self) }, reason: change.reason,
                documentDigest: change.document.map { SHA256.hash($0) })
            let hash = ChangeLogChain.hash(row, previous: previousHash)
            // Nothing reads its outcome (seq is unique only by the writer lock, so a failure is a
            // broken invariant that fails the transaction): it may travel with the COMMIT.
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
        if db.dialect == .postgres {
            // Sent at COMMIT, never for a rollback; the payload is only a hint (readers read from
            // their own position), so identical payloads folding together loses nothing.
            try db.send("SELECT pg_notify(?1, ?2)", [.text(notifyChannel), .text(String(lastSeq))])
        }
        db.transactionMemo[headMemoKey] = [.integer(lastSeq), .blob(previousHash)]
        return first...lastSeq
    }

    /// Where `append` remembers the head it wrote for the rest of the transaction.
    static let headMemoKey = "change_log.head"

    /// The last row's seq and hash (0 and the genesis hash when empty): what this transaction
    /// appended last (`transactionMemo`: the writer lock or SQLite's write lock is held from BEGIN,
    /// so no other writer appended since), else read — a primary-key search for MAX(seq) (SQLite
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
