import Domain
import Realtime
import Store
import Testing

@Suite("Realtime — topics")
struct TopicTests {
    @Test("user and group topics parse; anything else is refused")
    func parse() throws {
        #expect(try Topic(wire: "user", userID: "u1") == .user("u1"))
        #expect(try Topic(wire: "group:\(g1)", userID: "u1") == .group(g1))
        #expect(throws: Topic.ParseError.unknownTopic) { try Topic(wire: "user:u2", userID: "u1") }
        #expect(throws: Topic.ParseError.unknownTopic) { try Topic(wire: "", userID: "u1") }
        #expect(throws: Topic.ParseError.invalidGroupID) { try Topic(wire: "group:AAAAAAAA-1111-4111-8111-111111111111", userID: "u1") }
        #expect(throws: Topic.ParseError.invalidGroupID) { try Topic(wire: "group:\(g1)x", userID: "u1") }
        #expect(throws: Topic.ParseError.invalidGroupID) { try Topic(wire: "group:", userID: "u1") }
        #expect(Topic.user("u1").wireName == "user")
        #expect(Topic.user("u1").logName == "user:u1")
        #expect(Topic(logName: "group:\(g1)") == .group(g1))
        #expect(Topic(logName: "other:1") == nil)
    }
}

@Suite("Realtime — client messages")
struct ClientMessageTests {
    let decoder = ClientMessageDecoder()

    func decode(_ text: String) throws(ClientMessageError) -> ClientMessage { try decoder.decode(Array(text.utf8)) }

    @Test("the four ops, with optional since and id")
    func ops() throws {
        #expect(try decode(#"{"op":"subscribe","topic":"user"}"#) == .subscribe(topic: "user", since: nil, epoch: nil, id: nil))
        #expect(
            try decode(#"{"op":"subscribe","topic":"group:\#(g1)","since":42,"epoch":"E1","id":"a"}"#)
                == .subscribe(topic: "group:\(g1)", since: 42, epoch: "E1", id: .string("a")))
        #expect(try decode(#"{"op":"unsubscribe","topic":"user","id":7}"#) == .unsubscribe(topic: "user", id: .number(7)))
        #expect(try decode(#"{"op":"auth","token":"t"}"#) == .auth(token: "t", id: nil))
        #expect(try decode(#"{"op":"ping"}"#) == .ping(id: nil))
    }

    @Test("malformed input gets a typed error")
    func errors() {
        #expect(throws: ClientMessageError.self) { try decode("not json") }
        #expect(throws: ClientMessageError.self) { try decode("[1]") }
        #expect(throws: ClientMessageError.missingField("op")) { try decode("{}") }
        #expect(throws: ClientMessageError.unknownOp("publish")) { try decode(#"{"op":"publish"}"#) }
        #expect(throws: ClientMessageError.missingField("topic")) { try decode(#"{"op":"subscribe"}"#) }
        #expect(throws: ClientMessageError.missingField("token")) { try decode(#"{"op":"auth"}"#) }
        #expect(throws: ClientMessageError.malformed("'since' must be ≥ 0")) {
            try decode(#"{"op":"subscribe","topic":"user","since":-1}"#)
        }
        #expect(throws: ClientMessageError.self) { try decode(#"{"op":"subscribe","topic":"user","since":1.5}"#) }
        #expect(throws: ClientMessageError.self) { try decode(#"{"op":"subscribe","topic":"user","since":"3"}"#) }
        #expect(throws: ClientMessageError.self) { try decode(#"{"op":"ping","id":"\#(String(repeating: "x", count: 65))"}"#) }
    }

    @Test("message size: exactly the limit is decoded, one byte over is tooLarge")
    func sizeLimit() throws {
        let limit = RealtimeLimits().maxInboundMessageBytes
        let base = #"{"op":"ping"}"#
        let exact = base.dropLast() + String(repeating: " ", count: limit - base.utf8.count) + "}"
        #expect(exact.utf8.count == limit)
        #expect(try decode(String(exact)) == .ping(id: nil))
        let over = String(exact) + " "
        #expect(throws: ClientMessageError.tooLarge(limit + 1)) { try decode(over) }
    }
}

