public import Storage

/// Reading the change log as the realtime feed: rows after a seq (all topics, or one), grouped into
/// the batches the mutations wrote, and the bounds a resume decision needs.
///
/// Every function runs on the caller's connection; call the ones that must agree (`replay`) inside
/// one read transaction (`Database.read`/`readSync` open a DEFERRED one). A reader never sees part
/// of a batch: each mutation commits its rows in one transaction, in seq order.
public enum ChangeFeed {
    /// One change-log row as the feed needs it (`document` is the row's JSON bytes, untouched).
    public struct Row: Sendable, Equatable {
        public var seq: Int64
        /// `user:<id>` or `group:<id>`.
        public var topic: String
        public var kind: String
        public var op: Change.Op
        public var entityID: String
        /// The whole new document as JSON; nil when removed.
        public var document: [UInt8]?
        public var reason: String?

        public init(
            seq: Int64, topic: String, kind: String, op: Change.Op, entityID: String, document: [UInt8]?,
            reason: String? = nil
        ) {
            self.seq = seq
            self.topic = topic
            self.kind = kind
            self.op = op
            self.entityID = entityID
            self.document = document
            self.reason = reason
        }
    }

    /// The rows one mutation wrote (those read: maybe only one topic's), in seq order.
    public struct Batch: Sendable, Equatable {
        /// The seq of the batch's first row (`change_log.batch`).
        public var batch: Int64
        /// What happened: `member_removed`, `user_suspended`, ...
        public var event: String
        /// `user:<id>`, `admin`, `system`.
        public var actor: String
        public var atMilliseconds: Int64
        /// Never empty; ascending seq.
        public var rows: [Row]

        public init(batch: Int64, event: String, actor: String, atMilliseconds: Int64, rows: [Row]) {
            precondition(!rows.isEmpty, "a batch has at least one row")
            self.batch = batch
            self.event = event
            self.actor = actor
            self.atMilliseconds = atMilliseconds
            self.rows = rows
        }

        /// The highest seq read for this batch.
        public var lastSeq: Int64 { rows[rows.count - 1].seq }
    }

    /// What a resume (`subscribe` with `since`) needs, read in one transaction.
    public struct Replay: Sendable, Equatable {
        /// The smallest seq still in the log (nil when the log is empty): rows before it are gone.
        public var oldestRetainedSeq: Int64?
        /// The highest seq in the log at the read: the position the replay brings the topic to.
        public var latestSeq: Int64
        /// The topic's batches after `since`, up to `latestSeq` (empty when `truncated`).
        public var batches: [Batch]
        /// True when the topic has more than the allowed rows after `since`: send a snapshot instead.
        public var truncated: Bool
        /// True when the member's access to the group changed after `since` (removed, left, rejoined):
        /// the replay could carry changes from when they had no access, so send a snapshot instead.
        public var accessChanged: Bool

        public init(
            oldestRetainedSeq: Int64?, latestSeq: Int64, batches: [Batch], truncated: Bool, accessChanged: Bool = false
        ) {
            self.oldestRetainedSeq = oldestRetainedSeq
            self.latestSeq = latestSeq
            self.batches = batches
            self.truncated = truncated
            self.accessChanged = accessChanged
        }

        /// Whether the log still holds every row after `since` (`oldest ≤ since + 1`, or an empty log
        /// when the client has seen nothing newer than it) and `since` is not ahead of the log.
        public func reachesBack(to since: Int64) -> Bool {
            guard since >= 0, since <= latestSeq else { return false }
            guard let oldest = oldestRetainedSeq else { return true }
            return oldest <= since + 1
        }
    }

    /// The smallest seq still in the log (nil when empty). Retention deletes from the front only.
    public static func oldestRetainedSeq(on db: any SQLConnection) throws -> Int64? {
        if case .integer(let v) = try db.scalar("SELECT MIN(seq) FROM change_log") { return v }
        return nil
    }

