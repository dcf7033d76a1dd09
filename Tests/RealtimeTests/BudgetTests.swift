import Domain
import Foundation
import Realtime
import Store
import Testing

@Suite("Realtime hub — slow consumers")
struct SlowConsumerTests {
    static var limits: RealtimeLimits {
        var l = RealtimeLimits()
        l.softOutboundBytes = 1000
        l.hardOutboundBytes = 4000
        l.resumeOutboundBytes = 100
        return l
    }

    @Test("at exactly the soft limit changes still go; one byte over they conflate into one reset snapshot on drain")
    func conflation() throws {
        var h = Harness(limits: Self.limits)
        _ = h.live(c1, user: "u1", group1, at: 0)
        _ = h.hub.outboundBuffered(c1, bytes: 1000)
        #expect(h.hub.ingest([groupBatch(1)]).seqs(to: c1) == [1])
        _ = h.hub.outboundBuffered(c1, bytes: 1001)
        #expect(h.hub.ingest([groupBatch(2), groupBatch(3)]).isEmpty, "pending changes dropped, not queued")
        #expect(h.hub.outboundBuffered(c1, bytes: 101).isEmpty, "not drained enough yet")
        let drained = h.hub.outboundBuffered(c1, bytes: 100)
        let request = try need(drained.snapshotRequests.first)
        #expect(drained.snapshotRequests.count == 1)
        #expect(h.hub.ingest([groupBatch(4)]).isEmpty, "held while the fresh snapshot is read")
        let ready = h.hub.snapshotReady(request, seq: 3, data: Array("{}".utf8))
        #expect(ready.types(to: c1) == ["snapshot", "change"])
        #expect(ready.messages(to: c1)[0]["reset"] as? Bool == true)
        #expect(ready.seqs(to: c1) == [3, 4])
    }

    @Test("each conflated topic gets its own snapshot; live topics of the same socket are untouched")
    func perTopic() {
        var h = Harness(limits: Self.limits)
        _ = h.live(c1, user: "u1", group1, at: 0)
        _ = h.say(c1, #"{"op":"subscribe","topic":"group:\#(g2)"}"#).snapshotRequests.first.map {
            h.hub.snapshotReady($0, seq: 0, data: [])
        }
        _ = h.hub.outboundBuffered(c1, bytes: 2000)
        _ = h.hub.ingest([groupBatch(1, g1)])
        let drained = h.hub.outboundBuffered(c1, bytes: 0)
        #expect(drained.snapshotRequests.map(\.topic) == [.group(g1)])
        #expect(h.hub.ingest([groupBatch(2, g2)]).seqs(to: c1) == [2])
    }

    @Test("a snapshot arriving over the soft limit is not queued; it is read again after the drain")
    func snapshotDeferred() throws {
        var h = Harness(limits: Self.limits)
        let request = try need(h.subscribe(c1, user: "u1", group1))
        _ = h.hub.outboundBuffered(c1, bytes: 1500)
        #expect(h.hub.snapshotReady(request, seq: 5, data: Array("{}".utf8)).isEmpty)
        let again = try need(h.hub.outboundBuffered(c1, bytes: 0).snapshotRequests.first)
        let ready = h.hub.snapshotReady(again, seq: 6, data: Array("{}".utf8))
        #expect(ready.types(to: c1) == ["snapshot"])
        #expect(ready.messages(to: c1)[0]["reset"] == nil, "first snapshot of the topic: no reset")
    }

    @Test("hard limit: exactly at it stays open, one byte over closes 4008")
    func hardLimit() {
        var h = Harness(limits: Self.limits)
        _ = h.live(c1, user: "u1", group1, at: 0)
        #expect(h.hub.outboundBuffered(c1, bytes: 4000).closes.isEmpty)
        let out = h.hub.outboundBuffered(c1, bytes: 4001)
        #expect(out.closes.map(\.1) == [.slowConsumer])
        #expect(CloseCode.slowConsumer.rawValue == 4008)
        #expect(h.hub.ingest([groupBatch(1)]).isEmpty)
        #expect(h.hub.outboundBuffered(c1, bytes: 0).isEmpty, "closed: nothing more")
    }