@Suite("Realtime — server messages (exact bytes)")
struct ServerMessageTests {
    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test("snapshot, with and without reset")
    func snapshot() {
        #expect(
            text(ServerMessage.snapshot(topic: .group(g1), seq: 7, data: Array(#"{"a":1}"#.utf8), reset: false))
                == #"{"type":"snapshot","topic":"group:\#(g1)","seq":7,"data":{"a":1}}"#)
        #expect(
            text(ServerMessage.snapshot(topic: .user("u1"), seq: 0, data: Array("[]".utf8), reset: true))
                == #"{"type":"snapshot","topic":"user","seq":0,"data":[],"reset":true}"#)
        #expect(
            text(ServerMessage.snapshot(topic: .user("u1"), seq: 3, data: Array("{}".utf8), reset: false, epoch: "E1"))
                == #"{"type":"snapshot","topic":"user","seq":3,"data":{},"epoch":"E1"}"#)
    }

    @Test("change: the batch's rows in the topic, seq = highest, doc verbatim, typed reason (never stored text)")
    func change() {
        let encoded = ServerMessage.change(
            topic: .group(g1), event: .memberRemoved,
            rows: [
                row(5, "group:\(g1)", kind: "member", op: .modified, id: "m1", doc: #"{"s":"removed"}"#, reason: "spam"),
                row(6, "group:\(g1)", kind: "group", op: .removed, id: g1, doc: nil),
            ])
        #expect(encoded.seq == 6)
        #expect(
            text(encoded.bytes)
                == #"""
                {"type":"change","topic":"group:\#(g1)","seq":6,"event":"member_removed","changes":[{"kind":"member","op":"modified",\#
                "id":"m1","doc":{"s":"removed"},"reason":"access_revoked"},{"kind":"group","op":"removed","id":"\#(g1)",\#
                "reason":"access_revoked"}]}
                """#
        )
    }

    @Test("revoked, error, pong; strings escaped")
    func others() {
        #expect(
            text(ServerMessage.revoked(topic: .group(g1), reason: .left)) == #"{"type":"revoked","topic":"group:\#(g1)","reason":"left"}"#)
        #expect(
            text(ServerMessage.error(code: .notFound, message: "a \"b\"\n\\\u{1}é", topic: "user", id: .number(3)))
                == #"{"type":"error","code":"not_found","message":"a \"b\"\n\\\u0001é","topic":"user","id":3}"#)
        #expect(text(ServerMessage.pong(id: nil)) == #"{"type":"pong"}"#)
        #expect(text(ServerMessage.pong(id: .string("p"))) == #"{"type":"pong","id":"p"}"#)
    }
}

@Suite("Realtime — typed removal reasons")
struct RemovalReasonTests {
    @Test(
        "removals by event; member records ended by leave/removal; alarms unassigned by membership batches",
        arguments: [
            ("member_removed", "group", Change.Op.removed, "access_revoked"),
            ("member_removed", "member", .modified, "access_revoked"),
            ("member_left", "group", .removed, "left"),
            ("member_left", "member", .modified, "left"),
            ("group_deleted", "group", .removed, "deleted"),
            ("shared_alarm_deleted", "shared_alarm", .removed, "deleted"),
            ("account_deleted", "group", .removed, "deleted"),
            ("account_deleted", "user", .removed, "deleted"),
            ("member_removed", "shared_alarm", .modified, "unassigned"),
            ("member_left", "shared_alarm", .modified, "unassigned"),
            ("account_deleted", "shared_alarm", .modified, "unassigned"),
            ("member_removed", "group", .modified, nil),
            ("role_changed", "member", .modified, nil),
            ("shared_alarm_updated", "shared_alarm", .modified, nil),
            ("member_joined", "member", .added, nil),
        ] as [(String, String, Change.Op, String?)])
    func changeReasons(event: String, kind: String, op: Change.Op, expected: String?) {
        #expect(
            RemovalReason.forChange(event: ChangeEvent(rawValue: event), kind: ChangeKind(rawValue: kind), op: op)?.rawValue
                == expected)
    }

    @Test("revocations use the same vocabulary")
    func revocations() {
        #expect(RemovalReason.revocation(event: .memberRemoved) == .accessRevoked)
        #expect(RemovalReason.revocation(event: .memberLeft) == .left)
        #expect(RemovalReason.revocation(event: .groupDeleted) == .deleted)
        #expect(RemovalReason.revocation(event: .accountDeleted) == .deleted)
        #expect(RemovalReason.revocation(event: ChangeEvent(rawValue: "anything_else")) == .accessRevoked)
    }
}
