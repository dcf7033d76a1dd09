import Domain
import Foundation
import Realtime
import SQLite
import Storage
import Store
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// End to end over loopback, randomized: HTTP mutations (rename, roles, alarms created, edited,
/// answered, deleted, members removed and rejoining) interleave with subscribers that reconnect and
/// resume with `since` + `epoch`, some with permessage-deflate. Every subscriber keeps a replica of
/// the group topic built only from what the feed sent (snapshot, then changes); the checks:
///
/// - each `change` continues strictly after the replica's seq (no repeat, nothing out of order);
/// - a removed member's subscription gets `revoked`, and nothing for the topic afterwards;
/// - after a final sentinel change, every live replica equals a fresh snapshot read from the database;
/// - within each snapshot's segment (resumes included) the changes received are exactly the topic's
///   batches in the log between the snapshot and the last change — no gap, even where later whole
///   documents would hide one.
///
/// The mutations come from a seeded generator, so a failure names the seed that reproduces it.
@Suite("Realtime feed — randomized model over loopback")
struct RealtimeModelTests {
    typealias Feed = RealtimeTests.Feed

    enum Violation: Error, CustomStringConvertible {
        case seqNotAfter(String, got: Int, had: Int)
        case unexpected(String, String)
        case after(String, String)
        var description: String {
            switch self {
            case .seqNotAfter(let who, let got, let had): "\(who): change seq \(got) not after \(had)"
            case .unexpected(let who, let what): "\(who): unexpected \(what)"
            case .after(let who, let what): "\(who): \(what) after revoked"
            }
        }
    }

    /// One subscriber's view of `group:<id>`, built only from feed messages. Used from one blocking
    /// closure at a time.
    final class Replica: @unchecked Sendable {
        let name: String
        let token: String
        let port: Int
        let topic: String
        let deflate: Bool
        private(set) var feed: Feed?
        var seq = -1
        var epoch: String?
        var subscribed = false
        var revokedReason: String?
        var group: [String: Any] = [:]
        var members: [String: [String: Any]] = [:]
        var alarms: [String: [String: Any]] = [:]
        var completions: Set<String> = []
        var snapshots = 0, changes = 0
        /// Per snapshot: its seq, then the seqs of the changes applied on top of it (resumes continue
        /// the segment). Checked against the log for gaps.
        var segments: [[Int]] = []

        init(name: String, token: String, port: Int, topic: String, deflate: Bool) {
            self.name = name
            self.token = token
            self.port = port
            self.topic = topic
            self.deflate = deflate
        }