    @Test("a message that takes the estimate past the hard limit is the last: close 4008 follows it")
    func sendPastHard() {
        var h = Harness(limits: Self.limits)
        _ = h.live(c1, user: "u1", group1, at: 0)
        _ = h.hub.outboundBuffered(c1, bytes: 990)
        let big = "{\"x\":\"" + String(repeating: "a", count: 3100) + "\"}"
        let out = h.hub.ingest([groupBatch(1, doc: big)])
        #expect(out.types(to: c1) == ["change"])
        #expect(out.closes.map(\.1) == [.slowConsumer])
    }

    @Test("a client that never reads: memory stays bounded however many changes arrive")
    func neverReads() {
        var h = Harness()
        let limits = h.hub.limits
        var sentBytes = h.live(c1, user: "u1", group1, at: 0).sent(to: c1).reduce(0) { $0 + $1.count }
        for seq in Int64(1)...5000 {
            let out = h.hub.ingest([groupBatch(seq, doc: "{\"pad\":\"" + String(repeating: "p", count: 200) + "\"}")])
            sentBytes += out.sent(to: c1).reduce(0) { $0 + $1.count }
            #expect(out.closes.isEmpty)
        }
        #expect(sentBytes <= limits.softOutboundBytes + 512, "stops queueing at the soft limit")
        #expect(h.hub.bufferedBytes(of: c1) == sentBytes)
        #expect(h.hub.heldChangeCount(c1, .group(g1)) == 0)
    }

    @Test("held changes while loading: exactly the cap is kept; one over drops them and forces a newer read")
    func heldCap() throws {
        var limits = RealtimeLimits()
        limits.maxHeldChanges = 4
        var h = Harness(limits: limits)
        let request = try need(h.subscribe(c1, user: "u1", group1))
        _ = h.hub.ingest((1...4).map { groupBatch($0) })
        #expect(h.hub.heldChangeCount(c1, .group(g1)) == 4)
        _ = h.hub.ingest([groupBatch(5)])
        #expect(h.hub.heldChangeCount(c1, .group(g1)) == 0)
        let retry = h.hub.snapshotReady(request, seq: 4, data: [])
        #expect(retry.sent(to: c1).isEmpty, "S = 4 < 5 dropped: never a gap")
        let newer = try need(retry.snapshotRequests.first)
        _ = h.hub.ingest([groupBatch(6)])
        #expect(h.hub.snapshotReady(newer, seq: 5, data: Array("{}".utf8)).seqs(to: c1) == [5, 6])
    }
}

