import TestSupport
import Testing
import Wire

/// Drives an `HTTP1ConnectionStateMachine` the way the transport's shell does — input, then drain
/// `next(mayParse:)` — and writes each action as a short line to compare.
private struct Driver {
    var machine: HTTP1ConnectionStateMachine
    /// What `next(mayParse:)` is told: whether the shell's output has room.
    var writable = true

    init(limits: HTTPLimits = HTTPLimits(), readAheadLimit: Int = 1 << 20) {
        machine = HTTP1ConnectionStateMachine(limits: limits, readAheadLimit: readAheadLimit)
    }

    mutating func drain() -> [String] {
        var lines: [String] = []
        while let action = machine.next(mayParse: writable) { lines.append(Self.line(action)) }
        return lines
    }

    mutating func receive(_ text: String) -> [String] {
        machine.receive(Array(text.utf8))
        return drain()
    }

    /// Answers request `number` with a response carrying `headers`; returns the framing (nil: dropped)
    /// and the actions after it is written.
    mutating func answer(
        _ number: UInt64, headers: HTTPHeaders = HTTPHeaders(), upgrade: Bool = false, sendingFile: Bool = false
    ) -> (framing: HTTP1ConnectionStateMachine.ResponseFraming?, then: [String]) {
        guard let framing = machine.responseStarted(request: number, headers: headers, upgrade: upgrade) else {
            return (nil, drain())
        }
        machine.responseWritten(sendingFile: sendingFile)
        return (framing, drain())
    }

    static func line(_ action: HTTP1ConnectionAction) -> String {
        switch action {
        case .setDeadline(let deadline): "deadline \(deadline)"
        case .sendContinue: "100-continue"
        case .admitBody(let head, let admission): "admit \(head.method) \(head.target) #\(admission)"
        case .startStreamedBody(let head): "start body \(head.target)"
        case .appendStreamedBody(let bytes): "body \(String(decoding: bytes, as: UTF8.self))"
        case .respond(let request, let number):
            "respond \(request.head.method) \(request.head.target) \(String(decoding: request.body, as: UTF8.self))#\(number)"
        case .respondStreamed(let head, let number): "respond streamed \(head.method) \(head.target) #\(number)"
        case .pauseReading: "pause reading"
        case .resumeReading: "resume reading"
        case .reportTimeout(let deadline): "timeout \(deadline)"
        case .fail(let error): "fail \(error.status.code)"
        case .close: "close"
        case .closeNow: "close now"
        case .upgrade(let rest): "upgrade \(String(decoding: rest, as: UTF8.self))"
        }
    }
}

private func get(_ path: String, _ fields: String = "") -> String { "GET \(path) HTTP/1.1\r\nHost: a\r\n\(fields)\r\n" }

private let ok = HTTP1ConnectionStateMachine.ResponseFraming(keepAlive: true, version: .http1_1, isHead: false)
private let okClose = HTTP1ConnectionStateMachine.ResponseFraming(keepAlive: false, version: .http1_1, isHead: false)

@Suite("HTTP/1.1 connection state machine (RFC 9112 §9)")
struct HTTP1ConnectionStateMachineTests {
    @Test("keep-alive: a request, its response, the idle deadline; the next request on the same connection")
    func keepAlive() {
        var driver = Driver()
        #expect(driver.receive("GET / HT") == ["deadline header"])  // the header deadline runs from the first byte
        #expect(driver.receive("TP/1.1\r\nHost: a\r\n\r\n") == ["deadline body", "respond GET / #1"])
        let answer = driver.answer(1)
        #expect(answer.framing == ok)
        #expect(answer.then == ["deadline idle"])
        #expect(driver.receive(get("/2")) == ["deadline body", "respond GET /2 #2"])
        #expect(driver.machine.servedRequests == 2)
    }