        /// A new socket subscribing to the topic; with `resume`, from the replica's seq and epoch.
        func connect(resume: Bool) throws {
            feed?.close()
            let feed = try Feed(port: port, token: token, deflate: deflate)
            guard feed.status == 101 else { throw Violation.unexpected(name, "handshake \(feed.status)") }
            var subscribe = #"{"op":"subscribe","topic":"\#(topic)""#
            if resume, seq >= 0, let epoch { subscribe += #","since":\#(seq),"epoch":"\#(epoch)""# }
            try feed.send(subscribe + "}")
            self.feed = feed
            subscribed = true
            revokedReason = nil
        }

        func close() { feed?.close() }

        /// Reads and applies messages until `done` holds after one (bounded by the feed's timeouts).
        func pump(until done: () -> Bool) throws {
            guard let feed else { throw Violation.unexpected(name, "no socket") }
            var reads = 0
            while !done() {
                reads += 1
                guard reads < 10_000 else { throw Violation.unexpected(name, "no progress") }
                try apply(feed.next().object)
            }
        }

        func apply(_ m: [String: Any]) throws {
            let type = m["type"] as? String ?? ""
            guard m["topic"] as? String == topic || m["topic"] == nil else { return }
            switch type {
            case "snapshot":
                guard subscribed else { throw Violation.after(name, "snapshot") }
                let data = m["data"] as? [String: Any] ?? [:]
                group = data["group"] as? [String: Any] ?? [:]
                members = Dictionary(
                    uniqueKeysWithValues: (data["members"] as? [[String: Any]] ?? []).map { ($0["user_id"] as? String ?? "", $0) })
                alarms = Dictionary(
                    uniqueKeysWithValues: (data["alarms"] as? [[String: Any]] ?? []).map { ($0["id"] as? String ?? "", $0) })
                completions = Set((data["recent_completions"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
                seq = m["seq"] as? Int ?? -1
                epoch = m["epoch"] as? String
                snapshots += 1
                segments.append([seq])
            case "change":
                guard subscribed else { throw Violation.after(name, "change \(m["seq"] ?? "?")") }
                let next = m["seq"] as? Int ?? -1
                guard next > seq else { throw Violation.seqNotAfter(name, got: next, had: seq) }
                seq = next
                changes += 1
                segments[segments.count - 1].append(next)
                for row in m["changes"] as? [[String: Any]] ?? [] { try applyRow(row) }
            case "revoked":
                subscribed = false
                revokedReason = m["reason"] as? String
            case "error" where m["code"] as? String == "not_found" && subscribed:
                // A (re)subscription whose read ran after the removal committed: denied rather than
                // revoked (the hub cannot tell it from never having had access). Same end state.
                subscribed = false
                revokedReason = "not_found"
            case "error":
                throw Violation.unexpected(name, "error \(m)")
            default:
                break  // presence, pong
            }
        }

        func applyRow(_ row: [String: Any]) throws {
            let op = row["op"] as? String
            let id = row["id"] as? String ?? ""
            let doc = row["doc"] as? [String: Any]
            if let reason = row["reason"] as? String, RemovalReason(rawValue: reason) == nil {
                throw Violation.unexpected(name, "untyped reason \(reason)")
            }
            switch row["kind"] as? String {
            case "group":
                if let doc { group = doc }
            case "member":
                guard let doc, let userID = doc["user_id"] as? String else { return }
                members[userID] = doc["status"] as? String == "active" ? doc : nil
            case "shared_alarm":
                alarms[id] = op == "removed" ? nil : doc
            case "shared_completion":
                if op == "added" { completions.insert(id) }
            default:
                break  // invite_code, missed_occurrence: not part of the snapshot
            }
        }
    }

    @Test("replicas built from snapshot + changes equal the database after random mutations", arguments: [1, 2, 3] as [UInt64])
    func randomized(seed: UInt64) async throws {
        var rng = SplitMix64(seed: seed)
        let f = try await SharedAlarmFixture.make(members: 4)
        let h = f.h
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.loopCount = 2
        let server = HTTPServer(configuration: configuration, responder: h.app)
        let port = try server.start()
        defer { server.shutdown() }
        let topic = "group:\(f.groupID)"
        let accounts = [f.owner] + f.members
        let replicas = accounts.enumerated().map { i, a in
            Replica(name: "seed \(seed) \(a.email)", token: a.token, port: port, topic: topic, deflate: i % 2 == 1)
        }
        defer { replicas.forEach { $0.close() } }
        try await blocking {
            for r in replicas {
                try r.connect(resume: false)
                try r.pump { r.seq >= 0 }
            }
        }
        var active = Set(1..<accounts.count)  // indices of non-owner members
        var removed = Set<Int>()
        var alarmIDs: [String] = []
        var answers = 0

        for step in 0..<60 {
            h.clock.advance(by: 15_000)  // 15 min in all: under 5 alarm creations a minute, before 10:00's fire
            let roll = Int.random(in: 0..<100, using: &rng)
            switch roll {
            case 0..<10:
                try await h.expect(200, .patch, f.g, json: #"{"name":"Home \#(step)"}"#, token: f.owner.token)
            case 10..<22 where alarmIDs.count < 6:
                let assignees = active.filter { _ in Bool.random(using: &rng) }.sorted().map { accounts[$0] }
                let alarm = try await f.createAlarm(rule: Bool.random(using: &rng) ? "any" : "all", assignees: assignees)
                if let id = alarm["id"] as? String { alarmIDs.append(id) }
            case 22..<30 where !alarmIDs.isEmpty:
                let id = alarmIDs.randomElement(using: &rng)!
                try await h.expect(200, .patch, "\(f.g)/alarms/\(id)", json: #"{"title":"Chore \#(step)"}"#, token: f.owner.token)
            case 30..<55 where !alarmIDs.isEmpty && answers < 40:
                let who = ([0] + active.sorted()).randomElement(using: &rng)!
                let reply = await f.answer(
                    alarmIDs.randomElement(using: &rng)!, by: accounts[who],
                    status: Bool.random(using: &rng) ? "completed" : "skipped")
                #expect(reply.status < 500, "\(reply.text)")
                if reply.status == 201 || reply.status == 200 { answers += 1 }
            case 55..<60 where !alarmIDs.isEmpty:
                let id = alarmIDs.remove(at: Int.random(in: 0..<alarmIDs.count, using: &rng))
                try await h.expect(204, .delete, "\(f.g)/alarms/\(id)", token: f.owner.token)
            case 60..<68 where !active.isEmpty:
                let who = active.randomElement(using: &rng)!
                let role = Bool.random(using: &rng) ? "admin" : "member"
                try await h.expect(
                    200, .patch, "\(f.g)/members/\(accounts[who].id)", json: #"{"role":"\#(role)"}"#, token: f.owner.token)
            case 68..<76 where active.count > 1:
                let who = active.randomElement(using: &rng)!
                try await h.expect(204, .delete, "\(f.g)/members/\(accounts[who].id)", token: f.owner.token)
                active.remove(who)
                removed.insert(who)
                let r = replicas[who]
                try await blocking { try r.pump { !r.subscribed } }
                #expect(["access_revoked", "not_found"].contains(r.revokedReason), "\(r.name)")
            case 76..<84 where !removed.isEmpty:
                let who = removed.randomElement(using: &rng)!
                let code = try await h.inviteCode(f.groupID, token: f.owner.token)
                h.clock.advance(by: 1000)
                let joined = await h.join(code, token: accounts[who].token)
                #expect(joined.status == 200, "\(joined.text)")
                removed.remove(who)
                active.insert(who)
                let r = replicas[who]
                try await blocking {
                    try r.connect(resume: false)
                    try r.pump { r.subscribed && r.seq >= 0 && r.snapshots > 0 && r.members[accounts[who].id] != nil }
                }
            case 84..<100:
                let who = ([0] + active.sorted()).randomElement(using: &rng)!
                let r = replicas[who]
                try await blocking { try r.connect(resume: true) }
            default:
                break
            }
        }

        // A sentinel change, committed last: every live replica has applied everything before it once
        // it has applied the sentinel.
        let sentinel = "final \(seed)"
        try await h.expect(200, .patch, f.g, json: #"{"name":"\#(sentinel)"}"#, token: f.owner.token)
        let live = ([0] + active.sorted()).map { replicas[$0] }
        let gone = removed.sorted().map { replicas[$0] }
        try await blocking {
            for r in live { try r.pump { r.group["name"] as? String == sentinel } }
            // Removed members: a ping round trip after the sentinel; nothing for the topic may come first.
            for r in gone {
                try r.feed?.send(#"{"op":"ping","id":1}"#)
                while true {
                    let m = try r.feed!.next().object
                    if m["type"] as? String == "pong" { break }
                    try r.apply(m)
                }
            }
        }

        let now = h.clock.nowMilliseconds()
        let (_, data) = try h.database.readSync { db in
            try RealtimeSnapshots.read(.group(f.groupID), userID: f.owner.id, at: now, on: db)
        }
        let truth = try #require(try JSONSerialization.jsonObject(with: Data(data)) as? [String: Any])
        let truthMembers = Dictionary(
            uniqueKeysWithValues: (truth["members"] as? [[String: Any]] ?? []).map { ($0["user_id"] as? String ?? "", $0) })
        let truthAlarms = Dictionary(
            uniqueKeysWithValues: (truth["alarms"] as? [[String: Any]] ?? []).map { ($0["id"] as? String ?? "", $0) })
        let truthCompletions = Set((truth["recent_completions"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
        #expect(truthCompletions.count < RealtimeSnapshots.recentCompletions, "the comparison needs every completion")
        for r in live {
            #expect(NSDictionary(dictionary: r.group).isEqual(to: truth["group"] as? [String: Any] ?? [:]), "\(r.name) group")
            #expect(NSDictionary(dictionary: r.members).isEqual(to: truthMembers), "\(r.name) members")
            #expect(NSDictionary(dictionary: r.alarms).isEqual(to: truthAlarms), "\(r.name) alarms")
            #expect(r.completions == truthCompletions, "\(r.name) completions")
        }
        #expect(replicas.map(\.changes).reduce(0, +) > 50, "the run exercised the change path")

        let topicSeqs = try h.database.readSync { db in
            try db.query("SELECT MAX(seq) AS s FROM change_log WHERE topic = ?1 GROUP BY batch ORDER BY s", [.text(topic)])
                .compactMap { $0.int("s") }
        }
        for r in replicas {
            for segment in r.segments where segment.count > 1 {
                let base = segment[0]
                let received = Array(segment.dropFirst())
                let expected = topicSeqs.filter { $0 > base && $0 <= received[received.count - 1] }
                #expect(received == expected.map { Int($0) }, "\(r.name): changes after snapshot \(base)")
            }
        }
    }

}
