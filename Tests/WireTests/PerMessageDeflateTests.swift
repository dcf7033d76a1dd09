import TestSupport
import Testing
import Wire

@Suite("RFC 7692 §7.2.3 Examples")
struct PerMessageDeflateExamplesTests {
    let takeover = PerMessageDeflateParameters()

    @Test func helloCompressesToTheRFCBytes() {
        let compressor = PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: false)
        #expect(compressor.compress(Array("Hello".utf8)) == WS.hex("f2 48 cd c9 c9 07 00"))
        // §7.2.3.2: the second "Hello" refers back into the shared window.
        #expect(compressor.compress(Array("Hello".utf8)) == WS.hex("f2 00 11 00 00"))
        var proto = WebSocketProtocol(deflate: takeover)
        #expect(proto.send(text: "Hello") == .send(WS.hex("c1 07 f2 48 cd c9 c9 07 00")))
        #expect(proto.send(text: "Hello") == .send(WS.hex("c1 05 f2 00 11 00 00")))
    }

    @Test func noContextTakeoverCompressesEveryMessageAlike() {
        let compressor = PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: true)
        #expect(compressor.compress(Array("Hello".utf8)) == WS.hex("f2 48 cd c9 c9 07 00"))
        #expect(compressor.compress(Array("Hello".utf8)) == WS.hex("f2 48 cd c9 c9 07 00"))
    }

    @Test func emptyMessageCompressesToOneZeroByte() {
        let compressor = PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: true)
        #expect(compressor.compress([]) == [0x00])
    }

    @Test(arguments: [
        ["f2 48 cd c9 c9 07 00"],  // §7.2.3.1
        ["00 05 00 fa ff 48 65 6c 6c 6f 00"],  // §7.2.3.3 stored block
        ["f3 48 cd c9 c9 07 00 00"],  // §7.2.3.4 BFINAL
        ["f2 48 05 00 00 00 ff ff ca c9 c9 07 00"],  // §7.2.3.5 two blocks
        ["f2 48 cd", "c9 c9 07 00"],  // §7.2.3.1 fragmented
    ])
    func clientMessagesInflateToHello(fragments: [String]) {
        var input: [UInt8] = []
        for (i, fragment) in fragments.enumerated() {
            input += WS.frame(
                i == 0 ? .text : .continuation, WS.hex(fragment), fin: i == fragments.count - 1, rsv1: i == 0)
        }
        #expect(WS.run(input + input, deflate: takeover) == [.deliver(.text("Hello")), .deliver(.text("Hello"))])
    }

    @Test func sharedWindowAcrossClientMessages() {
        let input =
            WS.frame(.text, WS.hex("f2 48 cd c9 c9 07 00"), rsv1: true) + WS.frame(.text, WS.hex("f2 00 11 00 00"), rsv1: true)
        #expect(WS.run(input, deflate: takeover) == [.deliver(.text("Hello")), .deliver(.text("Hello"))])
    }

    @Test func clientNoContextTakeoverResetsTheInflaterAfterEveryMessage() {
        // §7.2.3.2's second message refers back into the first: valid only with a shared window.
        let input =
            WS.frame(.text, WS.hex("f2 48 cd c9 c9 07 00"), rsv1: true) + WS.frame(.text, WS.hex("f2 00 11 00 00"), rsv1: true)
        let noContext = PerMessageDeflateParameters(clientNoContextTakeover: true)
        #expect(WS.run(input, deflate: noContext) == [.deliver(.text("Hello"))] + WS.failure(.protocolError, "decompression failed"))
    }

    @Test func emptyCompressedMessage() {
        #expect(WS.run(WS.frame(.binary, [0x00], rsv1: true), deflate: takeover) == [.deliver(.binary([]))])
    }

    @Test func uncompressedMessagesStillFlow() {
        #expect(WS.run(WS.text("plain"), deflate: takeover) == [.deliver(.text("plain"))])
    }

    @Test func garbageIs1002() {
        #expect(
            WS.run(WS.frame(.binary, [0xFF, 0xFF, 0xFF], rsv1: true), deflate: takeover)
                == WS.failure(.protocolError, "decompression failed"))
    }

    @Test func invalidUTF8InsideCompressedTextIs1007() {
        let compressed = PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: true).compress([0x61, 0xC0, 0xAF])
        #expect(WS.run(WS.frame(.text, compressed, rsv1: true), deflate: takeover) == WS.failure(.invalidFramePayloadData, "invalid UTF-8"))
    }
}

