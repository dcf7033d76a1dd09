import Dispatch
import TestSupport
import Testing
import Transport
import Wire

/// Answers `METHOD path|body|connection-id` inline. `/delay/N` answers after N ms from another
/// thread; `/never` never answers; `/big/N` answers with N KiB; `/upgrade` switches to echo.
struct TestResponder: HTTPResponder {
    let calls = Counter()

    func respond(to request: HTTPRequest, context: RequestContext, sink: ResponseSink) {
        calls.add()
        let path = String(request.head.path)
        let text = "\(request.head.method) \(path)|\(String(decoding: request.body, as: UTF8.self))|\(context.connectionID)"
        let response = HTTPResponse(status: .ok, headers: ["Content-Type": "text/plain"], body: Array(text.utf8))
        if path.hasPrefix("/delay/"), let millis = Int(path.dropFirst("/delay/".count)) {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(millis)) { sink.send(response) }
        } else if path == "/never" {
            return
        } else if path.hasPrefix("/big/"), let kib = Int(path.dropFirst("/big/".count)) {
            sink.send(HTTPResponse(status: .ok, body: [UInt8](repeating: 0x2E, count: kib * 1024)))
        } else if path == "/upgrade" {
            sink.upgrade(
                HTTPResponse(status: .switchingProtocols, headers: ["Connection": "Upgrade", "Upgrade": "echo"])
            ) { EchoHandler() }
        } else if path == "/twice" {
            sink.send(response)
            sink.send(HTTPResponse(status: .internalServerError))  // programming error: ignored
        } else if path == "/close" {
            sink.send(HTTPResponse(status: .ok, headers: ["Connection": "close"], body: Array("bye".utf8)))
        } else {
            sink.send(response)
        }
    }
}