@Suite("Realtime hub — more limits at exactly and one over")
struct MoreLimitTests {
    @Test("a replay that crosses the soft limit stops there and conflates into a reset snapshot")
    func replayConflates() throws {
        var limits = RealtimeLimits()
        limits.softOutboundBytes = 300
        limits.resumeOutboundBytes = 0
        var h = Harness(position: 10, limits: limits)
        _ = h.hub.connect(c1, userID: "u1")
        let (request, _) = try need(h.say(c1, #"{"op":"subscribe","topic":"\#(group1)","since":0}"#).replayRequests.first)
        let replay = ChangeFeed.Replay(oldestRetainedSeq: 1, latestSeq: 10, batches: (1...10).map { groupBatch($0) }, truncated: false)
        let out = h.hub.replayReady(request, replay)
        let sent = out.seqs(to: c1)
        #expect(sent.count >= 2 && sent.count < 10)
        #expect(sent == Array(1...Int64(sent.count)), "in order, no gap, then nothing")
        #expect(h.hub.ingest([groupBatch(11)]).isEmpty)
        let snapshot = try need(h.hub.outboundBuffered(c1, bytes: 0).snapshotRequests.first)
        let ready = h.hub.snapshotReady(snapshot, seq: 11, data: Array("{}".utf8))
        #expect(ready.messages(to: c1).first?["reset"] as? Bool == true)
    }

    @Test("held bytes: exactly maxHeldBytes are kept, one byte more drops them")
    func heldBytes() throws {
        let size = ServerMessage.change(topic: .group(g1), event: .groupUpdated, rows: groupBatch(1).rows).bytes.count
        var limits = RealtimeLimits()
        limits.maxHeldBytes = size * 2
        var h = Harness(limits: limits)
        _ = try need(h.subscribe(c1, user: "u1", group1))
        _ = h.hub.ingest([groupBatch(1), groupBatch(2)])
        #expect(h.hub.heldChangeCount(c1, .group(g1)) == 2)
        _ = h.hub.ingest([groupBatch(3)])
        #expect(h.hub.heldChangeCount(c1, .group(g1)) == 0)
    }

    @Test("commands while authenticating: exactly the limit is queued, one more is refused")
    func authQueue() {
        var limits = RealtimeLimits()
        limits.maxCommandsWhileAuthenticating = 2
        var h = Harness(limits: limits)
        _ = h.hub.connect(c1, userID: nil)
        _ = h.say(c1, #"{"op":"auth","token":"t"}"#)
        #expect(h.say(c1, #"{"op":"subscribe","topic":"user"}"#).isEmpty)
        #expect(h.say(c1, #"{"op":"subscribe","topic":"\#(group1)"}"#).isEmpty)
        let over = h.say(c1, #"{"op":"subscribe","topic":"group:\#(g2)"}"#)
        #expect(over.messages(to: c1).first?["code"] as? String == "too_many_requests")
        #expect(h.hub.authenticated(c1, userID: "u1").snapshotRequests.count == 2)
    }

    @Test("remembered account closures: the newest are kept, the oldest forgotten past the limit")
    func rememberedClosures() {
        var limits = RealtimeLimits()
        limits.maxRememberedAccountClosures = 2
        var h = Harness(limits: limits)
        _ = h.hub.ingest((1...3).map { batch("user_suspended", row(Int64($0), "user:s\($0)", kind: "user", id: "s\($0)")) })
        #expect(h.hub.connect(ConnectionID(1), userID: "s1", checkedAt: 0).isEmpty, "forgotten (bounded memory)")
        #expect(h.hub.connect(ConnectionID(2), userID: "s2", checkedAt: 0).closes.count == 1)
        #expect(h.hub.connect(ConnectionID(3), userID: "s3", checkedAt: 0).closes.count == 1)
    }

    @Test("remembered session revocations: the newest are kept, the oldest forgotten past the limit")
    func rememberedSessionClosures() {
        var limits = RealtimeLimits()
        limits.maxRememberedSessionClosures = 2
        var h = Harness(limits: limits)
        _ = h.hub.ingest(
            (1...3).map { batch("sessions_revoked", row(Int64($0), "system", kind: "session", op: .removed, id: "s\($0)", doc: nil)) })
        #expect(h.hub.connect(ConnectionID(1), userID: "u", checkedAt: 0, sessionID: "s1").isEmpty, "forgotten (bounded memory)")
        #expect(h.hub.connect(ConnectionID(2), userID: "u", checkedAt: 0, sessionID: "s2").closes.count == 1)
        #expect(h.hub.connect(ConnectionID(3), userID: "u", checkedAt: 0, sessionID: "s3").closes.count == 1)
    }
}

@Suite("Realtime hub — limits and authentication")
struct LimitTests {
    @Test("topics per connection: the 50th subscribe is accepted, the 51st refused with too_many_topics")
    func topicLimit() {
        var h = Harness()
        _ = h.hub.connect(c1, userID: "u1")
        let max = h.hub.limits.maxTopicsPerConnection
        #expect(max == 50)
        for i in 0..<max {
            let id = String(format: "%08d-0000-4000-8000-000000000000", i)
            #expect(h.say(c1, #"{"op":"subscribe","topic":"group:\#(id)"}"#).snapshotRequests.count == 1)
        }
        let over = h.say(c1, #"{"op":"subscribe","topic":"user"}"#)
        #expect(over.snapshotRequests.isEmpty)
        #expect(over.messages(to: c1).first?["code"] as? String == "too_many_topics")
        _ = h.say(c1, #"{"op":"unsubscribe","topic":"group:00000000-0000-4000-8000-000000000000"}"#)
        #expect(h.say(c1, #"{"op":"subscribe","topic":"user"}"#).snapshotRequests.count == 1)
    }

    @Test("message size: at the limit answered, one byte over closes 1009")
    func messageSize() {
        var h = Harness()
        _ = h.hub.connect(c1, userID: "u1")
        let limit = h.hub.limits.maxInboundMessageBytes
        let exact = Array(#"{"op":"ping"}"#.utf8.dropLast()) + Array(repeating: UInt8(ascii: " "), count: limit - 13) + [UInt8(ascii: "}")]
        #expect(exact.count == limit)
        #expect(h.hub.receive(c1, text: exact).types(to: c1) == ["pong"])
        let out = h.hub.receive(c1, text: exact + [UInt8(ascii: " ")])
        #expect(out.closes.map(\.1) == [.messageTooBig])
    }

    @Test("invalid messages: each answered with error; past maxProtocolErrors close 4000")
    func protocolErrors() {
        var h = Harness()
        _ = h.hub.connect(c1, userID: "u1")
        for _ in 0..<h.hub.limits.maxProtocolErrors {
            let out = h.say(c1, #"{"op":"subscribe","topic":"group:nope"}"#)
            #expect(out.messages(to: c1).first?["code"] as? String == "invalid_topic")
        }
        let out = h.say(c1, "garbage")
        #expect(out.sent(to: c1).isEmpty)
        #expect(out.closes.map(\.1) == [.protocolError])
    }

    @Test("connections per user: the 20th is admitted, the 21st closed 4009")
    func connectionsPerUser() {
        var h = Harness()
        for i in 1...20 { #expect(h.hub.connect(ConnectionID(UInt64(i)), userID: "u1").isEmpty) }
        #expect(h.hub.connect(ConnectionID(21), userID: "u1").closes.map(\.1) == [.tooManyConnections])
        #expect(h.hub.connect(ConnectionID(22), userID: "u2").isEmpty, "per user, not global")
        h.hub.disconnect(ConnectionID(1))
        #expect(h.hub.connect(ConnectionID(23), userID: "u1").isEmpty)
    }

    @Test("auth by message: commands before auth are refused, during auth queued, run once authenticated")
    func authMessage() throws {
        var h = Harness()
        _ = h.hub.connect(c1, userID: nil)
        #expect(h.say(c1, #"{"op":"subscribe","topic":"user"}"#).messages(to: c1).first?["code"] as? String == "not_authenticated")
        #expect(h.say(c1, #"{"op":"auth","token":"tok"}"#) == [.authenticate(c1, token: "tok")])
        #expect(h.say(c1, #"{"op":"subscribe","topic":"user"}"#).isEmpty)
        #expect(h.say(c1, #"{"op":"auth","token":"again"}"#).messages(to: c1).first?["code"] as? String == "already_authenticated")
        let out = h.hub.authenticated(c1, userID: "u1")
        #expect(out.snapshotRequests.map(\.topic) == [.user("u1")])
        #expect(h.hub.authDeadlinePassed(c1).isEmpty)
    }

    @Test("auth deadline or a bad token closes 4001")
    func authFailures() {
        var h = Harness()
        _ = h.hub.connect(c1, userID: nil)
        #expect(h.hub.authDeadlinePassed(c1).closes.map(\.1) == [.authenticationFailed])
        _ = h.hub.connect(c2, userID: nil)
        _ = h.say(c2, #"{"op":"auth","token":"bad"}"#)
        #expect(h.hub.authenticationFailed(c2).closes.map(\.1) == [.authenticationFailed])
        #expect(CloseCode.authenticationFailed.rawValue == 4001)
    }

    @Test("a token check the database could not answer closes 1013 Try Again Later, never 4001; the auth deadline waits for the check")
    func authCheckUnavailable() {
        var h = Harness()
        _ = h.hub.connect(c1, userID: nil)
        #expect(h.say(c1, #"{"op":"auth","token":"tok"}"#) == [.authenticate(c1, token: "tok")])
        #expect(h.say(c1, #"{"op":"subscribe","topic":"user"}"#).isEmpty)  // queued behind the check
        // A slow check (an outage) outlives the deadline: not the client's failure to authenticate.
        #expect(h.hub.authDeadlinePassed(c1).isEmpty)
        let out = h.hub.authenticationUnavailable(c1)
        #expect(out.closes.map(\.1) == [.tryAgainLater])
        #expect(out.snapshotRequests.isEmpty)  // the queued subscribe never runs
        #expect(CloseCode.tryAgainLater.rawValue == 1013)
        // Closed once: a late report of either outcome sends nothing more.
        #expect(h.hub.authenticationFailed(c1).isEmpty)
        #expect(h.hub.authenticated(c1, userID: "u1").isEmpty)
        #expect(h.hub.connectionCount == 0)
        // A connection that never sent `auth` still closes 4001 at the deadline.
        _ = h.hub.connect(c2, userID: nil)
        #expect(h.hub.authDeadlinePassed(c2).closes.map(\.1) == [.authenticationFailed])
    }
}
