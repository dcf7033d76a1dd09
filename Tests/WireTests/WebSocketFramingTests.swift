import TestSupport
import Testing
import Wire

@Suite("RFC 6455 §5.7 Examples")
struct WebSocketExamplesTests {
    let hello = Array("Hello".utf8)

    @Test func unmaskedHelloIsWhatTheServerSends() {
        #expect(WebSocketFrameEncoder.encodeMessage(opcode: .text, payload: hello) == WS.hex("81 05 48 65 6c 6c 6f"))
        var proto = WebSocketProtocol()
        #expect(proto.send(text: "Hello") == .send(WS.hex("81 05 48 65 6c 6c 6f")))
    }

    @Test func maskedHelloFromTheClient() {
        let input = WS.hex("81 85 37 fa 21 3d 7f 9f 4d 51 58")
        #expect(WS.text("Hello") == input)
        #expect(WS.run(input) == [.deliver(.text("Hello"))])
    }

    @Test func fragmentedUnmaskedHelloDecodes() throws {
        var decoder = WebSocketFrameDecoder(requireMasked: false)
        decoder.append(WS.hex("01 03 48 65 6c 80 02 6c 6f"))
        #expect(try decoder.next() == WebSocketFrame(fin: false, opcode: .text, payload: Array("Hel".utf8)))
        #expect(try decoder.next() == WebSocketFrame(fin: true, opcode: .continuation, payload: Array("lo".utf8)))
        #expect(try decoder.next() == nil)
    }

    @Test func fragmentedMaskedHelloAssembles() {
        let input = WS.frame(.text, Array("Hel".utf8), fin: false) + WS.frame(.continuation, Array("lo".utf8))
        #expect(WS.run(input) == [.deliver(.text("Hello"))])
    }

    @Test func pingIsAnsweredWithAnUnmaskedPongEchoingThePayload() {
        #expect(WebSocketFrameEncoder.encodeMessage(opcode: .ping, payload: hello) == WS.hex("89 05 48 65 6c 6c 6f"))
        let input = WS.frame(.ping, hello)
        #expect(WS.run(input) == [.send(WS.hex("8a 05 48 65 6c 6c 6f")), .deliver(.ping(hello))])
    }

    @Test func maskedPongIsDelivered() {
        let input = WS.hex("8a 85 37 fa 21 3d 7f 9f 4d 51 58")
        #expect(WS.run(input) == [.deliver(.pong(hello))])
    }

    @Test func lengthEncodings256And65536() throws {
        let small = [UInt8](repeating: 0xAB, count: 256)
        #expect(Array(WebSocketFrameEncoder.encodeMessage(opcode: .binary, payload: small).prefix(4)) == WS.hex("82 7e 01 00"))
        let large = [UInt8](repeating: 0xCD, count: 65536)
        let encoded = WebSocketFrameEncoder.encodeMessage(opcode: .binary, payload: large)
        #expect(Array(encoded.prefix(10)) == WS.hex("82 7f 00 00 00 00 00 01 00 00"))
        #expect(encoded.count == 65546)
        var proto = WebSocketProtocol()
        #expect(WS.drain(&proto, WS.frame(.binary, large)) == [.deliver(.binary(large))])
        #expect(WS.run(WS.frame(.binary, small)) == [.deliver(.binary(small))])
    }

    @Test func maskingAcrossArbitraryChunksMatchesWholeFrames() {
        let payload = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        #expect(WS.run(WS.frame(.binary, payload, key: (1, 2, 3, 250))) == [.deliver(.binary(payload))])
    }

    @Test func nonMinimalLengthsAreAccepted() {
        // "Hi" with a 16-bit and a 64-bit length field, masked with a zero key.
        let sixteen = WS.hex("81 fe 00 02 00 00 00 00 48 69")
        let sixtyFour = WS.hex("81 ff 00 00 00 00 00 00 00 02 00 00 00 00 48 69")
        #expect(WS.run(sixteen) == [.deliver(.text("Hi"))])
        #expect(WS.run(sixtyFour) == [.deliver(.text("Hi"))])
    }

    @Test func emptyMessagesAndInterleavedFrames() {
        let input =
            WS.frame(.text) + WS.frame(.binary) + WS.frame(.binary, [1], fin: false) + WS.frame(.ping, [9])
            + WS.frame(.continuation, [2], fin: false) + WS.frame(.pong) + WS.frame(.continuation, [3])
        #expect(
            WS.run(input) == [
                .deliver(.text("")), .deliver(.binary([])), .send(WS.hex("8a 01 09")), .deliver(.ping([9])),
                .deliver(.pong([])), .deliver(.binary([1, 2, 3])),
            ])
    }
}

@Suite("RFC 6455 §5.2 Base Framing — protocol errors")
struct WebSocketFramingErrorTests {
    @Test func unmaskedClientFrameIs1002() {
        #expect(WS.run(WS.hex("81 05 48 65 6c 6c 6f")) == WS.failure(.protocolError, "frame not masked"))
    }

    @Test(arguments: [0x3, 0x4, 0x5, 0x6, 0x7, 0xB, 0xC, 0xD, 0xE, 0xF] as [UInt8])
    func reservedOpcodeIs1002(opcode: UInt8) {
        #expect(WS.run(WS.frame(WebSocketOpcode(rawValue: opcode), [1])) == WS.failure(.protocolError, "reserved opcode"))
    }