    @Test("HEAD and HTTP/1.0 frame their responses; 1.0 without keep-alive closes after it")
    func framing() {
        var driver = Driver()
        _ = driver.receive("HEAD /h HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(driver.answer(1).framing == .init(keepAlive: true, version: .http1_1, isHead: true))
        _ = driver.receive("GET /old HTTP/1.0\r\n\r\n")
        let answer = driver.answer(2)
        #expect(answer.framing == .init(keepAlive: false, version: .http1_0, isHead: false))
        #expect(answer.then == ["close"])
    }

    @Test("pipelined requests wait unparsed until the one before is answered: responses in request order")
    func pipelining() {
        var driver = Driver()
        #expect(driver.receive(get("/1") + get("/2") + get("/3")) == ["deadline body", "respond GET /1 #1"])
        #expect(driver.drain().isEmpty)  // /2 and /3 stay in the parser meanwhile
        #expect(driver.answer(2).framing == nil)  // not the request being answered
        #expect(driver.answer(1).then == ["deadline idle", "deadline body", "respond GET /2 #2"])
        #expect(driver.answer(1).framing == nil)  // a second answer to the same request
        #expect(driver.answer(2).then == ["deadline idle", "deadline body", "respond GET /3 #3"])
        #expect(driver.answer(3).then == ["deadline idle"])
    }

    @Test("pipelined requests, answered at once, give the same responses at every split of the input")
    func pipeliningAtEverySplit() {
        let input = Array((get("/1") + "POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc" + get("/3")).utf8)
        let runs = ChunkFeeder.replay(input, make: { Driver() }) { driver, chunk in
            driver.machine.receive(chunk)
            var responded: [String] = []
            var lines = driver.drain()
            while let index = lines.firstIndex(where: { $0.hasPrefix("respond") }) {
                responded.append(lines[index])
                let number = driver.machine.servedRequests
                lines = Array(lines[(index + 1)...]) + driver.answer(number).then
            }
            return responded
        }
        for run in runs {
            #expect(run.outputs == ["respond GET /1 #1", "respond POST /2 abc#2", "respond GET /3 #3"], "\(run.split)")
        }
    }

    @Test("a peer that does not read: buffered requests wait until the shell's output has room")
    func backPressure() {
        var driver = Driver()
        driver.writable = false
        #expect(driver.receive(get("/1")).isEmpty)
        driver.writable = true
        #expect(driver.drain() == ["deadline body", "respond GET /1 #1"])
    }

    @Test("read-ahead: past the limit while a request is answered reading pauses, and resumes after")
    func readAhead() {
        var driver = Driver(readAheadLimit: 10)
        #expect(driver.receive(get("/1")) == ["deadline body", "respond GET /1 #1"])
        #expect(driver.receive("GET /2 HT").isEmpty)  // 9 bytes: under the limit
        #expect(driver.receive("TP").count == 1)  // 11
        #expect(driver.machine.bufferedByteCount == 11)
        #expect(driver.receive("/1.1\r\n").isEmpty)  // paused once
        #expect(driver.answer(1).then == ["deadline idle", "deadline header", "resume reading"])
    }

    @Test("Expect: 100-continue is answered when the body has not come with the head, and never twice")
    func expectContinue() {
        var driver = Driver()
        let head = "POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n"
        #expect(driver.receive(head) == ["deadline body", "100-continue"])
        #expect(driver.receive("a") == [])
        #expect(driver.receive("bc") == ["respond POST /p abc#1"])
        _ = driver.answer(1)
        // Body already here with the head: no interim response (RFC 9110 §10.1.1 lets the server omit it).
        #expect(driver.receive(head + "xyz") == ["deadline body", "respond POST /p xyz#2"])
    }

    @Test("a streamed body: admitted from its head, then chunks, then the request; refusal closes unread")
    func streamedBody() {
        var limits = HTTPLimits()
        limits.uploadPaths = ["/up"]
        var driver = Driver(limits: limits)
        let head = "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\nExpect: 100-continue\r\n\r\n"
        #expect(driver.receive(head) == ["admit POST /up #1"])
        #expect(driver.receive("abc").isEmpty)  // nothing of the body is parsed before admission
        let other = driver.machine.bodyAdmitted(2)  // an answer to another admission
        let admitted = driver.machine.bodyAdmitted(1)
        let twice = driver.machine.bodyAdmitted(1)
        #expect(!other && admitted && !twice)
        // The client asked to be told to go on; some of the body came anyway (RFC 9110 §10.1.1 lets it).
        #expect(driver.drain() == ["deadline body", "start body /up", "body abc", "100-continue"])
        #expect(driver.receive("def") == ["body def", "respond streamed POST /up #1"])
        #expect(driver.answer(1).then == ["deadline idle"])

        // Refused: the refusal is the response, the connection closes after it, the body unread.
        #expect(driver.receive(head) == ["admit POST /up #2"])
        let stale = driver.machine.bodyRefused(1)
        let refused = driver.machine.bodyRefused(2)
        #expect(stale == nil && refused == 2)
        let refusal = driver.answer(2)
        #expect(refusal.framing == okClose)
        #expect(refusal.then == ["close"])
    }

    @Test("a streamed body whose storage fails gets the storage's status and the connection closes")
    func storageFailure() {
        var limits = HTTPLimits()
        limits.uploadPaths = ["/up"]
        var driver = Driver(limits: limits)
        _ = driver.receive("POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\n\r\nabc")
        let admitted = driver.machine.bodyAdmitted(1)
        #expect(admitted)
        #expect(driver.drain() == ["deadline body", "start body /up", "body abc"])
        driver.machine.storageFailed(HTTPParseError(status: .serviceUnavailable, reason: "disk full"))
        #expect(driver.drain() == ["fail 503"])
        #expect(driver.receive("def").isEmpty)
    }

    @Test("upgrade: after the 101 the bytes behind the request go to the next protocol")
    func upgrade() {
        var driver = Driver(readAheadLimit: 2)
        let request = get("/ws", "Connection: Upgrade\r\nUpgrade: websocket\r\n")
        #expect(driver.receive(request) == ["deadline body", "respond GET /ws #1"])
        #expect(driver.receive("xyz") == ["pause reading"])
        let answer = driver.answer(1, headers: ["Connection": "close"], upgrade: true)
        #expect(answer.framing == ok)  // an upgrade keeps the connection whatever the headers say
        #expect(answer.then == ["resume reading", "upgrade xyz"])
        #expect(driver.receive(get("/after")).isEmpty)
    }

    @Test(
        "Connection: close from the client or the application ends the connection after the response",
        arguments: [("Connection: close\r\n", ""), ("", "keep-alive, Close")])
    func connectionClose(requestField: String, responseConnection: String) {
        var driver = Driver()
        var responseHeaders = HTTPHeaders()
        if !responseConnection.isEmpty { responseHeaders.add(name: "Connection", value: responseConnection) }
        #expect(driver.receive(get("/", requestField) + get("/never")) == ["deadline body", "respond GET / #1"])
        let answer = driver.answer(1, headers: responseHeaders)
        #expect(answer.framing == okClose)
        #expect(answer.then == ["close"])
        #expect(driver.drain().isEmpty)  // the pipelined request behind it is never parsed
    }

    @Test("shutdown while idle closes at once, fresh or kept alive")
    func shutdownIdle() {
        var fresh = Driver()
        fresh.machine.shutdownRequested()
        #expect(fresh.drain() == ["close"])

        var keptAlive = Driver()
        _ = keptAlive.receive(get("/"))
        _ = keptAlive.answer(1)
        keptAlive.machine.shutdownRequested()
        #expect(keptAlive.drain() == ["close"])
    }

    @Test("shutdown mid-request: the request is received and answered with Connection: close, then it closes")
    func shutdownMidRequest() {
        var receiving = Driver()
        #expect(receiving.receive("GET / HTTP/1.1\r\n") == ["deadline header"])
        receiving.machine.shutdownRequested()
        #expect(receiving.drain().isEmpty)
        #expect(receiving.receive("Host: a\r\n\r\n") == ["deadline body", "respond GET / #1"])
        #expect(receiving.answer(1) == (okClose, ["close"]))

        var answering = Driver()
        _ = answering.receive(get("/"))
        answering.machine.shutdownRequested()
        #expect(answering.drain().isEmpty)
        #expect(answering.answer(1) == (okClose, ["close"]))
    }

    @Test("a file response: the next request waits until it is sent; shutdown meanwhile closes after it")
    func fileResponse() {
        var driver = Driver()
        _ = driver.receive(get("/file") + get("/2"))
        #expect(driver.answer(1, sendingFile: true).then.isEmpty)
        #expect(driver.drain().isEmpty)
        driver.machine.fileSent()
        #expect(driver.drain() == ["deadline idle", "deadline body", "respond GET /2 #2"])

        var closing = Driver()
        _ = closing.receive(get("/file"))
        _ = closing.answer(1, sendingFile: true)
        closing.machine.shutdownRequested()
        #expect(closing.drain().isEmpty)
        closing.machine.fileSent()
        #expect(closing.drain() == ["deadline idle", "close"])
    }

    @Test(
        "malformed or oversized input fails with its documented status and nothing is parsed after it",
        arguments: [
            ("GET / HTTP/1.1\nHost: a\r\n\r\n", 400),  // bare LF
            ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),  // two Host fields
            ("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
            ("POST / HTTP/1.1\r\nHost: a\r\nExpect: nothing\r\nContent-Length: 1\r\n\r\n", 417),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999\r\n\r\n", 413),
            ("GET /\(String(repeating: "a", count: 9000)) HTTP/1.1\r\n", 414),
            ("GET / HTTP/1.1\r\nHost: a\r\nX: \(String(repeating: "a", count: 70_000))", 431),
        ])
    func errors(input: String, status: Int) {
        var driver = Driver()
        let lines = driver.receive(input)
        #expect(lines.last == "fail \(status)")
        #expect(driver.receive(get("/")).isEmpty)
        driver.machine.deadlinePassed()
        #expect(driver.drain().isEmpty)
    }

    @Test("deadlines: a silent connection closes; a partial head or body gets 408")
    func deadlines() {
        var fresh = Driver()
        fresh.machine.deadlinePassed()
        #expect(fresh.drain() == ["timeout header", "close now"])

        var idle = Driver()
        _ = idle.receive(get("/"))
        _ = idle.answer(1)
        idle.machine.deadlinePassed()
        #expect(idle.drain() == ["timeout idle", "close now"])

        var head = Driver()
        _ = head.receive("GET / HTTP/1.1\r\n")
        head.machine.deadlinePassed()
        #expect(head.drain() == ["timeout header", "fail 408"])

        var body = Driver()
        _ = body.receive("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nab")
        body.machine.deadlinePassed()
        #expect(body.drain() == ["timeout body", "fail 408"])

        var answering = Driver()  // the application's time is not the peer's: no deadline runs
        #expect(answering.receive(get("/")).last == "respond GET / #1")
        answering.machine.deadlinePassed()
        #expect(answering.drain().isEmpty)
    }

    @Test("end of input: a partial request closes; a request in flight and complete ones behind it are answered")
    func endOfInput() {
        var partial = Driver()
        _ = partial.receive("GET / HTTP/1.1\r\n")
        partial.machine.receiveEndOfStream()
        #expect(partial.drain() == ["close"])

        var inFlight = Driver()
        _ = inFlight.receive(get("/1") + get("/2"))
        inFlight.machine.receiveEndOfStream()
        #expect(inFlight.drain().isEmpty)
        #expect(inFlight.answer(1).then == ["deadline idle", "deadline body", "respond GET /2 #2"])
        #expect(inFlight.answer(2).then == ["deadline idle", "close"])
    }

    @Test("after the connection closed nothing happens: late answers are dropped")
    func closed() {
        var driver = Driver()
        _ = driver.receive(get("/"))
        driver.machine.connectionClosed()
        #expect(driver.answer(1).framing == nil)
        #expect(driver.receive(get("/2")).isEmpty)
    }
}
