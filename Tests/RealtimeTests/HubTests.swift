import Domain
import Realtime
import Store
import Testing

let c1 = ConnectionID(1)
let c2 = ConnectionID(2)
let c3 = ConnectionID(3)
let group1 = "group:\(g1)"

@Suite("Realtime hub — snapshot then changes")
struct SnapshotOrderingTests {
    @Test("changes before, equal to and after S while loading: only those after S follow the snapshot")
    func raceWhileLoading() throws {
        var h = Harness(position: 4)
        let request = try need(h.subscribe(c1, user: "u1", group1))
        #expect(request.topic == .group(g1))
        let during = h.hub.ingest([groupBatch(5)] + others(6...6) + [groupBatch(7)] + others(8...8) + [groupBatch(9)])
        #expect(during.sent(to: c1).isEmpty, "held while loading")
        #expect(h.hub.heldChangeCount(c1, .group(g1)) == 3)
        let ready = h.hub.snapshotReady(request, seq: 7, data: Array("{}".utf8))
        #expect(ready.types(to: c1) == ["snapshot", "change"])
        #expect(ready.seqs(to: c1) == [7, 9])
        let later = h.hub.ingest([groupBatch(9)] + others(10...10) + [groupBatch(11)])
        #expect(later.seqs(to: c1) == [11], "a batch at or below position is never delivered twice")
    }

    @Test("a snapshot ahead of the ingest position: changes up to S are dropped, later ones sent")
    func snapshotAhead() throws {
        var h = Harness(position: 10)
        _ = h.live(c1, user: "u1", group1, at: 20)
        #expect(h.hub.ingest(others(11...14) + [groupBatch(15)] + others(16...19) + [groupBatch(20)]).sent(to: c1).isEmpty)
        #expect(h.hub.ingest([groupBatch(21)]).seqs(to: c1) == [21])
    }

    @Test("a read older than the position at subscribe (would leave a gap) is requested again")
    func readBelowFloor() throws {
        var h = Harness(position: 10)
        let request = try need(h.subscribe(c1, user: "u1", group1))
        #expect(request.userID == "u1")
        let again = h.hub.snapshotReady(request, seq: 9, data: Array("{}".utf8))
        #expect(again.sent(to: c1).isEmpty)
        let retry = try need(again.snapshotRequests.first)
        #expect(h.hub.snapshotReady(retry, seq: 10, data: Array("{}".utf8)).seqs(to: c1) == [10])
    }

    @Test("a gap in the ingested log: live subscriptions re-read a reset snapshot instead of skipping")
    func gap() throws {
        var h = Harness(position: 1)
        _ = h.live(c1, user: "u1", group1, at: 1)
        let out = h.hub.ingest([groupBatch(3)])
        #expect(out.sent(to: c1).isEmpty)
        let request = try need(out.snapshotRequests.first)
        let loading = try need(h.subscribe(c2, user: "u2", group1))
        _ = h.hub.ingest([groupBatch(5)])
        let early = h.hub.snapshotReady(loading, seq: 3, data: Array("{}".utf8))
        #expect(early.sent(to: c2).isEmpty && early.snapshotRequests.count == 1, "a read before the gap is not enough")
        let ready = h.hub.snapshotReady(request, seq: 5, data: Array("{}".utf8))
        #expect(ready.types(to: c1) == ["snapshot"])
        #expect(ready.messages(to: c1)[0]["reset"] as? Bool == true)
        #expect(h.hub.ingest([groupBatch(6)]).seqs(to: c1) == [6])
    }

