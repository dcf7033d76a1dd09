public import Domain

/// A `change` message already encoded for one (batch, topic): the same bytes go to every subscriber
/// of the topic (docs/design.md#realtime: one encode per message, not per subscriber).
public struct EncodedChange: Sendable, Equatable {
    /// The topic the message is for.
    public let topic: Topic
    /// The highest seq of the batch's rows in this topic: the client's resume point after it.
    public let seq: Int64
    /// The JSON text, ready to frame.
    public let bytes: [UInt8]
}

/// Encodes the server's messages as exact JSON bytes. Every message is an object whose `type` names
/// it; documents and snapshot data are embedded verbatim (they already are JSON):
///
///     {"type":"snapshot","topic":T,"seq":S,"data":<json>[,"reset":true][,"epoch":E][,"presence":[U,…]]}
///     {"type":"change","topic":T,"seq":S,"event":E,"changes":[{"kind":K,"op":"added|modified|removed",
///                                                             "id":I[,"doc":<json>][,"reason":R]},…]}
///     {"type":"revoked","topic":T,"reason":R}
///     {"type":"error","code":C,"message":M[,"topic":T][,"id":ID]}
///     {"type":"pong"[,"id":ID]}
///     {"type":"presence","topic":T,"joined":[U,…],"left":[U,…]}
///
/// `T` is the wire topic name (`user`, `group:<id>`). `reset: true` means the snapshot replaces what
/// the client holds for the topic and its earlier seq cannot be continued (log pruned, or changes
/// conflated for a slow reader). `epoch` names the log's history (when the server has one): a client
/// resumes with it, and a restored database (another epoch) answers with a reset snapshot.
public enum ServerMessage {
    /// `snapshot`: the topic's whole state as of `seq`.
    public static func snapshot(
        topic: Topic, seq: Int64, data: [UInt8], reset: Bool, epoch: String? = nil, presence: [String]? = nil
    ) -> [UInt8] {
        var out = JSONBytes(capacity: data.count + 96)
        out.raw(#"{"type":"snapshot","topic":"#)
        out.string(topic.wireName)
        out.raw(#","seq":"#)
        out.integer(seq)
        out.raw(#","data":"#)
        out.bytes.append(contentsOf: data)
        if reset { out.raw(#","reset":true"#) }
        if let epoch {
            out.raw(#","epoch":"#)
            out.string(epoch)
        }
        if let presence {
            out.raw(#","presence":"#)
            out.strings(presence)
        }
        out.raw("}")
        return out.bytes
    }

    /// `change`: the rows of one batch in one topic (`rows` non-empty, ascending seq). A row's
    /// `reason` is the typed `RemovalReason` for the event, never the text stored with the row.
    public static func change(topic: Topic, event: ChangeEvent, rows: [ChangeFeed.Row]) -> EncodedChange {
        precondition(!rows.isEmpty, "a change carries at least one row")
        let seq = rows[rows.count - 1].seq
        var capacity = 96 + event.rawValue.utf8.count
        for row in rows {
            let change = row.change
            capacity += 64 + change.kind.rawValue.utf8.count + change.entityID.utf8.count + (change.document?.count ?? 0)
        }
        var out = JSONBytes(capacity: capacity)
        out.raw(#"{"type":"change","topic":"#)
        out.string(topic.wireName)
        out.raw(#","seq":"#)
        out.integer(seq)
        out.raw(#","event":"#)
        out.string(event.rawValue)
        out.raw(#","changes":["#)
        var first = true
        for row in rows {
            let change = row.change
            if !first { out.raw(",") }
            first = false
            out.raw(#"{"kind":"#)
            out.string(change.kind.rawValue)
            out.raw(#","op":"#)
            out.string(change.op.rawValue)
            out.raw(#","id":"#)
            out.string(change.entityID)
            if let document = change.document {
                out.raw(#","doc":"#)
                out.bytes.append(contentsOf: document)
            }
            if let reason = RemovalReason.forChange(event: event, kind: change.kind, op: change.op) {
                out.raw(#","reason":"#)
                out.string(reason.rawValue)
            }
            out.raw("}")
        }
        out.raw("]}")
        return EncodedChange(topic: topic, seq: seq, bytes: out.bytes)
    }

    /// `revoked`: the subscription ended; the client must drop the topic's state.
    public static func revoked(topic: Topic, reason: RemovalReason) -> [UInt8] {
        var out = JSONBytes(capacity: 96)
        out.raw(#"{"type":"revoked","topic":"#)
        out.string(topic.wireName)
        out.raw(#","reason":"#)
        out.string(reason.rawValue)
        out.raw("}")
        return out.bytes
    }

    /// `error`: a request failed; `topic` and `id` name what it was about when known.
    public static func error(
        code: RealtimeErrorCode, message: String, topic: String? = nil, id: RequestID? = nil
    ) -> [UInt8] {
        var out = JSONBytes(capacity: 96 + message.utf8.count)
        out.raw(#"{"type":"error","code":"#)
        out.string(code.rawValue)
        out.raw(#","message":"#)
        out.string(message)
        if let topic {
            out.raw(#","topic":"#)
            out.string(topic)
        }
        out.requestID(id)
        out.raw("}")
        return out.bytes
    }

    /// `presence`: users who started or stopped having the group subscribed since the last one
    /// (user ids, sorted). Not a change-log event: it carries no seq and is not replayed.
    public static func presence(topic: Topic, joined: [String], left: [String]) -> [UInt8] {
        var out = JSONBytes(capacity: 64 + 40 * (joined.count + left.count))
        out.raw(#"{"type":"presence","topic":"#)
        out.string(topic.wireName)
        out.raw(#","joined":"#)
        out.strings(joined)
        out.raw(#","left":"#)
        out.strings(left)
        out.raw("}")
        return out.bytes
    }

    /// `pong`: the answer to `ping`.
    public static func pong(id: RequestID?) -> [UInt8] {
        var out = JSONBytes(capacity: 32)
        out.raw(#"{"type":"pong""#)
        out.requestID(id)
        out.raw("}")
        return out.bytes
    }
}

/// A growing buffer of JSON text.
struct JSONBytes {
    var bytes: [UInt8]

    init(capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func strings(_ values: [String]) {
        raw("[")
        for (i, value) in values.enumerated() {
            if i > 0 { raw(",") }
            string(value)
        }
        raw("]")
    }

    mutating func integer(_ value: Int64) {
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func requestID(_ id: RequestID?) {
        switch id {
        case nil: return
        case .string(let text):
            raw(#","id":"#)
            string(text)
        case .number(let n):
            raw(#","id":"#)
            integer(n)
        }
    }

    /// A JSON string (`JSONString`).
    mutating func string(_ text: String) { JSONString.append(text.utf8, to: &bytes) }
}