@Suite("RFC 7692 §7.2 Round trips and limits")
struct PerMessageDeflateRoundTripTests {
    static let messages: [[UInt8]] = [
        Array("{\"op\":\"change\",\"topic\":\"group:1\",\"seq\":42}".utf8),
        Array(String(repeating: "abcdefgh", count: 5000).utf8),
        randomBytes(70000),  // incompressible
        [],
    ]

    @Test(arguments: [(false, false), (true, false), (false, true), (true, true)])
    func roundTrip(serverNoContext: Bool, clientNoContext: Bool) throws {
        let parameters = PerMessageDeflateParameters(
            serverNoContextTakeover: serverNoContext, clientNoContextTakeover: clientNoContext)
        // Client → server: a client compressor feeding the server protocol.
        let client = PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: clientNoContext)
        var input: [UInt8] = []
        for message in Self.messages { input += WS.frame(.binary, client.compress(message), rsv1: true) }
        var server = WebSocketProtocol(deflate: parameters)
        #expect(WS.drain(&server, input) == Self.messages.map { .deliver(.binary($0)) })

        // Server → client: decode the server's frames with a client-side inflater.
        let inflater = PerMessageDeflateDecompressor(windowBits: 15, noContextTakeover: serverNoContext)
        for message in Self.messages {
            guard case .send(let bytes) = server.send(binary: message) else {
                Issue.record("no send")
                return
            }
            var decoder = WebSocketFrameDecoder(requireMasked: false, perMessageDeflate: true)
            decoder.append(bytes)
            let frame = try #require(try decoder.next())
            #expect(frame.fin && !frame.masked)
            // Without context takeover a payload that does not shrink is sent uncompressed.
            #expect(frame.rsv1 || serverNoContext)
            var output: [UInt8] = []
            if frame.rsv1 {
                try inflater.decompress(frame.payload, final: true, into: &output, maxOutput: 1 << 20)
            } else {
                output = frame.payload
            }
            #expect(output == message)
        }
    }

    @Test func decompressionBombIsCappedWhileInflating() {
        let bomb = PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: true)
            .compress([UInt8](repeating: 0, count: 50 << 20))
        #expect(bomb.count < 100_000)
        let input = WS.frame(.binary, bomb, rsv1: true)
        var proto = WebSocketProtocol(deflate: PerMessageDeflateParameters())
        #expect(WS.drain(&proto, input) == WS.failure(.messageTooBig, "message too large"))
    }

    @Test func inflatedSizeAtTheLimitAndOneOver() {
        let limits = WebSocketLimits(maxMessageSize: 1000, maxInflatedMessageSize: 4096)
        let compressor = PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: true)
        let at = [UInt8](repeating: 0x61, count: 4096)
        #expect(
            WS.run(WS.frame(.text, compressor.compress(at), rsv1: true), limits: limits, deflate: PerMessageDeflateParameters()) == [
                .deliver(.text(String(repeating: "a", count: 4096)))
            ])
        let over = compressor.compress(at + [0x61])
        #expect(
            WS.run(WS.frame(.text, over, rsv1: true), limits: limits, deflate: PerMessageDeflateParameters())
                == WS.failure(.messageTooBig, "message too large"))
    }

    @Test func decompressorCapDirectly() throws {
        let compressed = PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: true).compress(
            [UInt8](repeating: 7, count: 100_000))
        let inflater = PerMessageDeflateDecompressor(windowBits: 15, noContextTakeover: true)
        var output: [UInt8] = []
        #expect(throws: WebSocketProtocolError.messageTooLarge) {
            try inflater.decompress(compressed, final: true, into: &output, maxOutput: 99_999)
        }
        #expect(output.count <= 100_000)
        output = []
        try inflater.decompress(compressed, final: true, into: &output, maxOutput: 100_000)
        #expect(output.count == 100_000)
    }

    @Test func encodedMessageIsReusedUnderNoContextTakeover() {
        let message = WebSocketEncodedMessage(text: String(repeating: "broadcast ", count: 50))
        var plain = WebSocketProtocol()
        #expect(plain.send(message) == .send(message.plainFrame))
        var noContext = WebSocketProtocol(deflate: PerMessageDeflateParameters(serverNoContextTakeover: true))
        #expect(noContext.send(message) == .send(message.deflatedFrame!))
        #expect(noContext.send(message) == .send(message.deflatedFrame!))
        // A window smaller than the encoding's: this connection compresses on its own. The
        // repeat at distance 2000 is out of reach of a 1 KiB window.
        let block = randomBytes(2000)
        let far = WebSocketEncodedMessage(binary: block + block)
        var smallWindow = WebSocketProtocol(deflate: PerMessageDeflateParameters(serverNoContextTakeover: true, serverMaxWindowBits: 10))
        guard case .send(let bytes) = smallWindow.send(far) else {
            Issue.record("no send")
            return
        }
        #expect(bytes == far.plainFrame)  // a 1 KiB window finds nothing: sent uncompressed
        let tiny = WebSocketEncodedMessage(text: "Hello")
        #expect(tiny.deflatedFrame == nil)
        #expect(noContext.send(tiny) == .send(WS.hex("81 05 48 65 6c 6c 6f")))
        #expect(noContext.send(text: "Hello") == .send(WS.hex("81 05 48 65 6c 6c 6f")))
        var takeover = WebSocketProtocol(deflate: PerMessageDeflateParameters())
        #expect(takeover.send(message) == .send(message.deflatedFrame!))  // first message: same bytes
        #expect(takeover.send(message) != .send(message.deflatedFrame!))  // then it uses its window
    }

    @Test func sharedCompressorServesEveryNoContextConnectionOfALoop() {
        let shared = PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: true)
        let text = String(repeating: "shared ", count: 40)
        let encoded = WebSocketEncodedMessage(text: text, compressor: shared)
        var a = WebSocketProtocol(deflate: PerMessageDeflateParameters(serverNoContextTakeover: true), sharedCompressor: shared)
        var b = WebSocketProtocol(deflate: PerMessageDeflateParameters(serverNoContextTakeover: true), sharedCompressor: shared)
        #expect(a.send(text: text) == .send(encoded.deflatedFrame!))
        #expect(b.send(text: text) == .send(encoded.deflatedFrame!))
        #expect(a.send(text: text) == .send(encoded.deflatedFrame!))
        // Not used under context takeover: the second "Hello" refers back into the first.
        var takeover = WebSocketProtocol(deflate: PerMessageDeflateParameters(), sharedCompressor: shared)
        _ = takeover.send(text: "Hello")
        #expect(takeover.send(text: "Hello") == .send(WS.hex("c1 05 f2 00 11 00 00")))
    }

    @Test func windowBits8CompressesWithZlibs9AndStaysDecodable() throws {
        let payload = Array(String(repeating: "0123456789abcdefghij", count: 200).utf8)
        let compressed = PerMessageDeflateCompressor(windowBits: 8, noContextTakeover: true).compress(payload)
        let inflater = PerMessageDeflateDecompressor(windowBits: 8, noContextTakeover: true)
        var output: [UInt8] = []
        try inflater.decompress(compressed, final: true, into: &output, maxOutput: 1 << 20)
        #expect(output == payload)
    }
}

