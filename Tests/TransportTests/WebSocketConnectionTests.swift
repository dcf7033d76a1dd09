import Dispatch
import Hashing
import Synchronization
import TestSupport
import Testing
import Transport
import Wire

/// What one server-side WebSocket saw, for assertions from the test thread.
final class WebSocketRecorder: Sendable {
    private let state = Mutex<(sockets: [WebSocket], events: [WebSocketEvent])>(([], []))
    var events: [WebSocketEvent] { state.withLock { $0.events } }
    var sockets: [WebSocket] { state.withLock { $0.sockets } }
    func opened(_ socket: WebSocket) { state.withLock { $0.sockets.append(socket) } }
    func record(_ event: WebSocketEvent) { state.withLock { $0.events.append(event) } }
    var messageCount: Int {
        events.filter { if case .binary = $0 { true } else if case .text = $0 { true } else { false } }.count
    }
    var closedEvent: WebSocketEvent? { events.last.flatMap { if case .closed = $0 { $0 } else { nil } } }
    var closedCode: WebSocketCloseCode? { if case .closed(let code, _) = events.last { code } else { nil } }
}

/// Echoes text and binary messages; records everything.
final class RecordingEchoDelegate: WebSocketDelegate {
    let recorder: WebSocketRecorder
    init(_ recorder: WebSocketRecorder) { self.recorder = recorder }

    func webSocketOpened(_ socket: WebSocket) { recorder.opened(socket) }

    func webSocket(_ socket: WebSocket, received event: WebSocketEvent) {
        recorder.record(event)
        switch event {
        case .text(let text): socket.send(text: text)
        case .binary(let bytes): socket.send(binary: bytes)
        case .ping, .pong, .closed: break
        }
    }
}

/// Upgrades `/ws` with `RecordingEchoDelegate`; anything else gets the handshake's refusal.
struct WebSocketTestResponder: HTTPResponder {
    let configuration: WebSocketConfiguration
    let recorder: WebSocketRecorder

    func respond(to request: HTTPRequest, context: RequestContext, sink: ResponseSink) {
        switch WebSocketUpgrade.evaluate(request, configuration: configuration, sha1: testSHA1) {
        case .accept(let accepted):
            let recorder = self.recorder
            sink.upgradeToWebSocket(accepted, configuration: configuration) { RecordingEchoDelegate(recorder) }
        case .reject(let rejected):
            sink.send(rejected.response)
        }
    }
}

/// The real SHA-1 (Hashing), as the server executables pass it.
func testSHA1(_ input: [UInt8]) -> [UInt8] { SHA1.hash(input) }

