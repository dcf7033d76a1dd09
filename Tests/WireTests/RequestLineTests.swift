import Testing
import Wire

@Suite("RFC 9112 §2–3: message format and request line")
struct RequestLineTests {
    @Test func originFormGet() {
        expectAtEverySplit(
            bytes("GET /hello?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"), Event.exchange(.get("/hello?x=1")))
    }

    @Test func pathAndQueryOfTheParsedHead() throws {
        var parser = HTTPRequestParser()
        parser.append(bytes("GET /v1/groups?limit=5 HTTP/1.1\r\nHost: a\r\n\r\n"))
        guard case .head(let head)? = try parser.next() else {
            Issue.record("expected .head")
            return
        }
        #expect(head.method == .get)
        #expect(head.version == .http1_1)
        #expect(head.path == "/v1/groups")
        #expect(head.query == "limit=5")
    }

    @Test("methods are any token, case-sensitive", arguments: ["GET", "POST", "get", "M-SEARCH", "X_!#$%&'*+.^`|~9"])
    func methods(_ method: String) {
        let head = Event.Head(method: method, target: "/", version: "HTTP/1.1", headers: ["Host: a"])
        expectAtEverySplit(bytes("\(method) / HTTP/1.1\r\nHost: a\r\n\r\n"), Event.exchange(head))
    }

    @Test func absoluteFormIsKeptAsSent() {
        expectAtEverySplit(
            bytes("GET http://a.example/x?y HTTP/1.1\r\nHost: a\r\n\r\n"),
            Event.exchange(.get("http://a.example/x?y")))
    }

    @Test func asteriskFormForOptions() {
        let head = Event.Head(method: "OPTIONS", target: "*", version: "HTTP/1.1", headers: ["Host: a"])
        expectAtEverySplit(bytes("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"), Event.exchange(head))
        expectAtEverySplit(bytes("GET * HTTP/1.1\r\nHost: a\r\n\r\n"), [.error(400)])
    }

    @Test func http10WithoutHost() {
        let head = Event.Head.get("/", version: "HTTP/1.0", [], keepAlive: false)
        expectAtEverySplit(bytes("GET / HTTP/1.0\r\n\r\n"), Event.exchange(head))
    }

    @Test(
        "malformed request lines are 400",
        arguments: [
            " GET / HTTP/1.1",  // leading SP
            "GET  / HTTP/1.1",  // two SPs
            "GET / HTTP/1.1 ",  // trailing SP
            "GET\t/ HTTP/1.1",  // HTAB as separator
            "G@T / HTTP/1.1",  // '@' is not a tchar
            "GET /a b HTTP/1.1",  // SP inside the target
            "GET /\u{7F} HTTP/1.1",  // DEL
            "GET /\u{01} HTTP/1.1",  // CTL
            "GET /\0 HTTP/1.1",  // NUL
            "GET /\r HTTP/1.1",  // bare CR
            "GET /é HTTP/1.1",  // non-ASCII
            "GET HTTP/1.1",  // no target
            "GET /",  // no version
            "GET / ",  // empty version
            "GET / http/1.1",  // lowercase protocol name
            "GET / HTTP/1.10",
            "GET / HTTP/1",
            "GET / HTTP/11",
            "GET / HTTP/1.x",
            "GET example HTTP/1.1",  // neither origin- nor absolute-form
            "GET 1http://a/ HTTP/1.1",  // scheme must start with ALPHA
            "GET /* HTTP/1.1 extra",
        ])
    func malformedRequestLine(_ line: String) {
        expectAtEverySplit(bytes(line + "\r\nHost: a\r\n\r\n"), [.error(400)])
    }

    @Test("well-formed unsupported versions are 505", arguments: ["HTTP/2.0", "HTTP/0.9", "HTTP/1.2", "HTTP/3.0"])
    func unsupportedVersion(_ version: String) {
        expectAtEverySplit(bytes("GET / \(version)\r\nHost: a\r\n\r\n"), [.error(505)])
    }

    @Test func leadingEmptyLinesAreIgnoredUpToTheLimit() {
        expectAtEverySplit(bytes("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"), Event.exchange(.get()))
        expectAtEverySplit(bytes("\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"), Event.exchange(.get()))
        expectAtEverySplit(bytes("\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"), [.error(400)])
    }

    @Test(
        "bare LF is 400 wherever a line ends",
        arguments: [
            "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
            "GET / HTTP/1.1\nHost: a\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\n\n",
        ])
    func bareLF(_ input: String) {
        expectAtEverySplit(bytes(input), [.error(400)])
    }

    @Test(arguments: ["1\nx\r\n0\r\n\r\n", "0\r\nX: y\n\r\n", "0\r\n\n"])
    func bareLFInAChunkedBody(_ body: String) {
        let head = Event.Head(
            method: "POST", target: "/", version: "HTTP/1.1", headers: ["Host: a", "Transfer-Encoding: chunked"])
        expectAtEverySplit(
            bytes("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + body), [.head(head), .error(400)])
    }

    @Test func errorsCarryAShortReason() {
        var parser = HTTPRequestParser()
        parser.append(bytes("GET / HTTP/1.1\nHost: a\r\n\r\n"))
        #expect(throws: HTTPParseError(status: .badRequest, reason: "line ends with a bare LF")) {
            try parser.next()
        }
    }
}