@Suite("RFC 7692 §5 and §7.1 Negotiation")
struct PerMessageDeflateNegotiationTests {
    let config = PerMessageDeflateConfiguration()

    func negotiate(_ values: [String], _ configuration: PerMessageDeflateConfiguration = PerMessageDeflateConfiguration())
        -> PerMessageDeflate.Agreement?
    {
        PerMessageDeflate.negotiate(offers: values, configuration: configuration)
    }

    @Test func plainOfferAddsServerNoContextTakeover() throws {
        let agreement = try #require(negotiate(["permessage-deflate"]))
        #expect(agreement.responseHeaderValue == "permessage-deflate; server_no_context_takeover")
        #expect(agreement.parameters == PerMessageDeflateParameters(serverNoContextTakeover: true))
        let keep = try #require(negotiate(["permessage-deflate"], PerMessageDeflateConfiguration(serverNoContextTakeover: false)))
        #expect(keep.responseHeaderValue == "permessage-deflate")
    }

    @Test func browserOffer() throws {
        let agreement = try #require(negotiate(["permessage-deflate; client_max_window_bits"]))
        #expect(agreement.responseHeaderValue == "permessage-deflate; server_no_context_takeover")
        #expect(agreement.parameters.clientMaxWindowBits == 15)
        let limited = try #require(
            negotiate(["permessage-deflate; client_max_window_bits"], PerMessageDeflateConfiguration(clientMaxWindowBits: 10)))
        #expect(limited.responseHeaderValue == "permessage-deflate; server_no_context_takeover; client_max_window_bits=10")
        #expect(limited.parameters.clientMaxWindowBits == 10)
    }

    @Test func allParameters() throws {
        let agreement = try #require(
            negotiate([
                """
                permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10; \
                client_max_window_bits=\"12\"
                """
            ]))
        #expect(
            agreement.responseHeaderValue
                == "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10")
        #expect(
            agreement.parameters
                == PerMessageDeflateParameters(
                    serverNoContextTakeover: true, clientNoContextTakeover: true, serverMaxWindowBits: 10,
                    clientMaxWindowBits: 12))
    }

    @Test func serverWindowIsTheSmallerOfOfferAndConfiguration() throws {
        let agreement = try #require(
            negotiate(["permessage-deflate; server_max_window_bits=12"], PerMessageDeflateConfiguration(serverMaxWindowBits: 9)))
        #expect(agreement.parameters.serverMaxWindowBits == 9)
        #expect(agreement.responseHeaderValue.hasSuffix("server_max_window_bits=9"))
        let unasked = try #require(negotiate(["permessage-deflate"], PerMessageDeflateConfiguration(serverMaxWindowBits: 11)))
        #expect(unasked.responseHeaderValue.hasSuffix("server_max_window_bits=11"))
    }

    @Test(arguments: [
        "permessage-deflate; server_max_window_bits",  // needs a value
        "permessage-deflate; server_max_window_bits=7",
        "permessage-deflate; server_max_window_bits=16",
        "permessage-deflate; server_max_window_bits=010",
        "permessage-deflate; client_max_window_bits=20",
        "permessage-deflate; server_no_context_takeover=1",
        "permessage-deflate; client_no_context_takeover; client_no_context_takeover",
        "permessage-deflate; unknown_param",
        "permessage-deflate; server_max_window_bits=\"\"",
    ])
    func invalidOffersAreDeclined(offer: String) {
        #expect(negotiate([offer]) == nil)
    }

    @Test func firstAcceptableOfferWins() throws {
        let agreement = try #require(
            negotiate([
                "x-webkit-deflate-frame, permessage-deflate; server_max_window_bits=99",
                "permessage-deflate; server_max_window_bits=11, permessage-deflate",
            ]))
        #expect(agreement.parameters.serverMaxWindowBits == 11)
    }

    @Test func extensionListSyntax() {
        let parsed = PerMessageDeflate.parseExtensions(" a ; b = 1 ;c=\"q\", , bad;;, d")
        #expect(parsed.map(\.name) == ["a", "d"])
        #expect(parsed[0].parameters == [.init(name: "b", value: "1"), .init(name: "c", value: "q")])
        #expect(PerMessageDeflate.parseExtensions("x; p=\"a,b\", y").map(\.name) == ["y"])
    }

    @Test func noOfferNoAgreement() {
        #expect(negotiate([]) == nil)
        #expect(negotiate(["foo, bar"]) == nil)
    }
}

/// Bytes from a fixed-seed LCG: incompressible, reproducible.
func randomBytes(_ count: Int) -> [UInt8] {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    return (0..<count).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return UInt8(state >> 56)
    }
}