/// Starts an HTTP server with `TestResponder`, runs `body`, shuts the server down.
func withHTTPServer(
    _ adjust: (inout ServerConfiguration) -> Void = { _ in }, events: EventLog = EventLog(),
    _ body: (HTTPServer, Int, TestResponder) throws -> Void
) throws {
    let responder = TestResponder()
    let server = HTTPServer(configuration: testConfiguration(adjust), responder: responder, onEvent: events.hook)
    let port = try server.start()
    defer { #expect(shutdownAndWait(server), "the server shut down: every connection closed") }
    try body(server, port, responder)
}

func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
func header(_ name: String, _ response: LoopbackClient.Response) -> String? {
    LoopbackClient.value(of: name, in: response.headers)
}

@Suite("HTTP/1.1 server")
struct HTTPServerTests {
    @Test func answersASimpleRequest() throws {
        try withHTTPServer { _, port, _ in
            let response = try LoopbackClient.request(port: port, "GET", "/hello?x=1")
            #expect(response.status == 200)
            #expect(text(response.body).hasPrefix("GET /hello||"))
            #expect(header("content-length", response) == "\(response.body.count)")
            #expect(header("date", response)?.hasSuffix(" GMT") == true)
            #expect(header("content-type", response) == "text/plain")
        }
    }

    @Test func keepAliveReusesTheConnection() throws {
        try withHTTPServer { server, port, _ in
            let client = try LoopbackClient(port: port)
            let first = try client.request("GET", "/a")
            let second = try client.request("POST", "/b", body: "payload")
            let third = try client.request("GET", "/c")
            #expect(text(second.body).hasPrefix("POST /b|payload|"))
            let ids = [first, second, third].map { text($0.body).split(separator: "|").last.map(String.init) }
            #expect(Set(ids).count == 1)
            #expect(server.openConnectionCount == 1)
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        try withHTTPServer { _, port, _ in
            let client = try LoopbackClient(port: port)
            let paths = (1...10).map { "/p\($0)" }
            try client.send(paths.flatMap { LoopbackClient.requestBytes("GET", $0) })
            for path in paths {
                let response = try client.readResponse()
                #expect(text(response.body).hasPrefix("GET \(path)|"))
            }
        }
    }

    @Test func pipelinedRequestsStayInOrderWhenAnswersComeLateFromOtherThreads() throws {
        try withHTTPServer { _, port, _ in
            let client = try LoopbackClient(port: port)
            // The first answer takes longest; later ones would overtake it if not ordered.
            let paths = ["/delay/200", "/delay/20", "/x", "/delay/5", "/y"]
            try client.send(paths.flatMap { LoopbackClient.requestBytes("GET", $0) })
            for path in paths {
                let response = try client.readResponse()
                #expect(response.status == 200)
                #expect(text(response.body).hasPrefix("GET \(path)|"))
            }
        }
    }

    @Test func responderMayAnswerFromAnotherThread() throws {
        try withHTTPServer { _, port, _ in
            let client = try LoopbackClient(port: port)
            let response = try client.request("GET", "/delay/30")
            #expect(response.status == 200)
            #expect(try client.request("GET", "/again").status == 200)
        }
    }

    @Test func headResponseHasLengthButNoBody() throws {
        try withHTTPServer { _, port, _ in
            let client = try LoopbackClient(port: port)
            let head = try client.request("HEAD", "/thing")
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
            #expect(Int(header("content-length", head) ?? "") ?? 0 > "HEAD /thing||".utf8.count)
            // No stray body bytes: the next response parses cleanly.
            let next = try client.request("GET", "/next")
            #expect(text(next.body).hasPrefix("GET /next|"))
        }
    }

    @Test func expectContinueGets100BeforeTheBody() throws {
        try withHTTPServer { _, port, responder in
            let client = try LoopbackClient(port: port)
            try client.send(
                "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
            let interim = try client.readResponse()
            #expect(interim.status == 100)
            #expect(responder.calls.value == 0)
            try client.send("hello")
            let final = try client.readResponse()
            #expect(final.status == 200)
            #expect(text(final.body).hasPrefix("POST /upload|hello|"))
        }
    }

    @Test func malformedRequestGets400AndClose() throws {
        let events = EventLog()
        try withHTTPServer(events: events) { _, port, responder in
            let client = try LoopbackClient(port: port)
            try client.send("NOT A REQUEST\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 400)
            #expect(header("connection", response) == "close")
            #expect(client.waitForClose())
            #expect(responder.calls.value == 0)
            #expect(events.count { if case .badRequest(_, 400, _) = $0 { true } else { false } } == 1)
        }
    }

    @Test func oversizedHeaderGets431AndClose() throws {
        try withHTTPServer { _, port, _ in
            let client = try LoopbackClient(port: port)
            let big = String(repeating: "a", count: 20 * 1024)
            try client.send("GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(big)\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 431)
            #expect(client.waitForClose())
        }
    }

    @Test func applicationConnectionCloseClosesAfterTheResponse() throws {
        try withHTTPServer { _, port, _ in
            let client = try LoopbackClient(port: port)
            let response = try client.request("GET", "/close")
            #expect(text(response.body) == "bye")
            #expect(client.waitForClose())
        }
    }

    @Test func aSecondResponseToTheSameRequestIsIgnored() throws {
        try withHTTPServer { _, port, _ in
            let client = try LoopbackClient(port: port)
            #expect(try client.request("GET", "/twice").status == 200)
            let next = try client.request("GET", "/after")
            #expect(next.status == 200)
            #expect(text(next.body).hasPrefix("GET /after|"))
        }
    }

    @Test func closureSinkDeliversToItsClosure() {
        let got = Counter()
        ResponseSink { response in got.store(response.status.code) }.send(HTTPResponse(status: .noContent))
        #expect(got.value == 204)
    }

    @Test func http10WithoutKeepAliveCloses() throws {
        try withHTTPServer { _, port, _ in
            let client = try LoopbackClient(port: port)
            try client.send("GET /old HTTP/1.0\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 200)
            #expect(client.waitForClose())
        }
    }

    @Test func halfClosedPeerStillGetsEveryPipelinedAnswer() throws {
        try withHTTPServer { _, port, _ in
            let client = try LoopbackClient(port: port)
            try client.send(LoopbackClient.requestBytes("GET", "/delay/50") + LoopbackClient.requestBytes("GET", "/b"))
            client.shutdownWrite()
            #expect(text(try client.readResponse().body).hasPrefix("GET /delay/50|"))
            #expect(text(try client.readResponse().body).hasPrefix("GET /b|"))
            #expect(client.waitForClose())
        }
    }

    @Test func connectionsPastTheLimitGet503() throws {
        try withHTTPServer({
            $0.maxConnections = 3
            $0.maxConnectionsPerAddress = 3  // one client address: let the global limit trip first
        }) { server, port, _ in
            let clients = try (0..<3).map { _ in try LoopbackClient(port: port) }
            for client in clients { #expect(try client.request("GET", "/").status == 200) }
            let fourth = try LoopbackClient(port: port)
            let refused = try fourth.readResponse()
            #expect(refused.status == 503)
            #expect(header("connection", refused) == "close")
            #expect(fourth.waitForClose())
            #expect(server.openConnectionCount == 3)
            for client in clients { #expect(try client.request("GET", "/still").status == 200) }
        }
    }
}

@Suite("HTTP deadlines")
struct HTTPDeadlineTests {
    // The deadline tests run on a `ManualClock` (`ServerConfiguration.clock`): the test moves time
    // past a deadline instead of sleeping until it. Each first learns from an answer that the
    // server has read the clock for the deadline (a response, a `100 Continue`), then advances it.

    @Test func headerTimeoutIsADeadlineNotResetByTrickling() throws {
        let events = EventLog()
        let clock = ManualClock()
        try withHTTPServer(
            {
                $0.requestHeaderTimeout = .seconds(10)
                $0.clock = clock
            }, events: events
        ) { _, port, responder in
            let client = try LoopbackClient(port: port)
            // One request and the first byte of the next head, in one write: the response means
            // the server has started the next head's deadline (at the clock's reading now, t0).
            try client.send("GET /first HTTP/1.1\r\nHost: x\r\n\r\nG")
            #expect(try client.readResponse().status == 200)
            // A byte every simulated second for 9 s: each arrives before t0 + 10 s, none resets it.
            for byte in "ET /slow HTTP/1.1\r\nX".utf8.prefix(9) {
                try client.send([byte])
                clock.advance(by: 1_000)
            }
            clock.advance(by: 1_000)  // t0 + 10 s: the deadline, counted from the head's first byte
            let rest = try client.readUntilClose(timeout: LoopbackClient.hangBound)
            #expect(text(rest).hasPrefix("HTTP/1.1 408 "))
            #expect(responder.calls.value == 1)
            #expect(events.count { if case .timedOut(_, .header) = $0 { true } else { false } } == 1)
        }
    }

    @Test func silentNewConnectionIsClosedWithoutAResponse() throws {
        try withHTTPServer({ $0.requestHeaderTimeout = .milliseconds(200) }) { _, port, _ in
            let client = try LoopbackClient(port: port)
            #expect(try client.readUntilClose(timeout: LoopbackClient.hangBound).isEmpty)
        }
    }

    @Test func bodyTimeoutAnswers408() throws {
        let events = EventLog()
        let clock = ManualClock()
        try withHTTPServer(
            {
                $0.requestBodyTimeout = .seconds(30)
                $0.clock = clock
            }, events: events
        ) { _, port, responder in
            let client = try LoopbackClient(port: port)
            // `100 Continue` comes once the head is parsed and the body deadline runs (from t0).
            try client.send("POST /b HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 10\r\n\r\n")
            #expect(text(try client.receive(timeout: .seconds(10))).hasPrefix("HTTP/1.1 100 "))
            clock.advance(by: 29_999)
            try client.send("abc")  // part of the body, 1 ms before the deadline: does not extend it
            clock.advance(by: 1)
            let response = try client.readResponse()
            #expect(response.status == 408)
            #expect(client.waitForClose())
            #expect(responder.calls.value == 0)
            #expect(events.count { if case .timedOut(_, .body) = $0 { true } else { false } } == 1)
        }
    }

    @Test func idleKeepAliveConnectionIsClosed() throws {
        let events = EventLog()
        let clock = ManualClock()
        try withHTTPServer(
            {
                $0.idleTimeout = .seconds(60)
                $0.clock = clock
            }, events: events
        ) { server, port, _ in
            let client = try LoopbackClient(port: port)
            #expect(try client.request("GET", "/").status == 200)  // the idle deadline runs from here
            clock.advance(by: 60_000)
            #expect(try client.readUntilClose(timeout: LoopbackClient.hangBound).isEmpty)
            #expect(eventually { server.openConnectionCount == 0 })
            #expect(events.count { if case .timedOut(_, .idle) = $0 { true } else { false } } == 1)
        }
    }

    @Test func peerThatNeverReadsStopsGettingPipelinedRequestsAnswered() throws {
        try withHTTPServer({ $0.maxOutboundBytes = 256 * 1024 }) { server, port, responder in
            let client = try LoopbackClient(port: port)
            // 200 pipelined requests for 4 MiB each, never read: 800 MiB if the server kept going.
            let request = LoopbackClient.requestBytes("GET", "/big/4096")
            try client.send((0..<200).flatMap { _ in request })
            // Once its output is over the limit the server parses no further request until we read:
            // wait for that state (not for a quiet spell), then check nothing more is answered.
            #expect(eventually { server.hasUnwritableConnection })
            let answered = responder.calls.value
            server.drainLoops()
            #expect(answered > 0)
            #expect(answered < 50)
            #expect(responder.calls.value == answered)
        }
    }
}

@Suite("Graceful shutdown and upgrade")
struct HTTPLifecycleTests {
    @Test func shutdownFinishesInFlightRequestsAndClosesIdleOnes() throws {
        let responder = TestResponder()
        let server = HTTPServer(
            configuration: testConfiguration { $0.shutdownGracePeriod = .seconds(5) }, responder: responder)
        let port = try server.start()
        let idle = try LoopbackClient(port: port)
        #expect(try idle.request("GET", "/warm").status == 200)
        let busy = try LoopbackClient(port: port)
        try busy.send(LoopbackClient.requestBytes("GET", "/delay/300"))
        #expect(eventually { responder.calls.value == 2 })

        let done = DispatchSemaphore(value: 0)
        let completions = Counter()
        server.shutdown {
            completions.add()
            done.signal()
        }
        #expect(idle.waitForClose(timeout: LoopbackClient.hangBound))
        let response = try busy.readResponse()
        #expect(response.status == 200)
        #expect(header("connection", response) == "close")
        #expect(busy.waitForClose())
        #expect(done.wait(timeout: .now() + .seconds(5)) == .success)
        #expect(completions.value == 1)
        #expect(server.openConnectionCount == 0)
        #expect(throws: LoopbackClient.Failure.self) { try LoopbackClient(port: port) }
    }

    @Test func shutdownForceClosesAfterTheGracePeriod() throws {
        let events = EventLog()
        let server = HTTPServer(
            configuration: testConfiguration { $0.shutdownGracePeriod = .milliseconds(200) },
            responder: TestResponder(), onEvent: events.hook)
        let port = try server.start()
        let stuck = try LoopbackClient(port: port)
        try stuck.send(LoopbackClient.requestBytes("GET", "/never"))
        #expect(eventually { server.openConnectionCount == 1 })
        #expect(shutdownAndWait(server, timeout: .seconds(5)))
        #expect(stuck.waitForClose())
        #expect(events.count { if case .shutdownCompleted(forced: 1) = $0 { true } else { false } } == 1)
    }

    @Test func upgradeHandsTheConnectionAndBufferedBytesToTheNewHandler() throws {
        try withHTTPServer { _, port, _ in
            let client = try LoopbackClient(port: port)
            try client.send(LoopbackClient.requestBytes("GET", "/upgrade") + Array("early".utf8))
            let response = try client.readResponse()
            #expect(response.status == 101)
            #expect(header("upgrade", response) == "echo")
            var echoed: [UInt8] = []
            while echoed.count < 5 { echoed += try client.receive() }
            #expect(text(echoed) == "early")
            try client.send("later")
            echoed = []
            while echoed.count < 5 { echoed += try client.receive() }
            #expect(text(echoed) == "later")
        }
    }
}
