import Hashing
public import SQLite

/// The change log's hash chain: `hash(n) = SHA-256(hash(n-1) || encode(row n))`, genesis = 32 zero
/// bytes. `encode` is canonical and unambiguous: every field is written as its length (8 bytes,
/// big-endian; -1 for NULL) followed by its UTF-8 bytes, in column order.
public enum ChangeLogChain {
    /// The "previous hash" of the first row.
    public static let genesis = [UInt8](repeating: 0, count: 32)

    /// The hashed content of one row.
    struct Row {
        var seq: Int64
        var batch: Int64
        var event: String
        var atMilliseconds: Int64
        var actor: String
        var topic: String
        var kind: String
        var op: String
        var entityID: String
        var document: String?
        var reason: String?
    }

    static func hash(_ row: Row, previous: [UInt8]) -> [UInt8] {
        var bytes = previous
        func field(_ text: String?) {
            guard let text else {
                bytes += withUnsafeBytes(of: Int64(-1).bigEndian, Array.init)
                return
            }
            bytes += withUnsafeBytes(of: Int64(text.utf8.count).bigEndian, Array.init)
            bytes += text.utf8
        }
        for value in [
            String(row.seq), String(row.batch), row.event, String(row.atMilliseconds), row.actor, row.topic, row.kind,
            row.op, row.entityID,
        ] { field(value) }
        field(row.document)
        field(row.reason)
        return SHA256.hash(bytes)
    }

    /// The outcome of `verify`.
    public struct Report: Sendable, Equatable {
        /// Rows whose hash was recomputed and matched.
        public var verified: Int
        /// Rows before the chain starts (written before the chain existed) — not verifiable.
        public var unchained: Int
        /// The first row that does not match (content edited, hash edited, or a row missing before it).
        public var firstBroken: Int64?
        /// Why that row is broken.
        public var problem: String?
    }

    /// Recomputes the chain over every row in seq order. A gap in `seq` inside the chain (a deleted
    /// row) also breaks it. When the oldest rows were purged by retention, the first remaining row is
    /// taken as the anchor (its own content cannot be checked against a missing predecessor).
    public static func verify(on db: Connection) throws -> Report {
        var report = Report(verified: 0, unchained: 0, firstBroken: nil, problem: nil)
        var previous: (seq: Int64, hash: [UInt8])?
        let rows = try db.query(
            "SELECT seq, batch, event, at_ms, actor, topic, kind, op, entity_id, document, reason, hash FROM change_log ORDER BY seq")
        for r in rows {
            let seq = r.int("seq") ?? 0
            guard let stored = r.blob("hash") else {
                if previous == nil { report.unchained += 1; continue }
                return broken(report, seq, "row has no hash inside the chain")
            }
            let row = Row(
                seq: seq, batch: r.int("batch") ?? 0, event: r.string("event") ?? "", atMilliseconds: r.int("at_ms") ?? 0,
                actor: r.string("actor") ?? "", topic: r.string("topic") ?? "", kind: r.string("kind") ?? "",
                op: r.string("op") ?? "", entityID: r.string("entity_id") ?? "", document: r.string("document"),
                reason: r.string("reason"))
            if let previous {
                guard seq == previous.seq + 1 else {
                    return broken(report, seq, "rows \(previous.seq + 1)…\(seq - 1) are missing")
                }
                guard ConstantTime.equals(hash(row, previous: previous.hash), stored) else {
                    return broken(report, seq, "content does not match its hash")
                }
            } else if seq == 1 || report.unchained > 0 {
                // The true start of the chain (the first row, or the first after the unchained ones):
                // it was chained to the genesis hash.
                guard ConstantTime.equals(hash(row, previous: genesis), stored) else {
                    return broken(report, seq, "content does not match its hash")
                }
            }
            report.verified += 1
            previous = (seq, stored)
        }
        return report
    }

    private static func broken(_ report: Report, _ seq: Int64, _ problem: String) -> Report {
        var report = report
        report.firstBroken = seq
        report.problem = problem
        return report
    }
}
