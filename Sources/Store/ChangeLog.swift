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
        // The previous row only: a primary-key search for MAX(seq) (SQLite answers MAX from the end
        // of the b-tree), whatever the log's length.
        let last = try db.queryOne("SELECT seq, hash FROM change_log WHERE seq = (SELECT MAX(seq) FROM change_log)")
        let first = (last?.int("seq") ?? 0) + 1
        var previousHash = last?.blob("hash") ?? ChangeLogChain.genesis
        for (offset, change) in changes.enumerated() {
            let row = ChangeLogChain.Row(
                seq: first + Int64(offset), batch: first, event: event.rawValue, atMilliseconds: now, actor: actor.rawValue,
                topic: change.topic, kind: change.kind.rawValue, op: change.op.rawValue, entityID: change.entityID,
                document: change.document.map { String(decoding: $0, as: UTF8.self) }, reason: change.reason,
                documentDigest: change.document.map { SHA256.hash($0) })
            let hash = ChangeLogChain.hash(row, previous: previousHash)
            try db.run(
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
            try db.run("SELECT pg_notify(?1, ?2)", [.text(notifyChannel), .text(String(lastSeq))])
        }
        return first...lastSeq
    }

    /// The highest `seq` written so far (0 when empty).
    public static func latestSeq(on db: any SQLConnection) throws -> Int64 {
        if case .integer(let v) = try db.scalar("SELECT COALESCE(MAX(seq), 0) FROM change_log") { return v }
        return 0
    }
}
