import Domain
import Foundation
import Realtime
import Store
import TestSupport
import Testing

/// A randomized model test: a writer commits batches to one group topic while clients subscribe,
/// unsubscribe, reconnect with `since`, fall behind and drain, and the shell's reads complete late or
/// early. Every client checks each change continues exactly from its last seq (no gap, no repeat),
/// and at the end each client's reconstructed state equals the "database".
@Suite("Realtime hub — randomized model")
struct ModelTests {

    /// The database: a log of one-row batches on `group1`, entity `e<k>` set to the batch's seq.
    struct Log {
        var batches: [ChangeFeed.Batch] = []
        var oldest: Int64 = 1
        var latest: Int64 { batches.last?.lastSeq ?? 0 }

        mutating func commit(entity: Int) {
            let seq = latest + 1
            batches.append(batch("group_updated", row(seq, group1, kind: "item", id: "e\(entity)", doc: #"{"v":\#(seq)}"#)))
        }

        func state(at seq: Int64) -> [String: Int64] {
            var s: [String: Int64] = [:]
            for b in batches where b.lastSeq <= seq { for r in b.rows { s[r.change.entityID] = r.seq } }
            return s
        }

        func snapshotData(at seq: Int64) -> [UInt8] {
            let body = state(at: seq).sorted { $0.key < $1.key }.map { #""\#($0.key)":\#($0.value)"# }.joined(separator: ",")
            return Array("{\(body)}".utf8)
        }

        func replay(after since: Int64, maxRows: Int) -> ChangeFeed.Replay {
            let after = batches.filter { $0.lastSeq > since }
            return ChangeFeed.Replay(
                oldestRetainedSeq: batches.isEmpty ? nil : oldest, latestSeq: latest,
                batches: after.count > maxRows ? [] : after, truncated: after.count > maxRows)
        }
    }

    /// A client's view, rebuilt only from the messages it received.
    struct Client {
        var connection: ConnectionID
        var subscribed = false
        var state: [String: Int64]?
        var seq: Int64?
        var failures: [String] = []
        var counts: [String: Int] = [:]

        mutating func receive(_ message: [String: Any], log: Log) {
            let seq = (message["seq"] as? NSNumber)?.int64Value ?? -1
            let type = message["type"] as? String ?? "?"
            counts[type + (message["reset"] as? Bool == true ? "+reset" : ""), default: 0] += 1
            switch message["type"] as? String {
            case "snapshot":
                let data = message["data"] as? [String: Any] ?? [:]
                state = data.mapValues { ($0 as? NSNumber)?.int64Value ?? -1 }
                if let old = self.seq, seq < old, message["reset"] as? Bool != true {
                    failures.append("snapshot went back from \(old) to \(seq)")
                }
                self.seq = seq
            case "change":
                guard let current = self.seq, state != nil else { return failures.append("change before snapshot") }
                let expected = log.batches.first { $0.lastSeq > current }?.lastSeq
                if seq != expected { failures.append("change \(seq) after \(current), expected \(expected ?? -1)") }
                for change in message["changes"] as? [[String: Any]] ?? [] {
                    let id = change["id"] as? String ?? "?"
                    state?[id] = ((change["doc"] as? [String: Any])?["v"] as? NSNumber)?.int64Value
                }
                self.seq = seq
            default:
                failures.append("unexpected \(message)")
            }
        }
    }

    struct PendingRead {
        var request: LoadRequest
        var since: Int64?
        /// Read early: the result reflects the log at this seq (nil: read when completed).
        var readAt: Int64?
    }

    @Test("exactly once, in order, state equal to the database", arguments: 0..<24)
    func model(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var limits = RealtimeLimits()
        limits.softOutboundBytes = 600
        limits.hardOutboundBytes = 1_000_000
        limits.resumeOutboundBytes = 100
        limits.maxHeldChanges = 3
        limits.maxReplayRows = 4
        var log = Log()
        var ingested = 0
        var hub = RealtimeHub(position: 0, limits: limits)
        var clients = (0..<3).map { Client(connection: ConnectionID(UInt64($0 + 1))) }
        var nextConnection: UInt64 = 100
        var pending: [PendingRead] = []
        for client in clients { _ = hub.connect(client.connection, userID: "u") }

        func apply(_ actions: [HubAction]) {
            for action in actions {
                switch action {
                case .send(let id, let bytes):
                    if let i = clients.firstIndex(where: { $0.connection == id }) { clients[i].receive(json(bytes), log: log) }
                case .broadcast(let ids, let bytes):
                    for id in ids {
                        if let i = clients.firstIndex(where: { $0.connection == id }) { clients[i].receive(json(bytes), log: log) }
                    }
                case .needSnapshot(let request):
                    pending.append(PendingRead(request: request, since: nil, readAt: Bool.random(using: &rng) ? log.latest : nil))
                case .needReplay(let request, let since):
                    pending.append(PendingRead(request: request, since: since, readAt: Bool.random(using: &rng) ? log.latest : nil))
                case .close(let id, _, _):
                    Issue.record("unexpected close of \(id)")
                case .authenticate:
                    Issue.record("unexpected authenticate")
                }
            }
        }

        func complete(_ read: PendingRead) {
            let at = read.readAt ?? log.latest
            if let since = read.since {
                var replay = log.replay(after: since, maxRows: limits.maxReplayRows)
                replay.latestSeq = at
                replay.batches = replay.batches.filter { $0.lastSeq <= at }
                apply(hub.replayReady(read.request, replay))
            } else {
                apply(hub.snapshotReady(read.request, seq: at, data: log.snapshotData(at: at)))
            }
        }

        for _ in 0..<400 {
            let c = Int.random(in: 0..<clients.count, using: &rng)
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<30:
                log.commit(entity: Int.random(in: 0..<5, using: &rng))
            case 30..<45:
                let upTo = Int.random(in: ingested...log.batches.count, using: &rng)
                apply(hub.ingest(Array(log.batches[ingested..<upTo])))
                ingested = upTo
            case 45..<60:
                if !pending.isEmpty { complete(pending.remove(at: Int.random(in: 0..<pending.count, using: &rng))) }
            case 60..<70:
                if !clients[c].subscribed {
                    clients[c].subscribed = true
                    let since = clients[c].seq.map { #","since":\#($0)"# } ?? ""
                    apply(hub.receive(clients[c].connection, text: Array(#"{"op":"subscribe","topic":"\#(group1)"\#(since)}"#.utf8)))
                }
            case 70..<75:
                if clients[c].subscribed {
                    clients[c].subscribed = false
                    apply(hub.receive(clients[c].connection, text: Array(#"{"op":"unsubscribe","topic":"\#(group1)"}"#.utf8)))
                }
            case 75..<82:
                // Reconnect: a new socket; the client keeps its state and resumes with since.
                hub.disconnect(clients[c].connection)
                nextConnection += 1
                clients[c].connection = ConnectionID(nextConnection)
                clients[c].subscribed = false
                apply(hub.connect(clients[c].connection, userID: "u"))
            case 82..<90:
                apply(hub.outboundBuffered(clients[c].connection, bytes: 700))
            case 90..<97:
                apply(hub.outboundBuffered(clients[c].connection, bytes: 0))
            default:
                if Int64(log.batches.count) > 2 { log.oldest = min(log.latest, log.oldest + 2) }
            }
        }
        // Quiesce: everything ingested, every socket drained, every read answered.
        apply(hub.ingest(Array(log.batches[ingested...])))
        for client in clients { apply(hub.outboundBuffered(client.connection, bytes: 0)) }
        var rounds = 0
        while !pending.isEmpty && rounds < 100 {
            rounds += 1
            complete(pending.removeFirst())
            for client in clients { apply(hub.outboundBuffered(client.connection, bytes: 0)) }
        }
        #expect(pending.isEmpty)
        let truth = log.state(at: log.latest)
        var totals: [String: Int] = [:]
        for client in clients { totals.merge(client.counts, uniquingKeysWith: +) }
        #expect(totals["change", default: 0] > 0 && totals["snapshot", default: 0] > 0, "seed \(seed) exercises the feed")
        if ProcessInfo.processInfo.environment["MODEL_STATS"] != nil {
            print("seed \(seed): \(totals.sorted { $0.key < $1.key }) subscribed \(clients.filter(\.subscribed).count)")
        }
        for client in clients {
            #expect(client.failures.isEmpty, "seed \(seed): \(client.failures)")
            guard client.subscribed else { continue }
            #expect(client.seq == log.latest, "seed \(seed)")
            #expect(client.state == truth, "seed \(seed)")
        }
    }
}
