public import Domain
public import Storage

/// Reading the change log as the realtime feed (the values are `Domain.ChangeFeed`'s): rows after a
/// seq (all topics, or one), grouped into the batches the mutations wrote, and the bounds a resume
/// decision needs.
///
/// Every function runs on the caller's connection; call the ones that must agree (`replay`) inside
/// one read transaction (`Database.read`/`readSync` open a DEFERRED one). A reader never sees part
/// of a batch: each mutation commits its rows in one transaction, in seq order.
extension ChangeFeed {
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
        // and a topic's resume read every row of every topic after `after`.
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
                seq: row.int("seq") ?? 0,
                change: Change(
                    topic: row.string("topic") ?? "", kind: ChangeKind(rawValue: row.string("kind") ?? ""),
                    // The CHECK constraint admits only the three ops.
                    op: Change.Op(rawValue: row.string("op") ?? "") ?? .modified, entityID: row.string("entity_id") ?? "",
                    document: row.string("document").map { Array($0.utf8) }, reason: row.string("reason")))
            if let last = result.last, last.batch == batch {
                result[result.count - 1].rows.append(feedRow)
            } else {
                result.append(
                    Batch(
                        batch: batch, event: ChangeEvent(rawValue: row.string("event") ?? ""), actor: row.string("actor") ?? "",
                        atMilliseconds: row.int("at_ms") ?? 0, rows: [feedRow]))
            }
        }
        return result
    }
}