    @Test(arguments: [0x40, 0x20, 0x10] as [UInt8])
    func reservedBitsWithoutExtensionAre1002(bit: UInt8) {
        var input = WS.text("x")
        input[0] |= bit
        #expect(WS.run(input) == WS.failure(.protocolError, "reserved bits set"))
    }

    @Test func rsv1OnlyOnTheFirstDataFrameUnderDeflate() {
        let deflate = PerMessageDeflateParameters()
        let onContinuation = WS.frame(.text, [0x48], fin: false) + WS.frame(.continuation, [0x49], rsv1: true)
        #expect(WS.run(onContinuation, deflate: deflate) == WS.failure(.protocolError, "reserved bits set"))
        #expect(WS.run(WS.frame(.ping, [], rsv1: true), deflate: deflate) == WS.failure(.protocolError, "reserved bits set"))
        var rsv2 = WS.text("x")
        rsv2[0] |= 0x20
        #expect(WS.run(rsv2, deflate: deflate) == WS.failure(.protocolError, "reserved bits set"))
    }

    @Test func fragmentedControlFrameIs1002() {
        #expect(WS.run(WS.frame(.ping, [1], fin: false)) == WS.failure(.protocolError, "fragmented control frame"))
    }

    @Test func controlFramesAt125AndOver() {
        let at = [UInt8](repeating: 7, count: 125)
        #expect(WS.run(WS.frame(.pong, at)) == [.deliver(.pong(at))])
        let over = [UInt8](repeating: 7, count: 126)
        #expect(WS.run(WS.frame(.ping, over)) == WS.failure(.protocolError, "control frame too long"))
    }

    @Test func sixtyFourBitLengthWithMSBSetIs1002() {
        let input = WS.hex("82 ff 80 00 00 00 00 00 00 01 00 00 00 00")
        #expect(WS.run(input) == WS.failure(.protocolError, "invalid payload length"))
    }

    @Test func continuationWithoutMessageIs1002() {
        #expect(WS.run(WS.frame(.continuation, [1])) == WS.failure(.protocolError, "unexpected continuation frame"))
    }

    @Test func newDataFrameInsideAMessageIs1002() {
        let input = WS.text("a", fin: false) + WS.text("b")
        #expect(WS.run(input) == WS.failure(.protocolError, "expected continuation frame"))
    }

    @Test func nothingIsProcessedAfterAFailure() {
        let input = WS.frame(.continuation) + WS.text("later") + WS.frame(.ping)
        var proto = WebSocketProtocol()
        #expect(WS.drain(&proto, input) == WS.failure(.protocolError, "unexpected continuation frame"))
        #expect(WS.drain(&proto, WS.text("more")) == [])
        #expect(proto.state == .closed)
        #expect(proto.failure == .unexpectedContinuation)
        #expect(proto.send(text: "x") == .doNothing)
    }
}

@Suite("WebSocketLimits")
struct WebSocketLimitsTests {
    let limits = WebSocketLimits(maxFrameSize: 16, maxMessageSize: 24, maxControlPayload: 8)

    @Test func defaults() {
        let defaults = WebSocketLimits()
        #expect(defaults.maxFrameSize == 1 << 20)
        #expect(defaults.maxMessageSize == 1 << 20)
        #expect(defaults.maxControlPayload == 125)
        #expect(defaults.maxInflatedMessageSize == defaults.maxMessageSize)
    }

    @Test func frameSizeAtTheLimitAndOneOver() {
        let at = [UInt8](repeating: 1, count: 16)
        #expect(WS.run(WS.frame(.binary, at), limits: limits) == [.deliver(.binary(at))])
        let over = WS.frame(.binary, [UInt8](repeating: 1, count: 17))
        #expect(WS.run(over, limits: limits) == WS.failure(.messageTooBig, "frame too large"))
    }

    @Test func frameSizeIsJudgedBeforeThePayloadArrives() {
        var proto = WebSocketProtocol(limits: limits)
        let header = Array(WS.frame(.binary, [UInt8](repeating: 1, count: 17)).prefix(2))
        #expect(WS.drain(&proto, header) == WS.failure(.messageTooBig, "frame too large"))
        var big = WebSocketProtocol()
        #expect(WS.drain(&big, WS.hex("82 ff 00 00 00 01 00 00 00 00")) == WS.failure(.messageTooBig, "frame too large"))
    }

    @Test func messageSizeAtTheLimitAndOneOver() {
        let at = WS.frame(.binary, [UInt8](repeating: 1, count: 16), fin: false) + WS.frame(.continuation, [UInt8](repeating: 2, count: 8))
        #expect(WS.run(at, limits: limits) == [.deliver(.binary([UInt8](repeating: 1, count: 16) + [UInt8](repeating: 2, count: 8)))])
        let over =
            WS.frame(.binary, [UInt8](repeating: 1, count: 16), fin: false) + WS.frame(.continuation, [UInt8](repeating: 2, count: 9))
        #expect(WS.run(over, limits: limits) == WS.failure(.messageTooBig, "message too large"))
    }

    @Test func controlPayloadAtTheLimitAndOneOver() {
        let at = [UInt8](repeating: 3, count: 8)
        #expect(WS.run(WS.frame(.pong, at), limits: limits) == [.deliver(.pong(at))])
        #expect(WS.run(WS.frame(.pong, at + [3]), limits: limits) == WS.failure(.messageTooBig, "frame too large"))
    }
}
