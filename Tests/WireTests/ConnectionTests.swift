import TestSupport
import Testing
import Wire

@Suite("RFC 9112 §9: connection management")
struct ConnectionTests {
    @Test(
        "keep-alive: 1.1 unless close, 1.0 only with keep-alive",
        arguments: [
            ("HTTP/1.1", [String](), true), ("HTTP/1.1", ["Connection: close"], false),
            ("HTTP/1.1", ["Connection: Keep-Alive, CLOSE"], false), ("HTTP/1.1", ["Connection: upgrade"], true),
            ("HTTP/1.0", [], false), ("HTTP/1.0", ["Connection: keep-alive"], true),
            ("HTTP/1.0", ["Connection: Keep-Alive"], true), ("HTTP/1.0", ["Connection: keep-alive", "Connection: close"], false),
        ])
    func keepAlive(version: String, fields: [String], expected: Bool) {
        let all = ["Host: a"] + fields
        let input = bytes("GET / \(version)\r\n" + all.map { $0 + "\r\n" }.joined() + "\r\n")
        expectAtEverySplit(input, Event.exchange(.get("/", version: version, all, keepAlive: expected)))
    }

    @Test func pipelinedRequestsComeOutInOrder() {
        let input = bytes(
            "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
                + "POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
                + "POST /3 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2;x\r\nde\r\n0\r\nT: 1\r\n\r\n"
                + "\r\nGET /4 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let post2 = Event.Head(method: "POST", target: "/2", version: "HTTP/1.1", headers: ["Host: a", "Content-Length: 3"])
        let post3 = Event.Head(
            method: "POST", target: "/3", version: "HTTP/1.1", headers: ["Host: a", "Transfer-Encoding: chunked"])
        let expected =
            Event.exchange(.get("/1")) + Event.exchange(post2, body: "abc") + Event.exchange(post3, body: "de")
            + Event.exchange(.get("/4", version: "HTTP/1.0", ["Connection: keep-alive"]))
        expectAtEverySplit(input, expected)
    }

    @Test func manyPipelinedRequestsAcrossRandomReads() {
        // Exercises buffer compaction: requests straddle reads of varying sizes.
        var input: [UInt8] = []
        var expected: [Event] = []
        for i in 0..<500 {
            let body = String(repeating: "b", count: i % 37)
            input += bytes("PUT /\(i) HTTP/1.1\r\nHost: a\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            let head = Event.Head(
                method: "PUT", target: "/\(i)", version: "HTTP/1.1", headers: ["Host: a", "Content-Length: \(body.utf8.count)"])
            expected += Event.exchange(head, body: body)
        }
        var generator = SplitMix64(seed: 42)
        var parser = HTTPRequestParser()
        var events: [Event] = []
        var offset = 0
        while offset < input.count {
            let length = min(Int(generator.next() % 300) + 1, input.count - offset)
            parser.append(Array(input[offset..<(offset + length)]))
            events += drain(&parser)
            offset += length
        }
        #expect(events == expected)
        #expect(parser.state == .idle)
        #expect(parser.bufferedByteCount == 0)
    }

    @Test func takeBufferedBytesHandsOverWhatFollowsTheRequest() throws {
        var parser = HTTPRequestParser()
        let frame: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        parser.append(
            bytes("GET /v1/realtime HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n") + frame)
        guard case .head? = try parser.next(), case .request(let request)? = try parser.next() else {
            Issue.record("expected .head then .request")
            return
        }
        #expect(request.head.target == "/v1/realtime")
        #expect(parser.bufferedByteCount == frame.count)
        #expect(parser.takeBufferedBytes() == frame)
        #expect(parser.bufferedByteCount == 0)
        #expect(parser.state == .idle)
        #expect(try parser.next() == nil)
    }

    @Test func statesFollowTheRequest() throws {
        var parser = HTTPRequestParser()
        #expect(parser.state == .idle)
        parser.append(bytes("POST / HTTP/1.1\r\nHost: a\r\n"))
        #expect(parser.state == .head)
        #expect(try parser.next() == nil)
        #expect(parser.state == .head)
        parser.append(bytes("Content-Length: 2\r\n\r\nx"))
        guard case .head? = try parser.next() else {
            Issue.record("expected .head")
            return
        }
        #expect(parser.state == .body)
        #expect(try parser.next() == nil)
        #expect(parser.state == .body)
        parser.append(bytes("yG"))
        guard case .request? = try parser.next() else {
            Issue.record("expected .request")
            return
        }
        #expect(parser.state == .head)  // "G" of the next request is buffered
        #expect(parser.takeBufferedBytes() == bytes("G"))
        #expect(parser.state == .idle)
    }

    @Test func aFailedParserStaysDead() {
        var parser = HTTPRequestParser()
        parser.append(bytes("GET / HTTP/2.0\r\nHost: a\r\n\r\n"))
        let expected = HTTPParseError(status: .httpVersionNotSupported, reason: "HTTP version not supported")
        #expect(throws: expected) { try parser.next() }
        parser.append(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"))
        #expect(throws: expected) { try parser.next() }
        #expect(parser.bufferedByteCount == 0)
    }
}

@Suite("RFC 9110 §10.1.1: Expect")
struct ExpectTests {
    static func post(_ version: String, _ fields: [String], body: String) -> [UInt8] {
        bytes("POST / \(version)\r\nHost: a\r\n" + fields.map { $0 + "\r\n" }.joined() + "\r\n" + body)
    }

    @Test(arguments: ["100-continue", "100-Continue"])
    func continueWithABody(_ value: String) {
        let fields = ["Host: a", "Expect: \(value)", "Content-Length: 2"]
        var head = Event.Head(method: "POST", target: "/", version: "HTTP/1.1", headers: fields)
        head.expectsContinue = true
        expectAtEverySplit(Self.post("HTTP/1.1", Array(fields.dropFirst()), body: "hi"), Event.exchange(head, body: "hi"))
    }

    @Test func continueWithoutABodyIsNotAnswered() {
        let fields = ["Host: a", "Expect: 100-continue", "Content-Length: 0"]
        let head = Event.Head(method: "POST", target: "/", version: "HTTP/1.1", headers: fields)
        expectAtEverySplit(Self.post("HTTP/1.1", Array(fields.dropFirst()), body: ""), Event.exchange(head))
    }

    @Test func http10ExpectationsAreIgnored() {
        let fields = ["Host: a", "Expect: 100-continue, x-other", "Content-Length: 2"]
        let head = Event.Head(method: "POST", target: "/", version: "HTTP/1.0", headers: fields, keepAlive: false)
        expectAtEverySplit(Self.post("HTTP/1.0", Array(fields.dropFirst()), body: "hi"), Event.exchange(head, body: "hi"))
    }

    @Test(arguments: ["x-other", "100-continue, x-other", "200-ok"])
    func otherExpectationsAre417(_ value: String) {
        expectAtEverySplit(Self.post("HTTP/1.1", ["Expect: \(value)", "Content-Length: 2"], body: "hi"), [.error(417)])
    }
}
