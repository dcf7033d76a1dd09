import Domain
import Realtime
import SQLite
import Storage
import Store
import TestSupport
import Testing

/// The hub fed by real Store mutations through `ChangeFeed`, as the shell will drive it.
@Suite("Realtime — real change log", .serialized)
struct StoreFeedTests {
    let dir = TemporaryDirectory(prefix: "realtime")
    let db: SQLiteDatabase
    let secret = Array(repeating: UInt8(7), count: 32)

    init() throws {
        db = try SQLiteDatabase(path: dir.file(named: "t.sqlite"))
        _ = try MigrationRunner.migrate(db, migrations: Schema.migrations, nowMilliseconds: 1)
    }

    func register(_ name: String, tier: Tier = .free) throws -> User {
        try db.writeSync { c in
            try AccountStore.register(email: "\(name)@example.com", displayName: name, passwordHash: "h", tier: tier, at: 1, on: c)
        }
    }

    /// A group owned by `owner` that `members` joined with its invite code.
    func group(owner: User, members: [User]) throws -> String {
        try db.writeSync { c in
            let detail = try GroupStore.create(
                name: "G", description: nil, iconName: nil, colorTag: nil, maxMembers: 10, owner: owner, at: 2, on: c)
            let (code, _) = try InviteCodeStore.rotate(groupID: detail.group.id, actorID: owner.id, secret: secret, at: 3, on: c)
            for member in members {
                _ = try InviteCodeStore.join(codeHash: code.hash(secret: secret), user: member, clientIP: "ip", at: 4, on: c)
            }
            return detail.group.id
        }
    }

    /// What the shell does for `.needSnapshot`: access check and max seq in one read transaction
    /// (the data here is just the group detail).
    func serve(_ hub: inout RealtimeHub, _ actions: [HubAction]) throws -> [HubAction] {
        var out: [HubAction] = []
        for action in actions {
            switch action {
            case .needSnapshot(let request):
                let read: (Int64, [UInt8])? = try db.readSync { c in
                    let seq = try ChangeLog.latestSeq(on: c)
                    guard case .group(let id) = request.topic else { return (seq, Array("{}".utf8)) }
                    guard let (group, _) = try? GroupStore.access(groupID: id, userID: request.userID, on: c) else {
                        return nil
                    }
                    return (seq, DocumentCoding.encode(try GroupStore.detail(group, on: c)))
                }
                if let (seq, data) = read {
                    out += hub.snapshotReady(request, seq: seq, data: data)
                } else {
                    out += hub.accessDenied(request)
                }
            case .needReplay(let request, let after):
                let replay = try db.readSync { c in
                    try ChangeFeed.replay(
                        topic: request.topic.logName, after: after, maxRows: hub.limits.maxReplayRows, member: request.userID,
                        on: c)
                }
                out += hub.replayReady(request, replay)
            case .send, .broadcast, .close, .authenticate:
                out.append(action)
            }
        }
        return out
    }

    func poll(_ hub: inout RealtimeHub) throws -> [HubAction] {
        let position = hub.position
        return hub.ingest(try db.readSync { try ChangeFeed.batches(after: position, on: $0) })
    }

