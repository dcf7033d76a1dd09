import Domain
import Foundation
import Realtime
import Store
import Testing

// Synthetic change-log rows and batches, and readers for the hub's actions.

let g1 = "11111111-1111-4111-8111-111111111111"
let g2 = "22222222-2222-4222-8222-222222222222"

func row(
    _ seq: Int64, _ topic: String, kind: String = "member", op: Change.Op = .modified, id: String = "e",
    doc: String? = #"{"v":1}"#, reason: String? = nil
) -> ChangeFeed.Row {
    ChangeFeed.Row(
        seq: seq,
        change: Change(
            topic: topic, kind: ChangeKind(rawValue: kind), op: op, entityID: id, document: doc.map { Array($0.utf8) },
            reason: reason))
}

/// A batch whose `batch` is its first row's seq; `event` as stored (any text).
func batch(_ event: String = "group_updated", _ rows: ChangeFeed.Row...) -> ChangeFeed.Batch {
    ChangeFeed.Batch(batch: rows[0].seq, event: ChangeEvent(rawValue: event), actor: "system", atMilliseconds: 0, rows: rows)
}

/// A one-row batch on a group topic at `seq`.
func groupBatch(_ seq: Int64, _ groupID: String = g1, doc: String = #"{"v":1}"#) -> ChangeFeed.Batch {
    batch("group_updated", row(seq, "group:\(groupID)", kind: "group", id: groupID, doc: doc))
}

/// Parses one JSON object message.
func json(_ bytes: [UInt8]) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:]
}

extension Array where Element == HubAction {
    /// The bytes sent to `id`, in order.
    func sent(to id: ConnectionID) -> [[UInt8]] {
        compactMap {
            switch $0 {
            case .send(id, let bytes): bytes
            case .broadcast(let ids, let bytes) where ids.contains(id): bytes
            default: nil
            }
        }
    }
    /// The messages sent to `id`, parsed.
    func messages(to id: ConnectionID) -> [[String: Any]] { sent(to: id).map(json) }
    /// `type` of each message sent to `id`.
    func types(to id: ConnectionID) -> [String] { messages(to: id).map { $0["type"] as? String ?? "?" } }
    /// `seq` of each message sent to `id` (0 when absent).
    func seqs(to id: ConnectionID) -> [Int64] { messages(to: id).map { ($0["seq"] as? NSNumber)?.int64Value ?? 0 } }
    /// Broadcast actions as (recipients, bytes).
    var broadcasts: [([ConnectionID], [UInt8])] { compactMap { if case .broadcast(let ids, let b) = $0 { (ids, b) } else { nil } } }
    /// Snapshot requests, in order.
    var snapshotRequests: [LoadRequest] { compactMap { if case .needSnapshot(let r) = $0 { r } else { nil } } }
    /// Replay requests, in order.
    var replayRequests: [(LoadRequest, Int64)] {
        compactMap { if case .needReplay(let r, let after) = $0 { (r, after) } else { nil } }
    }
    /// Close actions as (connection, code).
    var closes: [(ConnectionID, CloseCode)] { compactMap { if case .close(let id, let code, _) = $0 { (id, code) } else { nil } } }
}

/// A hub driven like the shell would, with helpers for the common steps.
struct Harness {
    var hub: RealtimeHub

    init(position: Int64 = 0, limits: RealtimeLimits = RealtimeLimits()) {
        hub = RealtimeHub(position: position, limits: limits)
    }

    /// Sends a client message given as JSON text.
    mutating func say(_ id: ConnectionID, _ text: String) -> [HubAction] {
        hub.receive(id, text: Array(text.utf8))
    }

    /// Connects `id` as `user` and subscribes to `topic`; returns the snapshot request.
    mutating func subscribe(_ id: ConnectionID, user: String, _ topic: String) -> LoadRequest? {
        _ = hub.connect(id, userID: user)
        return say(id, #"{"op":"subscribe","topic":"\#(topic)"}"#).snapshotRequests.first
    }

    /// Connects and subscribes, and delivers the snapshot at `seq`: the subscription is live.
    mutating func live(_ id: ConnectionID, user: String, _ topic: String, at seq: Int64) -> [HubAction] {
        guard let request = subscribe(id, user: user, topic) else { return [] }
        return hub.snapshotReady(request, seq: seq, data: Array(#"{"s":true}"#.utf8))
    }
}

/// `#require` for values computed by mutating calls (the macro cannot capture `inout` state).
func need<T>(_ value: T?, sourceLocation: SourceLocation = #_sourceLocation) throws -> T {
    try #require(value, sourceLocation: sourceLocation)
}

/// Filler batches on a topic nobody subscribes to, keeping the log's seqs dense.
func others(_ seqs: ClosedRange<Int64>) -> [ChangeFeed.Batch] {
    seqs.map { batch("profile_updated", row($0, "user:nobody", kind: "user", id: "nobody")) }
}
