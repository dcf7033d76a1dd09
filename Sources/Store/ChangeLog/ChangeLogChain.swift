import Domain
import Hashing
public import Storage

/// The change log's hash chain: `hash(n) = SHA-256(hash(n-1) || encode(row n))`, genesis = 32 zero
/// bytes. `encode` is canonical and unambiguous: every field is written as its length (8 bytes,
/// big-endian; -1 for NULL) followed by its UTF-8 bytes, in column order.
///
/// The document field: rows written since migration 0008 carry `document_digest` = SHA-256 of the
/// document, and their hash covers `"sha256:" + hex(digest)` instead of the text (a JSON document
/// never starts with "sha256:", so the two forms cannot collide). Such a row's document can be
/// redacted (account deletion erases personal data, `redacted_ms` set) while the row still chains:
/// verify checks an unredacted document against its digest and reports redacted rows as redacted.
/// Older rows (no digest) hash their document text; if one of them is redacted its own content can
/// no longer be checked, and verify continues the chain from its stored hash (reported as well).
///
/// Compaction (`ChangeLog.compact`) deletes the oldest rows and appends a checkpoint row (kind
/// `checkpoint`, entity id = the last removed seq, document `{"through_seq", "head_hash"}`): the
/// first remaining row is verified against that head hash, and the checkpoint row is itself a row
/// of the chain, so a prefix removed behind the server's back (without a checkpoint that the rest of
/// the chain covers) is reported as missing rows.
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
        /// SHA-256 of `document` (rows since migration 0008): hashed instead of the document.
        var documentDigest: [UInt8]?
    }

    /// The digest form of a document that the chain hashes (see the type's comment).
    static func digestField(_ digest: [UInt8]) -> String { "sha256:" + Hex.encode(digest) }

    static func hash(_ row: Row, previous: [UInt8]) -> [UInt8] {
        var bytes = previous
        field(String(row.seq), into: &bytes)
        field(String(row.batch), into: &bytes)
        return SHA256.hash(bytes + content(row))
    }

    /// What a row's hash covers after the previous hash, its seq and its batch: the other fields,
    /// encoded. On PostgreSQL the seq is only known at COMMIT, so the writer computes this and the
    /// append's SQL finishes the hash there (`ChangeLog.append`).
    static func content(_ row: Row) -> [UInt8] {
        var bytes: [UInt8] = []
        for value in [row.event, String(row.atMilliseconds), row.actor, row.topic, row.kind, row.op, row.entityID] {
            field(value, into: &bytes)
        }
        field(row.documentDigest.map(digestField) ?? row.document, into: &bytes)
        field(row.reason, into: &bytes)
        return bytes
    }

    /// One field of `encode`: its UTF-8 length (8 bytes, big-endian; -1 for NULL), then its bytes.
    private static func field(_ text: String?, into bytes: inout [UInt8]) {
        guard let text else {
            bytes += withUnsafeBytes(of: Int64(-1).bigEndian, Array.init)
            return
        }
        bytes += withUnsafeBytes(of: Int64(text.utf8.count).bigEndian, Array.init)
        bytes += text.utf8
    }

    /// The outcome of `verify`.
    public struct Report: Sendable, Equatable {
        /// Rows whose hash was recomputed and matched.
        public var verified: Int
        /// Rows before the chain starts (written before the chain existed) — not verifiable.
        public var unchained: Int
        /// Rows whose document was redacted (account deletion): chained, their personal data erased.
        public var redacted: Int = 0
        /// The last seq a compaction removed, when the log starts after a checkpoint.
        public var compactedThrough: Int64?
        /// The first row that does not match (content edited, hash edited, or a row missing before it).
        public var firstBroken: Int64?
        /// Why that row is broken.
        public var problem: String?
    }

    /// Recomputes the chain over every row in seq order. A gap in `seq` inside the chain (a deleted
    /// row) breaks it; so does a missing prefix that no checkpoint row covers. Reads the whole log:
    /// an operator's command, not a request path.
    public static func verify(on db: any SQLConnection) throws -> Report {
        var report = Report(verified: 0, unchained: 0, firstBroken: nil, problem: nil)
        var previous: (seq: Int64, hash: [UInt8])?
        let rows = try db.query(
            """
            SELECT seq, batch, event, at_ms, actor, topic, kind, op, entity_id, document, reason, hash,
                document_digest, redacted_ms
            FROM change_log ORDER BY seq
            """)
        for r in rows {
            let seq = r.int("seq") ?? 0
            guard let stored = r.blob("hash") else {
                if previous == nil {
                    report.unchained += 1
                    continue
                }
                return broken(report, seq, "row has no hash inside the chain")
            }
            let digest = r.blob("document_digest")
            let redacted = r.int("redacted_ms") != nil
            let row = Row(
                seq: seq, batch: r.int("batch") ?? 0, event: r.string("event") ?? "", atMilliseconds: r.int("at_ms") ?? 0,
                actor: r.string("actor") ?? "", topic: r.string("topic") ?? "", kind: r.string("kind") ?? "",
                op: r.string("op") ?? "", entityID: r.string("entity_id") ?? "", document: r.string("document"),
                reason: r.string("reason"), documentDigest: digest)
            if redacted { report.redacted += 1 }
            if let digest, !redacted {
                guard let document = row.document, ConstantTime.equals(SHA256.hash(document.utf8), digest) else {
                    return broken(report, seq, "document does not match its digest")
                }
            }
            // A redacted row from before digests: its content cannot be checked, its link can (the next
            // row's hash covers this row's stored hash).
            let checkable = !(redacted && digest == nil)
            if let previous {
                guard seq == previous.seq + 1 else {
                    return broken(report, seq, "rows \(previous.seq + 1)…\(seq - 1) are missing")
                }
                guard !checkable || ConstantTime.equals(hash(row, previous: previous.hash), stored) else {
                    return broken(report, seq, "content does not match its hash")
                }
            } else if seq == 1 || report.unchained > 0 {
                // The true start of the chain (the first row, or the first after the unchained ones):
                // it was chained to the genesis hash.
                guard !checkable || ConstantTime.equals(hash(row, previous: genesis), stored) else {
                    return broken(report, seq, "content does not match its hash")
                }
            } else {
                // The oldest rows were compacted away: a checkpoint row further on names the chain
                // hash of the last removed row, and this row must chain to it.
                guard let head = try checkpointHead(through: seq - 1, on: db) else {
                    return broken(report, seq, "rows before \(seq) are missing and no checkpoint covers them")
                }
                guard !checkable || ConstantTime.equals(hash(row, previous: head), stored) else {
                    return broken(report, seq, "content does not match its hash (after the checkpoint)")
                }
                report.compactedThrough = seq - 1
            }
            report.verified += 1
            previous = (seq, stored)
        }
        return report
    }

    /// The document of a checkpoint row (kind `checkpoint`, topic `system`), written by
    /// `ChangeLog.compact` and read back by `verify`: one type for both, in `DocumentCoding`'s form.
    struct Checkpoint: Codable, Equatable {
        /// The last seq the compaction removed.
        var throughSeq: Int64
        /// Lowercase hex of that row's chain hash.
        var headHash: String
        var rowsRemoved: Int
        enum CodingKeys: String, CodingKey {
            case throughSeq = "through_seq", headHash = "head_hash", rowsRemoved = "rows_removed"
        }
    }

    /// The head hash a checkpoint row records for `through`, or nil when there is none.
    static func checkpointHead(through: Int64, on db: any SQLConnection) throws -> [UInt8]? {
        guard
            let document = try db.queryOne(
                "SELECT document FROM change_log WHERE kind = 'checkpoint' AND topic = ?1 AND entity_id = ?2 ORDER BY seq LIMIT 1",
                [.text(ChangeLog.systemTopic), .text(String(through))])?.string("document"),
            let checkpoint = try? DocumentCoding.decode(Checkpoint.self, from: Array(document.utf8)),
            checkpoint.throughSeq == through
        else { return nil }
        return Hex.decode(checkpoint.headHash).flatMap { $0.count == 32 ? $0 : nil }
    }

    private static func broken(_ report: Report, _ seq: Int64, _ problem: String) -> Report {
        var report = report
        report.firstBroken = seq
        report.problem = problem
        return report
    }
}
