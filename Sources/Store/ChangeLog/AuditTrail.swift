public import Storage

/// Reading the change log as an audit trail (chronir-admin `audit`).
public enum AuditTrail {
    /// One change-log row.
    public struct Entry: Sendable, Equatable {
        public var seq: Int64
        public var batch: Int64
        public var event: String
        public var atMilliseconds: Int64
        public var actor: String
        public var topic: String
        public var kind: String
        public var op: String
        public var entityID: String
        public var document: String?
        public var reason: String?
    }

    /// What to select.
    public struct Filter: Sendable {
        /// Only rows of this topic (`group:<id>`, `user:<id>`).
        public var topic: String?
        /// Only rows whose actor is this (`user:<id>`, `admin`, `system`).
        public var actor: String?
        /// Only rows at or after this time.
        public var sinceMilliseconds: Int64?
        /// Only rows after this seq (for `--follow`).
        public var afterSeq: Int64?
        public init(topic: String? = nil, actor: String? = nil, sinceMilliseconds: Int64? = nil, afterSeq: Int64? = nil) {
            self.topic = topic
            self.actor = actor
            self.sinceMilliseconds = sinceMilliseconds
            self.afterSeq = afterSeq
        }
    }

    /// Rows matching `filter` in seq order, at most `limit` (the newest `limit` when `newest`).
    public static func entries(_ filter: Filter, limit: Int, newest: Bool = true, on db: any SQLConnection) throws -> [Entry] {
        let rows = try db.query(
            """
            SELECT seq, batch, event, at_ms, actor, topic, kind, op, entity_id, document, reason FROM change_log
            WHERE (CAST(?1 AS TEXT) IS NULL OR topic = ?1) AND (CAST(?2 AS TEXT) IS NULL OR actor = ?2)
              AND (CAST(?3 AS BIGINT) IS NULL OR at_ms >= ?3)
              AND (CAST(?4 AS BIGINT) IS NULL OR seq > ?4)
            ORDER BY seq \(newest ? "DESC" : "ASC") LIMIT ?5
            """,
            [
                filter.topic.map { .text($0) } ?? .null, filter.actor.map { .text($0) } ?? .null,
                filter.sinceMilliseconds.map { .integer($0) } ?? .null, filter.afterSeq.map { .integer($0) } ?? .null,
                .integer(Int64(limit)),
            ])
        let entries = rows.map { row in
            Entry(
                seq: row.int("seq") ?? 0, batch: row.int("batch") ?? 0, event: row.string("event") ?? "",
                atMilliseconds: row.int("at_ms") ?? 0, actor: row.string("actor") ?? "", topic: row.string("topic") ?? "",
                kind: row.string("kind") ?? "", op: row.string("op") ?? "", entityID: row.string("entity_id") ?? "",
                document: row.string("document"), reason: row.string("reason"))
        }
        return newest ? entries.reversed() : entries
    }
}