    @Test("a stale read result (after unsubscribe and resubscribe) is ignored")
    func staleTicket() throws {
        var h = Harness()
        let first = try need(h.subscribe(c1, user: "u1", group1))
        _ = h.say(c1, #"{"op":"unsubscribe","topic":"\#(group1)"}"#)
        let second = try need(h.say(c1, #"{"op":"subscribe","topic":"\#(group1)"}"#).snapshotRequests.first)
        #expect(h.hub.snapshotReady(first, seq: 3, data: Array("{}".utf8)).isEmpty)
        #expect(h.hub.snapshotReady(second, seq: 4, data: Array("{}".utf8)).seqs(to: c1) == [4])
    }

    @Test("unsubscribe stops delivery at once; a pending read is ignored")
    func unsubscribe() throws {
        var h = Harness(position: 1)
        _ = h.live(c1, user: "u1", group1, at: 1)
        #expect(h.hub.ingest([groupBatch(2)]).seqs(to: c1) == [2])
        #expect(h.say(c1, #"{"op":"unsubscribe","topic":"\#(group1)"}"#).isEmpty)
        #expect(h.hub.ingest([groupBatch(3)]).isEmpty)
        #expect(h.hub.topics(of: c1).isEmpty)
        let pending = try need(h.say(c1, #"{"op":"subscribe","topic":"\#(group1)"}"#).snapshotRequests.first)
        _ = h.hub.ingest([groupBatch(4)])
        #expect(h.hub.heldChangeCount(c1, .group(g1)) == 1)
        _ = h.say(c1, #"{"op":"unsubscribe","topic":"\#(group1)"}"#)
        #expect(h.hub.heldChangeCount(c1, .group(g1)) == 0, "held changes freed with the subscription")
        #expect(h.hub.snapshotReady(pending, seq: 4, data: []).isEmpty)
        #expect(h.say(c1, #"{"op":"unsubscribe","topic":"user"}"#).isEmpty, "unsubscribing an unknown topic is a no-op")
    }

    @Test("a second subscribe to the same topic is refused")
    func duplicate() {
        var h = Harness()
        _ = h.live(c1, user: "u1", group1, at: 1)
        let again = h.say(c1, #"{"op":"subscribe","topic":"\#(group1)","id":"x"}"#)
        #expect(again.messages(to: c1).first?["code"] as? String == "already_subscribed")
        #expect(again.messages(to: c1).first?["id"] as? String == "x")
        #expect(again.snapshotRequests.isEmpty)
    }

    @Test("access denied: error not_found naming the topic; the subscription is gone")
    func denied() throws {
        var h = Harness()
        _ = h.hub.connect(c1, userID: "u1")
        let request = try need(h.say(c1, #"{"op":"subscribe","topic":"\#(group1)","id":"s1"}"#).snapshotRequests.first)
        let out = h.hub.accessDenied(request)
        #expect(out.messages(to: c1).first?["id"] as? String == "s1", "the subscribe's id is echoed")
        #expect(out.types(to: c1) == ["error"])
        #expect(out.messages(to: c1)[0]["code"] as? String == "not_found")
        #expect(out.messages(to: c1)[0]["topic"] as? String == group1)
        #expect(h.hub.topics(of: c1).isEmpty)
        #expect(h.hub.ingest([groupBatch(1)]).isEmpty)
    }

    @Test("read failed: error unavailable (not not_found), subscription gone, not a protocol error; may subscribe again")
    func readFailed() throws {
        var h = Harness(
            limits: {
                var l = RealtimeLimits()
                l.maxProtocolErrors = 0
                return l
            }())
        _ = h.hub.connect(c1, userID: "u1")
        let request = try need(h.say(c1, #"{"op":"subscribe","topic":"\#(group1)","id":"s1"}"#).snapshotRequests.first)
        let out = h.hub.readFailed(request)
        #expect(out.types(to: c1) == ["error"], "no close: a failed read is not the client's fault")
        #expect(out.messages(to: c1)[0]["code"] as? String == "unavailable")
        #expect(out.messages(to: c1)[0]["topic"] as? String == group1)
        #expect(out.messages(to: c1)[0]["id"] as? String == "s1")
        #expect(h.hub.topics(of: c1).isEmpty)
        #expect(h.hub.readFailed(request).isEmpty, "a result for a request no longer waited for is ignored")
        #expect(h.hub.ingest([groupBatch(1)]).isEmpty)
        let again = try need(h.say(c1, #"{"op":"subscribe","topic":"\#(group1)"}"#).snapshotRequests.first)
        #expect(h.hub.snapshotReady(again, seq: 1, data: Array("{}".utf8)).types(to: c1) == ["snapshot"])
    }
}

@Suite("Realtime hub — resume with since")
struct ResumeTests {
    func replay(oldest: Int64?, latest: Int64, _ batches: [ChangeFeed.Batch] = [], truncated: Bool = false) -> ChangeFeed.Replay {
        ChangeFeed.Replay(oldestRetainedSeq: oldest, latestSeq: latest, batches: batches, truncated: truncated)
    }

    func resume(_ h: inout Harness, since: Int64) throws -> LoadRequest {
        _ = h.hub.connect(c1, userID: "u1")
        let out = h.say(c1, #"{"op":"subscribe","topic":"\#(group1)","since":\#(since)}"#)
        let (request, after) = try need(out.replayRequests.first)
        #expect(after == since)
        #expect(out.snapshotRequests.isEmpty)
        return request
    }

    @Test("log reaches back: exactly the batches after since, then held changes after the read")
    func replays() throws {
        var h = Harness(position: 8)
        let request = try resume(&h, since: 5)
        #expect(h.hub.ingest([groupBatch(9)] + others(10...11) + [groupBatch(12)]).isEmpty)
        let out = h.hub.replayReady(request, replay(oldest: 1, latest: 10, [groupBatch(6), groupBatch(9)]))
        #expect(out.types(to: c1) == ["change", "change", "change"])
        #expect(out.seqs(to: c1) == [6, 9, 12])
        #expect(h.hub.ingest([groupBatch(13)]).seqs(to: c1) == [13])
    }

    @Test("oldest retained = since + 1 replays; since + 2 resets")
    func boundary() throws {
        var h = Harness(position: 10)
        let ok = try resume(&h, since: 5)
        #expect(h.hub.replayReady(ok, replay(oldest: 6, latest: 10, [groupBatch(6)])).seqs(to: c1) == [6])

        var h2 = Harness(position: 10)
        let gone = try resume(&h2, since: 5)
        let out = h2.hub.replayReady(gone, replay(oldest: 7, latest: 10, [groupBatch(7)]))
        #expect(out.sent(to: c1).isEmpty, "nothing replayed when a row may be missing")
        let snapshot = try need(out.snapshotRequests.first)
        let ready = h2.hub.snapshotReady(snapshot, seq: 10, data: Array("{}".utf8))
        #expect(ready.types(to: c1) == ["snapshot"])
        #expect(ready.messages(to: c1)[0]["reset"] as? Bool == true)
    }

    @Test("since ahead of the log (restored database) and truncated replays reset")
    func resets() throws {
        var h = Harness(position: 10)
        let ahead = try resume(&h, since: 50)
        #expect(h.hub.replayReady(ahead, replay(oldest: 1, latest: 10)).snapshotRequests.count == 1)
        var h2 = Harness(position: 10)
        let long = try resume(&h2, since: 0)
        #expect(h2.hub.replayReady(long, replay(oldest: 1, latest: 10, truncated: true)).snapshotRequests.count == 1)
    }

    @Test("access changed after since (removed and rejoined): a reset snapshot, never the replay")
    func accessChanged() throws {
        var h = Harness(position: 10)
        let request = try resume(&h, since: 5)
        let out = h.hub.replayReady(
            request, ChangeFeed.Replay(oldestRetainedSeq: 1, latestSeq: 10, batches: [groupBatch(7)], truncated: false, accessChanged: true)
        )
        #expect(out.sent(to: c1).isEmpty)
        #expect(out.snapshotRequests.count == 1)
    }

    @Test("a replay read older than the position at subscribe is requested again")
    func replayBelowFloor() throws {
        var h = Harness(position: 10)
        let request = try resume(&h, since: 5)
        let out = h.hub.replayReady(request, replay(oldest: 1, latest: 9, [groupBatch(7)]))
        #expect(out.sent(to: c1).isEmpty)
        #expect(out.replayRequests.map(\.1) == [5])
    }

    @Test("epoch: snapshots name it; a resume from another epoch is a reset snapshot, from the same one a replay")
    func epoch() throws {
        var h = Harness()
        h.hub = RealtimeHub(position: 10, epoch: "E2")
        _ = h.hub.connect(c1, userID: "u1")
        let other = h.say(c1, #"{"op":"subscribe","topic":"\#(group1)","since":5,"epoch":"E1"}"#)
        #expect(other.replayRequests.isEmpty)
        let request = try need(other.snapshotRequests.first)
        let ready = h.hub.snapshotReady(request, seq: 10, data: Array("{}".utf8))
        #expect(ready.messages(to: c1).first?["epoch"] as? String == "E2")
        #expect(ready.messages(to: c1).first?["reset"] as? Bool == true)
        #expect(h.say(c1, #"{"op":"subscribe","topic":"user","since":5,"epoch":"E2"}"#).replayRequests.count == 1)
    }

    @Test("up to date: nothing to replay, then live")
    func upToDate() throws {
        var h = Harness(position: 10)
        let request = try resume(&h, since: 10)
        #expect(h.hub.replayReady(request, replay(oldest: 1, latest: 10)).isEmpty)
        #expect(h.hub.ingest([groupBatch(11)]).seqs(to: c1) == [11])
    }
}

@Suite("Realtime hub — fan-out")
struct FanOutTests {
    @Test("one change per (batch, topic), seq = the topic's highest row, same bytes for every subscriber")
    func perTopicSingleEncoding() throws {
        var h = Harness()
        for (id, user) in [(c1, "u1"), (c2, "u2"), (c3, "u3")] { _ = h.live(id, user: user, group1, at: 0) }
        _ = h.say(c1, #"{"op":"subscribe","topic":"user"}"#).snapshotRequests.first.map {
            h.hub.snapshotReady($0, seq: 0, data: [])
        }
        let out = h.hub.ingest([
            batch(
                "group_created", row(1, group1, kind: "group", id: g1), row(2, group1, kind: "member", id: "m"),
                row(3, "user:u1", kind: "group", op: .added, id: g1), row(4, "user:u2", kind: "group", op: .added, id: g1))
        ])
        #expect(out.types(to: c1) == ["change", "change"])
        #expect(out.seqs(to: c1) == [2, 3])
        #expect(out.types(to: c2) == ["change"], "u2 has no user subscription")
        #expect(out.broadcasts.map(\.0) == [[c1, c2, c3], [c1]], "one action per (batch, topic), all recipients")
        #expect(out.count == 2, "encoded once, not once per subscriber")
        let bytes = [c1, c2, c3].map { out.sent(to: $0)[0] }
        #expect(bytes[0] == bytes[1] && bytes[1] == bytes[2])
        let change = out.messages(to: c1)[0]
        #expect(change["event"] as? String == "group_created")
        #expect((change["changes"] as? [Any])?.count == 2)
        #expect(out.messages(to: c1)[1]["topic"] as? String == "user")
    }

    @Test("a topic with no subscriber is not encoded; other groups are not delivered")
    func otherTopics() {
        var h = Harness()
        _ = h.live(c1, user: "u1", group1, at: 0)
        #expect(h.hub.ingest([groupBatch(1, g2)]).isEmpty)
        #expect(h.hub.position == 1)
    }

    @Test("ping is answered with pong, with its id")
    func ping() {
        var h = Harness()
        _ = h.hub.connect(c1, userID: "u1")
        #expect(h.say(c1, #"{"op":"ping","id":9}"#).messages(to: c1).first?["id"] as? Int == 9)
    }
}

@Suite("Realtime hub — revocation and account closes")
struct RevocationTests {
    func removal(_ seq: Int64, user: String, event: String = "member_removed", reason: String = "removed") -> ChangeFeed.Batch {
        batch(
            event, row(seq, group1, kind: "member", id: "\(g1):\(user)"), row(seq + 1, group1, kind: "group", id: g1),
            row(seq + 2, "user:\(user)", kind: "group", op: .removed, id: g1, doc: nil, reason: reason))
    }

    @Test("a removed member gets revoked (not the change) in the same ingest the others get the change")
    func removedMember() {
        var h = Harness()
        _ = h.live(c1, user: "u1", group1, at: 0)
        _ = h.live(c2, user: "u2", group1, at: 0)
        let out = h.hub.ingest([removal(1, user: "u2", reason: "an operator's private note")])
        #expect(out.types(to: c1) == ["change"])
        #expect(out.types(to: c2) == ["revoked"])
        #expect(out.messages(to: c2)[0]["topic"] as? String == group1)
        #expect(out.messages(to: c2)[0]["reason"] as? String == "access_revoked", "typed reason, never operator text")
        #expect(!String(decoding: out.sent(to: c1)[0], as: UTF8.self).contains("private note"))
        #expect(h.hub.ingest([groupBatch(10)]).sent(to: c2).isEmpty, "nothing after the removal")
        #expect(h.hub.topics(of: c2).isEmpty)
    }

    @Test("leaving and group deletion; every connection of the user; the user feed still gets its change")
    func leftAndDeleted() {
        var h = Harness()
        _ = h.live(c1, user: "u1", group1, at: 0)
        _ = h.live(c2, user: "u1", group1, at: 0)
        _ = h.say(c2, #"{"op":"subscribe","topic":"user"}"#).snapshotRequests.first.map { h.hub.snapshotReady($0, seq: 0, data: []) }
        let out = h.hub.ingest([removal(1, user: "u1", event: "member_left", reason: "left")])
        #expect(out.types(to: c1) == ["revoked"])
        #expect(out.types(to: c2) == ["revoked", "change"])
        #expect(out.messages(to: c2)[0]["reason"] as? String == "left")

        var d = Harness()
        _ = d.live(c1, user: "u1", group1, at: 0)
        _ = d.live(c3, user: "u3", group1, at: 0)
        let deleted = d.hub.ingest([
            batch(
                "group_deleted", row(1, group1, kind: "group", op: .removed, id: g1, doc: nil, reason: "group_deleted"),
                row(2, "user:u1", kind: "group", op: .removed, id: g1, doc: nil, reason: "group_deleted"))
        ])
        #expect(deleted.messages(to: c1).map { $0["reason"] as? String } == ["deleted"])
        #expect(deleted.types(to: c3) == ["revoked"], "group removal revokes every subscriber")
    }

    @Test("a subscription still loading is revoked at once; its read result is ignored")
    func loadingRevoked() throws {
        var h = Harness()
        let request = try need(h.subscribe(c1, user: "u1", group1))
        let out = h.hub.ingest([removal(1, user: "u1")])
        #expect(out.types(to: c1) == ["revoked"])
        #expect(h.hub.snapshotReady(request, seq: 0, data: []).isEmpty)
    }

    @Test("a snapshot read after a rejoin (S ≥ the removal) is not revoked by that older removal")
    func rejoinedBeforeSnapshot() {
        var h = Harness(position: 0)
        _ = h.live(c1, user: "u1", group1, at: 10)
        #expect(h.hub.ingest([removal(1, user: "u1")] + others(4...10)).types(to: c1).isEmpty)
        #expect(h.hub.ingest([groupBatch(11)]).seqs(to: c1) == [11])
    }

    @Test("user_suspended and account_deleted close every connection of that user with 4003")
    func suspension() {
        var h = Harness()
        _ = h.live(c1, user: "u1", group1, at: 0)
        _ = h.live(c2, user: "u2", group1, at: 0)
        _ = h.live(c3, user: "u2", "user", at: 0)
        let out = h.hub.ingest([
            batch("user_suspended", row(1, "user:u2", kind: "user", id: "u2", doc: #"{"status":"suspended"}"#)), groupBatch(2),
        ])
        #expect(out.closes.map(\.0) == [c2, c3])
        #expect(out.closes.allSatisfy { $0.1 == .sessionRevoked && $0.1.rawValue == 4003 })
        #expect(out.sent(to: c2).isEmpty && out.sent(to: c3).isEmpty)
        #expect(out.seqs(to: c1) == [2])
        #expect(h.hub.ingest([groupBatch(3)]).sent(to: c2).isEmpty)
        h.hub.disconnect(c2)
        h.hub.disconnect(c3)
        #expect(h.hub.connectionCount == 1)

        let deleted = h.hub.ingest([batch("account_deleted", row(4, "user:u1", kind: "user", op: .removed, id: "u1", doc: nil))])
        #expect(deleted.closes.map(\.0) == [c1])
    }

    @Test("a token checked before a suspension but reported after it still closes 4003")
    func tokenCheckRace() {
        var h = Harness()
        _ = h.hub.ingest([batch("user_suspended", row(5, "user:u2", kind: "user", id: "u2"))])
        #expect(h.hub.connect(c1, userID: "u2", checkedAt: 4).closes.map(\.1) == [.sessionRevoked])
        #expect(h.hub.connect(c2, userID: "u2", checkedAt: 5).isEmpty, "checked after: a new session")
        _ = h.hub.connect(c3, userID: nil)
        _ = h.say(c3, #"{"op":"auth","token":"t"}"#)
        _ = h.say(c3, #"{"op":"subscribe","topic":"user"}"#)
        let out = h.hub.authenticated(c3, userID: "u2", checkedAt: 3)
        #expect(out.closes.map(\.1) == [.sessionRevoked])
        #expect(out.snapshotRequests.isEmpty)
    }

    @Test("a sessions_revoked batch closes exactly the named sessions' connections with 4003; the rest still get changes")
    func sessionsRevokedBatch() {
        var h = Harness()
        _ = h.hub.connect(c1, userID: "u1", sessionID: "s-a")
        _ = h.hub.connect(c2, userID: "u1", sessionID: "s-b")
        _ = h.live(c3, user: "u1", group1, at: 0)
        let out = h.hub.ingest([
            batch("sessions_revoked", row(1, "system", kind: "session", op: .removed, id: "s-a", doc: nil)), groupBatch(2),
        ])
        #expect(out.closes.map(\.0) == [c1])
        #expect(out.closes.map(\.1) == [.sessionRevoked])
        #expect(out.seqs(to: c3) == [2])
        // A disconnected connection is forgotten; the other session closes when its own turn comes.
        h.hub.disconnect(c1)
        let again = h.hub.ingest([batch("sessions_revoked", row(3, "system", kind: "session", op: .removed, id: "s-a", doc: nil))])
        #expect(again.closes.isEmpty)
        let other = h.hub.ingest([batch("sessions_revoked", row(4, "system", kind: "session", op: .removed, id: "s-b", doc: nil))])
        #expect(other.closes.map(\.0) == [c2])
    }

    @Test("a token checked before its session was revoked but reported after it still closes 4003")
    func sessionRevocationRace() {
        var h = Harness()
        _ = h.hub.ingest([batch("sessions_revoked", row(5, "system", kind: "session", op: .removed, id: "s-a", doc: nil))])
        #expect(h.hub.connect(c1, userID: "u1", checkedAt: 4, sessionID: "s-a").closes.map(\.1) == [.sessionRevoked])
        #expect(h.hub.connect(c2, userID: "u1", checkedAt: 4, sessionID: "s-b").isEmpty, "another session of the user")
        #expect(h.hub.connect(c3, userID: "u1", checkedAt: 5, sessionID: "s-a").isEmpty, "checked after the revocation")
        _ = h.hub.connect(ConnectionID(4), userID: nil)
        _ = h.say(ConnectionID(4), #"{"op":"auth","token":"t"}"#)
        let out = h.hub.authenticated(ConnectionID(4), userID: "u1", checkedAt: 4, sessionID: "s-a")
        #expect(out.closes.map(\.1) == [.sessionRevoked])
    }
}

@Suite("Realtime hub — presence")
struct PresenceTests {
    func presence(_ out: [HubAction], to id: ConnectionID) -> [([String], [String])] {
        out.messages(to: id).filter { $0["type"] as? String == "presence" }.map {
            ($0["joined"] as? [String] ?? [], $0["left"] as? [String] ?? [])
        }
    }

    @Test("joins and leaves are announced per flush; snapshots carry the announced set; flapping is silent")
    func presenceFlow() throws {
        var h = Harness()
        _ = h.live(c1, user: "u1", group1, at: 0)
        _ = h.live(c2, user: "u2", group1, at: 0)
        let first = h.hub.flushPresence()
        #expect(first.broadcasts.map(\.0) == [[c1, c2]], "one encode for all subscribers")
        #expect(presence(first, to: c1).map(\.0) == [["u1", "u2"]])
        #expect(h.hub.flushPresence().isEmpty, "nothing changed")

        let snapshot = h.live(c3, user: "u3", group1, at: 0)
        #expect(snapshot.messages(to: c3).first?["presence"] as? [String] == ["u1", "u2"])
        #expect(presence(h.hub.flushPresence(), to: c3).map(\.0) == [["u3"]])

        h.hub.disconnect(c2)
        _ = h.live(ConnectionID(4), user: "u2", group1, at: 0)
        #expect(h.hub.flushPresence().isEmpty, "a reconnect between two flushes announces nothing")

        _ = h.live(ConnectionID(5), user: "u1", group1, at: 0)
        _ = h.say(c1, #"{"op":"unsubscribe","topic":"\#(group1)"}"#)
        #expect(h.hub.flushPresence().isEmpty, "u1 still has the group subscribed on another socket")

        _ = h.say(c3, #"{"op":"unsubscribe","topic":"\#(group1)"}"#)
        let left = h.hub.flushPresence()
        #expect(presence(left, to: ConnectionID(4)).map(\.1) == [["u3"]])
        #expect(left.sent(to: c3).isEmpty)
        #expect(h.live(ConnectionID(6), user: "u1", "user", at: 0).messages(to: ConnectionID(6)).first?["presence"] == nil)
    }

    @Test("other instances' users are announced with this one's: local ∪ cluster; only local changes are reported")
    func clusterPresence() throws {
        var h = Harness()
        _ = h.live(c1, user: "u1", group1, at: 0)
        h.hub.setClusterPresence(groupID: g1, users: ["u2", "u1"])
        let first = h.hub.flushPresence()
        #expect(presence(first, to: c1).map(\.0) == [["u1", "u2"]], "u1 here and on another instance: once")
        #expect(h.hub.takeLocalPresence() == [g1: ["u1"]], "only this instance's subscribers go to the table")
        #expect(h.hub.takeLocalPresence().isEmpty, "taken once")

        h.hub.setClusterPresence(groupID: g1, users: ["u2", "u1"])
        #expect(h.hub.flushPresence().isEmpty, "the same cluster set again changes nothing")
        h.hub.setClusterPresence(groupID: g1, users: ["u1"])
        #expect(presence(h.hub.flushPresence(), to: c1).map(\.1) == [["u2"]], "u2 left the other instance")
        #expect(h.hub.takeLocalPresence().isEmpty, "a cluster change is not a local one")

        _ = h.say(c1, #"{"op":"unsubscribe","topic":"\#(group1)"}"#)
        #expect(h.hub.flushPresence().isEmpty, "u1 is still subscribed on the other instance")
        #expect(h.hub.takeLocalPresence() == [g1: []], "nobody here any more")

        // A group only other instances have subscribed: its set is kept for the first local snapshot.
        h.hub.setClusterPresence(groupID: g2, users: ["u3"])
        #expect(h.hub.flushPresence().isEmpty, "no subscriber here to tell")
        #expect(h.hub.takeLocalPresence().isEmpty)
        #expect(h.live(c2, user: "u4", "group:\(g2)", at: 0).messages(to: c2).first?["presence"] as? [String] == ["u3"])
        #expect(presence(h.hub.flushPresence(), to: c2).map(\.0) == [["u4"]])
        #expect(h.hub.takeLocalPresence() == [g2: ["u4"]])

        // Changes that cancel out between two flushes are neither announced nor reported.
        h.hub.disconnect(c2)
        _ = h.live(c3, user: "u4", "group:\(g2)", at: 0)
        #expect(h.hub.flushPresence().isEmpty)
        #expect(h.hub.takeLocalPresence().isEmpty)
    }

    /// Whether any message in `out` carries `userID` as a JSON string (presence lists hold user ids).
    func mentions(_ out: [HubAction], _ userID: String) -> Bool {
        let needle = Array("\"\(userID)\"".utf8)
        return out.contains { action in
            let bytes: [UInt8]
            switch action {
            case .send(_, let b), .broadcast(_, let b): bytes = b
            case .authenticate, .needSnapshot, .needReplay, .close: return false
            }
            return bytes.count >= needle.count
                && (0...(bytes.count - needle.count)).contains { Array(bytes[$0..<$0 + needle.count]) == needle }
        }
    }

    @Test("a subscribe waiting for its access check is not present: a refused non-member is never announced nor reported")
    func pendingNonMember() throws {
        var h = Harness()
        _ = h.live(c1, user: "u1", group1, at: 0)
        _ = h.hub.flushPresence()
        #expect(h.hub.takeLocalPresence() == [g1: ["u1"]])

        let request = try need(h.subscribe(c2, user: "stranger", group1))
        let during = h.hub.flushPresence()
        #expect(!mentions(during, "stranger"), "nobody is told about a user whose access is unchecked")
        #expect(presence(during, to: c1).isEmpty)
        #expect(h.hub.takeLocalPresence().isEmpty, "nor are other instances")

        let refused = h.hub.accessDenied(request)
        #expect(refused.types(to: c2) == ["error"])
        #expect(!mentions(refused, "stranger"))
        let after = h.hub.flushPresence()
        #expect(!mentions(after, "stranger"))
        #expect(after.isEmpty, "no leave for a user who never joined")
        #expect(h.hub.takeLocalPresence().isEmpty)
        #expect(h.live(c3, user: "u3", group1, at: 0).messages(to: c3).first?["presence"] as? [String] == ["u1"])

        // Alone in a group, a non-member's pending subscribe reports nothing to other instances either.
        var alone = Harness()
        let lone = try need(alone.subscribe(c1, user: "stranger", "group:\(g2)"))
        #expect(alone.hub.flushPresence().isEmpty)
        #expect(alone.hub.takeLocalPresence().isEmpty)
        _ = alone.hub.accessDenied(lone)
        #expect(alone.hub.flushPresence().isEmpty)
        #expect(alone.hub.takeLocalPresence().isEmpty)
    }

    @Test("a member is absent until a read grants access (snapshot, replay, or a read while over the soft limit), present after")
    func memberGranted() throws {
        var h = Harness(position: 5)
        _ = h.live(c1, user: "u1", group1, at: 5)
        _ = h.hub.flushPresence()
        _ = h.hub.takeLocalPresence()

        let request = try need(h.subscribe(c2, user: "u2", group1))
        #expect(h.hub.flushPresence().isEmpty, "absent while its access is checked")
        #expect(h.hub.takeLocalPresence().isEmpty)
        let ready = h.hub.snapshotReady(request, seq: 5, data: Array("{}".utf8))
        #expect(ready.messages(to: c2).first?["presence"] as? [String] == ["u1"], "not yet announced: not in its own snapshot")
        let joined = h.hub.flushPresence()
        #expect(presence(joined, to: c1).map(\.0) == [["u2"]])
        #expect(presence(joined, to: c2).map(\.0) == [["u2"]])
        #expect(h.hub.takeLocalPresence() == [g1: ["u1", "u2"]])

        _ = h.hub.connect(c3, userID: "u3")
        let (resume, _) = try need(h.say(c3, #"{"op":"subscribe","topic":"\#(group1)","since":5}"#).replayRequests.first)
        #expect(h.hub.flushPresence().isEmpty, "absent while the resume read checks access")
        _ = h.hub.replayReady(resume, ChangeFeed.Replay(oldestRetainedSeq: 1, latestSeq: 5, batches: [], truncated: false))
        #expect(presence(h.hub.flushPresence(), to: c1).map(\.0) == [["u3"]])

        let slow = ConnectionID(4)
        _ = h.hub.connect(slow, userID: "u4")
        _ = h.hub.outboundBuffered(slow, bytes: h.hub.limits.softOutboundBytes + 1)
        let pending = try need(h.say(slow, #"{"op":"subscribe","topic":"\#(group1)"}"#).snapshotRequests.first)
        #expect(h.hub.flushPresence().isEmpty)
        #expect(h.hub.snapshotReady(pending, seq: 5, data: Array("{}".utf8)).sent(to: slow).isEmpty, "conflated until the drain")
        #expect(presence(h.hub.flushPresence(), to: c1).map(\.0) == [["u4"]], "the read confirmed access: present")
    }

    @Test("a granted subscription that re-reads (reset after a gap, drain after conflation) stays present: no leave/join pair")
    func reReadStaysPresent() throws {
        var h = Harness(position: 1)
        _ = h.live(c1, user: "u1", group1, at: 1)
        _ = h.live(c2, user: "u2", group1, at: 1)
        _ = h.hub.flushPresence()
        #expect(h.hub.takeLocalPresence() == [g1: ["u1", "u2"]])

        let gap = h.hub.ingest([groupBatch(3)])
        let reread = try need(gap.snapshotRequests.first { $0.connection == c2 })
        #expect(h.hub.flushPresence().isEmpty, "u2 stays present while its reset snapshot is read")
        #expect(h.hub.takeLocalPresence().isEmpty)
        for request in gap.snapshotRequests {
            #expect(h.hub.snapshotReady(request, seq: 3, data: Array("{}".utf8)).types(to: request.connection) == ["snapshot"])
        }
        #expect(h.hub.flushPresence().isEmpty, "nor does the re-read's result announce a join")
        #expect(h.hub.takeLocalPresence().isEmpty)
        #expect(h.hub.snapshotReady(reread, seq: 3, data: []).isEmpty, "already answered")

        _ = h.hub.outboundBuffered(c2, bytes: h.hub.limits.softOutboundBytes + 1)
        #expect(h.hub.ingest([groupBatch(4)]).sent(to: c2).isEmpty, "over the soft limit: conflating")
        #expect(h.hub.flushPresence().isEmpty)
        let drained = try need(h.hub.outboundBuffered(c2, bytes: 0).snapshotRequests.first)
        #expect(h.hub.flushPresence().isEmpty, "u2 stays present while its fresh snapshot is read")
        #expect(h.hub.takeLocalPresence().isEmpty)
        #expect(
            h.hub.snapshotReady(drained, seq: 4, data: Array("{}".utf8)).messages(to: c2).first?["presence"] as? [String] == ["u1", "u2"])
        #expect(h.hub.flushPresence().isEmpty)

        // A re-read refused (the removal fell into a gap) ends the subscription: the user leaves.
        let second = h.hub.ingest([groupBatch(6)])
        let refused = try need(second.snapshotRequests.first { $0.connection == c2 })
        let kept = try need(second.snapshotRequests.first { $0.connection == c1 })
        #expect(h.hub.snapshotReady(kept, seq: 6, data: Array("{}".utf8)).types(to: c1) == ["snapshot"])
        #expect(h.hub.accessDenied(refused).types(to: c2) == ["error"])
        #expect(presence(h.hub.flushPresence(), to: c1).map(\.1) == [["u2"]])
        #expect(h.hub.takeLocalPresence() == [g1: ["u1"]])
    }

    @Test("a subscriber over the soft limit gets no presence message but a reset snapshot after the drain")
    func presenceConflates() throws {
        var limits = RealtimeLimits()
        limits.softOutboundBytes = 100
        limits.resumeOutboundBytes = 0
        var h = Harness(limits: limits)
        _ = h.live(c1, user: "u1", group1, at: 0)
        _ = h.hub.outboundBuffered(c1, bytes: 101)
        #expect(h.hub.flushPresence().sent(to: c1).isEmpty)
        let request = try need(h.hub.outboundBuffered(c1, bytes: 0).snapshotRequests.first)
        let ready = h.hub.snapshotReady(request, seq: 0, data: Array("{}".utf8))
        #expect(ready.messages(to: c1).first?["presence"] as? [String] == ["u1"])
        #expect(ready.messages(to: c1).first?["reset"] as? Bool == true)
    }
}