    /// Rows with seq > `after` (only `topic`'s when given), grouped into batches in seq order. Reads
    /// about `limit` rows: the last batch is completed even past `limit`, so batches are never split.
    /// Poll with `after` = the last batch's `lastSeq` to continue.
    public static func batches(after: Int64, topic: String? = nil, limit: Int = 1000, on db: any SQLConnection) throws -> [Batch] {
        precondition(limit > 0, "limit must be positive")
        let columns = "seq, batch, event, at_ms, actor, topic, kind, op, entity_id, document, reason"
        let topicValue: SQLValue = topic.map { .text($0) } ?? .null
        // Two statements, not `(?2 IS NULL OR topic = ?2)`: with that, SQLite cannot use the topic index
        // and a topic's resume read every row of every topic after `after` (issue 13).
        var rows =
            if let topic {
                try db.query(
                    "SELECT \(columns) FROM change_log WHERE topic = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
                    [.text(topic), .integer(after), .integer(Int64(limit))])
            } else {
                try db.query(
                    "SELECT \(columns) FROM change_log WHERE seq > ?1 ORDER BY seq LIMIT ?2",
                    [.integer(after), .integer(Int64(limit))])
            }
        if rows.count == limit, let last = rows.last, let batch = last.int("batch"), let seq = last.int("seq") {
            rows += try db.query(
                """
                SELECT \(columns) FROM change_log WHERE batch = ?1 AND seq > ?2 AND (CAST(?3 AS TEXT) IS NULL OR topic = ?3)
                ORDER BY seq
                """, [.integer(batch), .integer(seq), topicValue])
        }
        return group(rows)
    }

    /// The resume read for `topic` after `since`: the log's bounds and the topic's batches, at most
    /// `maxRows` rows (else `truncated`). For a `group:<id>` topic and `member`, also whether that
    /// user's access to the group changed after `since` (rows `user:<member>` / kind `group` / that id).
    /// Call inside one read transaction.
    public static func replay(
        topic: String, after since: Int64, maxRows: Int, member: String? = nil, on db: any SQLConnection
    ) throws -> Replay {
        let latest = try ChangeLog.latestSeq(on: db)
        let oldest = try oldestRetainedSeq(on: db)
        if let member, topic.hasPrefix("group:") {
            let groupID = String(topic.dropFirst(6))
            let changed = try db.queryOne(
                """
                SELECT 1 FROM change_log
                WHERE topic = ?1 AND seq > ?2 AND kind = 'group' AND entity_id = ?3 AND op IN ('added', 'removed')
                LIMIT 1
                """,
                [.text(ChangeLog.userTopic(member)), .integer(since), .text(groupID)])
            if changed != nil {
                return Replay(oldestRetainedSeq: oldest, latestSeq: latest, batches: [], truncated: false, accessChanged: true)
            }
        }
        let pending = try db.scalar(
            "SELECT COUNT(*) FROM (SELECT 1 FROM change_log WHERE topic = ?1 AND seq > ?2 LIMIT ?3) AS capped",
            [.text(topic), .integer(since), .integer(Int64(maxRows) + 1)])
        if case .integer(let count) = pending, count > Int64(maxRows) {
            return Replay(oldestRetainedSeq: oldest, latestSeq: latest, batches: [], truncated: true)
        }
        let batches = since < latest ? try self.batches(after: since, topic: topic, limit: maxRows + 1, on: db) : []
        return Replay(oldestRetainedSeq: oldest, latestSeq: latest, batches: batches, truncated: false)
    }

    /// Consecutive rows sharing `batch` become one `Batch`.
    static func group(_ rows: [Storage.Row]) -> [Batch] {
        var result: [Batch] = []
        for row in rows {
            let batch = row.int("batch") ?? 0
            let feedRow = Row(
                seq: row.int("seq") ?? 0, topic: row.string("topic") ?? "", kind: row.string("kind") ?? "",
                // The CHECK constraint admits only the three ops.
                op: Change.Op(rawValue: row.string("op") ?? "") ?? .modified, entityID: row.string("entity_id") ?? "",
                document: row.string("document").map { Array($0.utf8) }, reason: row.string("reason"))
            if let last = result.last, last.batch == batch {
                result[result.count - 1].rows.append(feedRow)
            } else {
                result.append(
                    Batch(
                        batch: batch, event: row.string("event") ?? "", actor: row.string("actor") ?? "",
                        atMilliseconds: row.int("at_ms") ?? 0, rows: [feedRow]))
            }
        }
        return result
    }
}
