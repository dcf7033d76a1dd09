import TestSupport
import Testing
import Wire

@Suite("RFC 6455 §7.4 Status Codes")
struct WebSocketCloseCodeTests {
    static let table: [(UInt16, Bool)] = [
        (0, false), (999, false), (1000, true), (1001, true), (1002, true), (1003, true), (1004, false),
        (1005, false), (1006, false), (1007, true), (1008, true), (1009, true), (1010, true), (1011, true),
        (1012, true), (1013, true), (1014, true), (1015, false), (1016, false), (1100, false), (2000, false),
        (2999, false), (3000, true), (3999, true), (4000, true), (4999, true), (5000, false), (65535, false),
    ]

    @Test(arguments: table)
    func validityOnTheWire(code: UInt16, valid: Bool) {
        #expect(WebSocketCloseCode(rawValue: code).isValidOnWire == valid)
        let expected: [WebSocketAction] =
            valid
            ? [
                .deliver(.closed(WebSocketCloseCode(rawValue: code), "")),
                .send(WebSocketFrameEncoder.encodeClose(code: WebSocketCloseCode(rawValue: code))), .closeConnection,
            ]
            : WS.failure(.protocolError, "invalid close code")
        #expect(WS.run(WS.close(code)) == expected)
    }

    @Test func namedCodes() {
        #expect(WebSocketCloseCode.normalClosure.rawValue == 1000)
        #expect(WebSocketCloseCode.messageTooBig.rawValue == 1009)
        #expect(WebSocketCloseCode.tlsHandshake.rawValue == 1015)
    }
}

@Suite("RFC 6455 §7 Closing the Connection")
struct WebSocketClosingTests {
    @Test func peerCloseIsEchoedWithItsCode() {
        let input = WS.close(1000, Array("bye".utf8))
        #expect(WS.run(input) == [.deliver(.closed(.normalClosure, "bye")), .send(WS.hex("88 02 03 e8")), .closeConnection])
    }

    @Test func emptyCloseIsAnsweredWithAnEmptyClose() {
        #expect(WS.run(WS.close(nil)) == [.deliver(.closed(.noStatusReceived, "")), .send(WS.hex("88 00")), .closeConnection])
    }

    @Test func oneBytePayloadIs1002() {
        #expect(WS.run(WS.frame(.close, [0x03])) == WS.failure(.protocolError, "invalid close payload"))
    }

    @Test func invalidUTF8ReasonIs1007() {
        #expect(WS.run(WS.close(1000, [0xCE, 0xBA, 0xE1, 0xBD])) == WS.failure(.invalidFramePayloadData, "invalid UTF-8"))
    }

    @Test func closeReason123BytesIsFineAndFramesAfterCloseAreIgnored() {
        let reason = [UInt8](repeating: 0x72, count: 123)
        let input = WS.close(4001, reason) + WS.text("ignored") + WS.frame(.ping)
        #expect(
            WS.run(input) == [
                .deliver(.closed(WebSocketCloseCode(rawValue: 4001), String(repeating: "r", count: 123))),
                .send(WS.hex("88 02 0f a1")), .closeConnection,
            ])
    }

    @Test func closeInsideAFragmentedMessage() {
        let input = WS.text("par", fin: false) + WS.close(1001)
        #expect(WS.run(input) == [.deliver(.closed(.goingAway, "")), .send(WS.hex("88 02 03 e9")), .closeConnection])
    }

    @Test func serverInitiatedCloseWaitsForThePeer() {
        var proto = WebSocketProtocol()
        #expect(proto.close(code: .goingAway, reason: "restart") == .sendClose(WS.hex("88 09 03 e9 72 65 73 74 61 72 74")))
        #expect(proto.state == .closing)
        #expect(proto.close() == .doNothing)
        #expect(proto.send(text: "late") == .doNothing)
        #expect(proto.ping() == .doNothing)
        // Messages still arrive while closing; pings are not answered.
        #expect(WS.drain(&proto, WS.text("in flight") + WS.frame(.ping, [1])) == [.deliver(.text("in flight")), .deliver(.ping([1]))])
        #expect(WS.drain(&proto, WS.close(1001)) == [.deliver(.closed(.goingAway, "")), .closeConnection])
        #expect(proto.state == .closed)
        #expect(WS.drain(&proto, WS.text("after")) == [])
    }

    @Test func closeWithACodeNotValidOnTheWireSendsNoCode() {
        var proto = WebSocketProtocol()
        #expect(proto.close(code: .abnormalClosure, reason: "x") == .sendClose(WS.hex("88 00")))
    }

    @Test func closeTimeoutEndsAClosingConnection() {
        var proto = WebSocketProtocol()
        _ = proto.close()
        proto.closeTimedOut()
        var actions: [WebSocketAction] = []
        while let action = proto.next() { actions.append(action) }
        #expect(actions == [.deliver(.closed(.abnormalClosure, "")), .closeConnection])
        #expect(proto.state == .closed)
    }

    @Test func closeTimeoutIsIgnoredUnlessClosing() {
        var proto = WebSocketProtocol()
        proto.closeTimedOut()
        #expect(proto.next() == nil)
        #expect(proto.state == .open)
    }

    @Test func protocolErrorWhileClosingSendsNoSecondClose() {
        var proto = WebSocketProtocol()
        _ = proto.close()
        #expect(
            WS.drain(&proto, WS.frame(.continuation)) == [
                .deliver(.closed(.protocolError, "unexpected continuation frame")), .closeConnection,
            ])
    }

    @Test func endOfStreamWithoutCloseIs1006() {
        var proto = WebSocketProtocol()
        proto.receive(WS.text("whole") + Array(WS.text("partial").prefix(3)))
        proto.receiveEndOfStream()
        var actions: [WebSocketAction] = []
        while let action = proto.next() { actions.append(action) }
        #expect(actions == [.deliver(.text("whole")), .deliver(.closed(.abnormalClosure, "")), .closeConnection])
    }

    @Test func longReasonIsCutAtACharacterBoundary() {
        let frame = WebSocketFrameEncoder.encodeClose(code: .normalClosure, reason: String(repeating: "é", count: 100))
        #expect(frame[1] == 2 + 122)
        #expect(WebSocketFrameEncoder.encodeClose(code: nil, reason: "ignored") == WS.hex("88 00"))
    }
}