    @Test("ChangeFeed: batches grouped, per topic, never split by the limit; oldest retained seq")
    func feedReads() throws {
        let o = try register("o", tier: .premium)
        let a = try register("a")
        let g = try group(owner: o, members: [a])
        try db.readSync { c in
            let all = try ChangeFeed.batches(after: 0, on: c)
            #expect(
                all.map(\.event.rawValue) == [
                    "user_registered", "user_registered", "group_created", "invite_code_created", "member_joined",
                ])
            #expect(all.allSatisfy { b in b.rows.allSatisfy { _ in true } && b.rows.first?.seq == b.batch })
            let seqs = all.flatMap { $0.rows.map(\.seq) }
            #expect(seqs == Array(1...Int64(seqs.count)))
            let created = all[2]
            #expect(created.rows.count == 3)
            let limited = try ChangeFeed.batches(after: 2, limit: 1, on: c)
            #expect(limited.count == 1 && limited[0].rows.count == 3, "the batch is completed past the limit")
            let topic = try ChangeFeed.batches(after: 0, topic: "group:\(g)", on: c)
            #expect(topic.allSatisfy { $0.rows.allSatisfy { $0.change.topic == "group:\(g)" } })
            #expect(topic.map(\.event.rawValue) == ["group_created", "invite_code_created", "member_joined"])
            #expect(try ChangeFeed.oldestRetainedSeq(on: c) == 1)
            let replay = try ChangeFeed.replay(topic: "group:\(g)", after: 3, maxRows: 1000, on: c)
            #expect(replay.latestSeq == seqs.last && replay.oldestRetainedSeq == 1 && !replay.truncated)
            #expect(replay.reachesBack(to: 3))
            let topicRows = topic.reduce(0) { $0 + $1.rows.count }
            #expect(try !ChangeFeed.replay(topic: "group:\(g)", after: 0, maxRows: topicRows, on: c).truncated)
            #expect(try ChangeFeed.replay(topic: "group:\(g)", after: 0, maxRows: topicRows - 1, on: c).truncated)
            #expect(try ChangeFeed.replay(topic: "group:\(g)", after: 3, maxRows: 1000, member: a.id, on: c).accessChanged)
            #expect(try !ChangeFeed.replay(topic: "group:\(g)", after: seqs.last ?? 0, maxRows: 1000, member: a.id, on: c).accessChanged)
            #expect(
                try !ChangeFeed.replay(topic: "group:\(g)", after: 5, maxRows: 1000, member: o.id, on: c).accessChanged,
                "the owner gained access at 5")
        }
    }

    @Test("subscribe, mutate, remove a member: snapshot, changes, revoked in the same ingest, nothing after")
    func membersLifecycle() throws {
        let o = try register("o", tier: .premium)
        let a = try register("a")
        let b = try register("b")
        let g = try group(owner: o, members: [a, b])
        var hub = RealtimeHub(position: try db.readSync { try ChangeLog.latestSeq(on: $0) })
        _ = hub.connect(c1, userID: o.id)
        _ = hub.connect(c2, userID: a.id)
        _ = hub.connect(c3, userID: b.id)
        let outsider = ConnectionID(9)
        let stranger = try register("s")
        _ = hub.connect(outsider, userID: stranger.id)
        var out: [HubAction] = []
        for id in [c1, c2, c3, outsider] {
            out += try serve(&hub, hub.receive(id, text: Array(#"{"op":"subscribe","topic":"group:\#(g)"}"#.utf8)))
        }
        #expect(out.types(to: c1) == ["snapshot"])
        #expect(out.types(to: outsider) == ["error"])
        #expect(out.messages(to: outsider)[0]["code"] as? String == "not_found")

        _ = try db.writeSync { c in
            try GroupStore.update(
                groupID: g, actorID: o.id, name: "Renamed", description: nil, iconName: nil, colorTag: nil,
                expectedVersion: nil, at: 5, on: c)
        }
        let renamed = try poll(&hub)
        #expect(renamed.types(to: c1) == ["change"] && renamed.types(to: c2) == ["change"] && renamed.types(to: c3) == ["change"])
        #expect(renamed.sent(to: outsider).isEmpty)

        _ = try db.writeSync { c in try GroupStore.removeMember(groupID: g, actorID: o.id, targetID: a.id, at: 6, on: c) }
        let removed = try poll(&hub)
        #expect(removed.types(to: c2) == ["revoked"])
        #expect(removed.messages(to: c2)[0]["reason"] as? String == "access_revoked")
        #expect(removed.types(to: c1) == ["change"])
        let changes = removed.messages(to: c1)[0]["changes"] as? [[String: Any]] ?? []
        #expect(changes.map { $0["kind"] as? String } == ["member", "group"])

        _ = try db.writeSync { c in try GroupStore.removeMember(groupID: g, actorID: b.id, targetID: b.id, at: 7, on: c) }
        let left = try poll(&hub)
        #expect(left.messages(to: c3).map { $0["reason"] as? String } == ["left"])
        #expect(left.sent(to: c2).isEmpty, "a removed member receives nothing committed after the removal")

        _ = try db.writeSync { c in try GroupStore.delete(groupID: g, actorID: o.id, at: 8, on: c) }
        let deleted = try poll(&hub)
        #expect(deleted.messages(to: c1).map { $0["type"] as? String } == ["revoked"])
        #expect(deleted.messages(to: c1)[0]["reason"] as? String == "deleted")
    }

    @Test("resume over the real log: replay after since, then live; suspension closes 4003")
    func resumeAndSuspend() throws {
        let o = try register("o", tier: .premium)
        let a = try register("a")
        let g = try group(owner: o, members: [a])
        var hub = RealtimeHub(position: try db.readSync { try ChangeLog.latestSeq(on: $0) })
        _ = hub.connect(c1, userID: a.id)
        var out = try serve(&hub, hub.receive(c1, text: Array(#"{"op":"subscribe","topic":"group:\#(g)"}"#.utf8)))
        let snapshotSeq = try need(out.seqs(to: c1).first)
        hub.disconnect(c1)

        for at in Int64(10)...12 {
            _ = try db.writeSync { c in
                try GroupStore.update(
                    groupID: g, actorID: o.id, name: "N\(at)", description: nil, iconName: nil, colorTag: nil,
                    expectedVersion: nil, at: at, on: c)
            }
        }
        _ = try poll(&hub)
        _ = hub.connect(c2, userID: a.id)
        out = try serve(
            &hub, hub.receive(c2, text: Array(#"{"op":"subscribe","topic":"group:\#(g)","since":\#(snapshotSeq)}"#.utf8)))
        #expect(out.types(to: c2) == ["change", "change", "change"])
        let seqs = out.seqs(to: c2)
        #expect(seqs == seqs.sorted() && seqs.allSatisfy { $0 > snapshotSeq })
        #expect(out.messages(to: c2).map { ($0["changes"] as? [[String: Any]])?.first?["kind"] as? String } == ["group", "group", "group"])

        _ = try db.writeSync { c in
            try AccountStore.setStatus(userID: a.id, status: .suspended, actor: .admin, reason: "abuse", at: 20, on: c)
        }
        let suspended = try poll(&hub)
        #expect(suspended.closes.map(\.0) == [c2])
        #expect(suspended.closes.map(\.1) == [.sessionRevoked])
    }
}