/// Runs `body` against a WebSocket echo server on an ephemeral loopback port.
func withWebSocketServer(
    _ adjust: (inout WebSocketConfiguration) -> Void = { _ in },
    server adjustServer: (inout ServerConfiguration) -> Void = { _ in },
    _ body: (HTTPServer, Int, WebSocketRecorder) throws -> Void
) throws {
    var configuration = WebSocketConfiguration()
    configuration.pingInterval = nil
    configuration.idleTimeout = nil
    adjust(&configuration)
    let recorder = WebSocketRecorder()
    let server = HTTPServer(
        configuration: testConfiguration(adjustServer),
        responder: WebSocketTestResponder(configuration: configuration, recorder: recorder))
    let port = try server.start()
    defer { #expect(shutdownAndWait(server), "the server shut down: every connection closed") }
    try body(server, port, recorder)
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

@Suite("WebSocket handshake over a socket (RFC 6455 §4.2)")
struct WebSocketHandshakeSocketTests {
    @Test func acceptsAndAnswersTheKey() throws {
        try withWebSocketServer { _, port, recorder in
            let ws = try WebSocketTestClient(port: port, path: "/ws", extraHeaders: [("Origin", "https://a.example")])
            #expect(ws.handshake.status == 101)
            #expect(ws.handshakeHeader("sec-websocket-accept") == WebSocketTestClient.expectedAccept)
            #expect(ws.handshakeHeader("upgrade")?.lowercased() == "websocket")
            #expect(ws.handshakeHeader("sec-websocket-extensions") == nil)
            #expect(eventually { recorder.sockets.count == 1 })
        }
    }

    @Test func wrongVersionIs426WithTheVersionWeSpeak() throws {
        try withWebSocketServer { _, port, recorder in
            let ws = try WebSocketTestClient(port: port, extraHeaders: [("Sec-WebSocket-Version", "8")])
            #expect(ws.handshake.status == 426)
            #expect(ws.handshakeHeader("sec-websocket-version") == "13")
            #expect(recorder.sockets.isEmpty)
        }
    }

    @Test func plainRequestIs426() throws {
        try withWebSocketServer { _, port, _ in
            let response = try LoopbackClient.request(port: port, "GET", "/ws")
            #expect(response.status == 426)
            #expect(header("upgrade", response) == "websocket")
        }
    }

    @Test func upgradeHelperExposesTheOriginAndHonoursADisabledDeflate() throws {
        var headers: HTTPHeaders = [
            "Upgrade": "websocket", "Connection": "keep-alive, Upgrade", "Sec-WebSocket-Key": WebSocketTestClient.key,
            "Sec-WebSocket-Version": "13", "Origin": "https://evil.example",
        ]
        headers.add(name: "Sec-WebSocket-Extensions", value: "permessage-deflate")
        let request = HTTPRequest(head: HTTPRequestHead(method: .get, target: "/v1/realtime", headers: headers))
        var configuration = WebSocketConfiguration()
        configuration.deflate = nil
        guard case .accept(let accepted) = WebSocketUpgrade.evaluate(request, configuration: configuration, sha1: testSHA1)
        else {
            Issue.record("refused a valid handshake")
            return
        }
        #expect(accepted.origin == "https://evil.example")
        #expect(accepted.deflate == nil)
        #expect(accepted.response.status == .switchingProtocols)
        guard case .accept(let withDeflate) = WebSocketUpgrade.evaluate(request, sha1: testSHA1) else {
            Issue.record("refused a valid handshake")
            return
        }
        #expect(withDeflate.deflate?.serverNoContextTakeover == true)
    }

    @Test func missingKeyIs400AndTheConnectionStaysHTTP() throws {
        try withWebSocketServer { _, port, recorder in
            let ws = try WebSocketTestClient(port: port, extraHeaders: [("Sec-WebSocket-Key", "")])
            #expect(ws.handshake.status == 400)
            let again = try ws.connection.request("GET", "/plain")
            #expect(again.status == 426)
            #expect(recorder.sockets.isEmpty)
        }
    }
}

@Suite("WebSocket connection: messages, control frames, close")
struct WebSocketConnectionTests {
    @Test func maskedTextAndBinaryAreEchoed() throws {
        try withWebSocketServer { _, port, recorder in
            let ws = try WebSocketTestClient(port: port, path: "/ws")
            try ws.send(text: "héllo")
            #expect(try ws.readFrame() == .init(opcode: .text, payload: bytes("héllo")))
            let blob = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            try ws.send(opcode: .binary, payload: blob)
            #expect(try ws.readFrame() == .init(opcode: .binary, payload: blob))
            // Fragmented, with a Ping in between (RFC 6455 §5.4): one message back.
            try ws.send(opcode: .text, payload: bytes("frag"), fin: false)
            try ws.send(opcode: .ping, payload: bytes("p"))
            try ws.send(opcode: .continuation, payload: bytes("ment"))
            #expect(try ws.readFrame() == .init(opcode: .pong, payload: bytes("p")))
            #expect(try ws.readFrame() == .init(opcode: .text, payload: bytes("fragment")))
            #expect(recorder.events.contains(.text("fragment")))
        }
    }

    @Test func framesSentWithTheRequestReachTheNewHandler() throws {
        try withWebSocketServer { _, port, _ in
            let early =
                WebSocketTestClient.frameBytes(opcode: .text, payload: bytes("early"))
                + WebSocketTestClient.frameBytes(opcode: .text, payload: bytes("bird"), seed: 9)
            let ws = try WebSocketTestClient(port: port, path: "/ws", earlyBytes: early)
            #expect(ws.handshake.status == 101)
            #expect(try ws.readFrame().payload == bytes("early"))
            #expect(try ws.readFrame().payload == bytes("bird"))
        }
    }

    @Test func unmaskedClientFrameFailsWith1002() throws {
        try withWebSocketServer { _, port, recorder in
            let ws = try WebSocketTestClient(port: port, path: "/ws")
            try ws.send(opcode: .text, payload: bytes("bare"), masked: false)
            let frames = try ws.readUntilClose()
            #expect(frames.map(\.opcode) == [.close])
            #expect(frames.first?.closeCode == 1002)
            #expect(eventually { recorder.closedCode == .protocolError })
        }
    }

    @Test func pingIsAnsweredWithPongOfTheSamePayload() throws {
        try withWebSocketServer { _, port, recorder in
            let ws = try WebSocketTestClient(port: port, path: "/ws")
            try ws.send(opcode: .ping, payload: bytes("are you there"))
            #expect(try ws.readFrame() == .init(opcode: .pong, payload: bytes("are you there")))
            #expect(eventually { recorder.events == [.ping(bytes("are you there"))] })
        }
    }

    @Test func clientInitiatedCloseIsEchoedAndTheServerClosesTCP() throws {
        try withWebSocketServer { _, port, recorder in
            let ws = try WebSocketTestClient(port: port, path: "/ws")
            try ws.sendClose(code: 1000, reason: "done")
            let frames = try ws.readUntilClose()
            #expect(frames.count == 1)
            #expect(frames.first?.opcode == .close)
            #expect(frames.first?.closeCode == 1000)
            #expect(eventually { recorder.closedEvent == .closed(.normalClosure, "done") })
        }
    }

    @Test func serverInitiatedCloseFromAnotherThread() throws {
        try withWebSocketServer { server, port, recorder in
            let ws = try WebSocketTestClient(port: port, path: "/ws")
            #expect(eventually { recorder.sockets.count == 1 })
            let socket = recorder.sockets[0]
            blockingQueue().async {
                socket.send(text: "last words")
                socket.close(code: WebSocketCloseCode(rawValue: 4001), reason: "bye")
                socket.send(text: "ignored: closing")
            }
            #expect(try ws.readFrame() == .init(opcode: .text, payload: bytes("last words")))
            let close = try ws.readFrame()
            #expect(close.opcode == .close)
            #expect(close.closeCode == 4001)
            #expect(close.closeReason == "bye")
            try ws.sendClose(code: 4001)
            #expect(try ws.readUntilClose().isEmpty)
            #expect(eventually { recorder.closedEvent == .closed(WebSocketCloseCode(rawValue: 4001), "") })
            #expect(eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func aBurstSentFromAnotherThreadArrivesWholeAndInOrder() throws {
        // Sends from other threads (how the realtime feed broadcasts) hop to the loop one by one:
        // every message must leave, in order, including the last one of a burst.
        try withWebSocketServer { _, port, recorder in
            let ws = try WebSocketTestClient(port: port, path: "/ws")
            #expect(eventually { recorder.sockets.count == 1 })
            let socket = recorder.sockets[0]
            let total = 500
            blockingQueue().async {
                for i in 0..<total { socket.send(text: "message \(i)") }
            }
            for i in 0..<total {
                #expect(try ws.readFrame() == .init(opcode: .text, payload: bytes("message \(i)")))
            }
            blockingQueue().async { socket.send(text: "alone") }
            #expect(try ws.readFrame() == .init(opcode: .text, payload: bytes("alone")))
        }
    }

    @Test func closeHandshakeTimesOutWhenThePeerNeverAnswers() throws {
        let clock = ManualClock()  // the close deadline is moved past, not slept through
        try withWebSocketServer({ $0.closeTimeout = .seconds(5) }, server: { $0.clock = clock }) { _, port, recorder in
            let ws = try WebSocketTestClient(port: port, path: "/ws")
            #expect(eventually { recorder.sockets.count == 1 })
            recorder.sockets[0].close(code: .normalClosure)
            // The Close frame leaves after the server read the clock for its deadline (t0).
            #expect(try ws.readFrame().opcode == .close)
            clock.advance(by: 5_000)  // t0 + closeTimeout, no Close back from us
            #expect(try ws.readUntilClose(timeout: LoopbackClient.hangBound).isEmpty)
            #expect(eventually { recorder.closedEvent == .closed(.abnormalClosure, "") })
        }
    }

    @Test func peerVanishingWithoutCloseIsAbnormal() throws {
        try withWebSocketServer { server, port, recorder in
            let ws = try WebSocketTestClient(port: port, path: "/ws")
            #expect(eventually { recorder.sockets.count == 1 })
            ws.connection.close()
            #expect(eventually { recorder.closedEvent == .closed(.abnormalClosure, "") })
            #expect(eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func serverShutdownSends1001() throws {
        var configuration = WebSocketConfiguration()
        configuration.pingInterval = nil
        let recorder = WebSocketRecorder()
        let server = HTTPServer(
            configuration: testConfiguration { $0.shutdownGracePeriod = .seconds(5) },
            responder: WebSocketTestResponder(configuration: configuration, recorder: recorder))
        let port = try server.start()
        let ws = try WebSocketTestClient(port: port, path: "/ws")
        #expect(eventually { recorder.sockets.count == 1 })
        let done = DispatchSemaphore(value: 0)
        server.shutdown { done.signal() }
        let close = try ws.readFrame()
        #expect(close.opcode == .close)
        #expect(close.closeCode == 1001)
        try ws.sendClose(code: 1001)
        #expect(try ws.readUntilClose().isEmpty)
        #expect(done.wait(timeout: .now() + .seconds(4)) == .success)
        #expect(recorder.closedEvent == .closed(.goingAway, ""))
    }
}

@Suite("WebSocket heartbeat, back-pressure, permessage-deflate")
struct WebSocketConnectionBehaviourTests {
    @Test func pingsOnTheIntervalAndClosesAPeerThatGoesQuiet() throws {
        let clock = ManualClock()  // every interval and timeout is moved past, not slept through
        try withWebSocketServer(
            {
                $0.pingInterval = .seconds(20)
                $0.idleTimeout = .seconds(60)
                $0.closeTimeout = .seconds(5)
            }, server: { $0.clock = clock }
        ) { _, port, recorder in
            let ws = try WebSocketTestClient(port: port, path: "/ws")
            #expect(eventually { recorder.sockets.count == 1 })  // opened: its deadlines run from t0
            // Answering keeps it open past the idle timeout: a ping per interval for 120 s, each answered.
            // The server records a pong after it restarted the idle deadline: wait for that before
            // moving the clock again, so the deadline runs from the pong's simulated time.
            func pongs() -> Int { recorder.events.filter { if case .pong = $0 { true } else { false } }.count }
            for answered in 1...6 {
                clock.advance(by: 20_000)
                let frame = try ws.readFrame(timeout: .seconds(10))
                #expect(frame.opcode == .ping)
                try ws.send(opcode: .pong, payload: frame.payload)
                #expect(eventually { pongs() == answered })
            }
            // Silence for the idle timeout after the last pong (t0 + 120 s): a Close 1001; no Close
            // back within the close timeout, and the TCP connection goes.
            clock.advance(by: 60_000)
            let frame = try ws.readFrame(timeout: .seconds(10))
            #expect(frame.opcode == .close)
            #expect(frame.closeCode == 1001)
            clock.advance(by: 5_000)
            #expect(try ws.readUntilClose(timeout: LoopbackClient.hangBound).isEmpty)
            #expect(eventually { recorder.closedEvent == .closed(.abnormalClosure, "") })
        }
    }

    @Test func aPeerThatDoesNotReadStopsBeingRead() throws {
        let total = 600
        let size = 64 * 1024
        try withWebSocketServer(server: { $0.maxOutboundBytes = 256 * 1024 }) { server, port, recorder in
            let ws = try WebSocketTestClient(port: port, path: "/ws", timeout: .seconds(20))
            let frame = ws.frameBytes(opcode: .binary, payload: [UInt8](repeating: 0x61, count: size))
            let sender = ws.connection
            let sent = Counter()
            let senderDone = DispatchSemaphore(value: 0)
            nonisolated(unsafe) let unsafeSender = sender
            blockingQueue().async {
                for _ in 0..<total {
                    do { try unsafeSender.send(frame) } catch { break }
                    sent.add()
                }
                senderDone.signal()
            }
            // Nobody reads: the echo fills the socket buffers, then the server stops reading — wait for
            // that state (its output over the limit), not for a quiet spell.
            #expect(eventually { server.hasUnwritableConnection })
            let stalled = recorder.messageCount
            server.drainLoops()
            #expect(recorder.messageCount == stalled)
            #expect(stalled < total)
            #expect(sent.value < total)
            // Reading resumes the flow: every message comes back.
            var received = 0
            while received < total {
                let frame = try ws.readFrame(timeout: .seconds(20))
                #expect(frame.payload.count == size)
                received += 1
            }
            #expect(senderDone.wait(timeout: .now() + .seconds(10)) == .success)
            #expect(recorder.messageCount == total)
        }
    }

    @Test func deflateIsNegotiatedAndACompressedMessageRoundTrips() throws {
        try withWebSocketServer { _, port, recorder in
            let ws = try WebSocketTestClient(
                port: port, path: "/ws", extensions: "permessage-deflate; client_max_window_bits")
            let agreed = try #require(ws.handshakeHeader("sec-websocket-extensions"))
            #expect(agreed.hasPrefix("permessage-deflate"))
            #expect(agreed.contains("server_no_context_takeover"))
            let text = String(repeating: "alarm at 07:00, alarm at 07:05; ", count: 200)
            let compressor = PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: false)
            for _ in 0..<2 {  // the second message uses the client's context
                try ws.send(opcode: .text, payload: compressor.compress(bytes(text)), rsv1: true)
                let echoed = try ws.readFrame()
                #expect(echoed.opcode == .text)
                #expect(echoed.rsv1)
                #expect(echoed.payload.count < text.utf8.count / 4)
                let inflater = PerMessageDeflateDecompressor(windowBits: 15, noContextTakeover: true)
                var plain: [UInt8] = []
                try inflater.decompress(echoed.payload, final: true, into: &plain, maxOutput: 1 << 20)
                #expect(plain == bytes(text))
            }
            #expect(recorder.events == [.text(text), .text(text)])
        }
    }
}
