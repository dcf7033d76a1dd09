import Synchronization
import Testing
import Wire

@Suite("HTTPResponseWriter (RFC 9112 §4, §6, §7.1)")
struct ResponseWriterTests {
    static let date = "Sun, 06 Nov 1994 08:49:37 GMT"

    static func written(
        _ response: HTTPResponse, keepAlive: Bool = true, version: HTTPVersion = .http1_1, head: Bool = false
    ) -> String {
        var buffer: [UInt8] = []
        HTTPResponseWriter.write(
            response, into: &buffer, date: date, keepAlive: keepAlive, requestVersion: version, isHeadRequest: head)
        return String(decoding: buffer, as: UTF8.self)
    }

    static let hello = HTTPResponse(status: .ok, headers: ["Content-Type": "text/plain"], body: Array("hello".utf8))

    @Test func okWithBody() {
        #expect(
            Self.written(Self.hello)
                == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nDate: \(Self.date)\r\nContent-Length: 5\r\n\r\nhello")
    }

    @Test("a file body counts in Content-Length and is left for the caller; its descriptor is released with it")
    func fileBodyIsCountedNotWritten() {
        let released = ReleasedDescriptors()
        do {
            let file = HTTPFileRegion(descriptor: 42, offset: 10, count: 5000) { released.add($0) }
            let response = HTTPResponse(status: .ok, bodyFile: file)
            #expect(response.bodyCount == 5000)
            #expect(Self.written(response) == "HTTP/1.1 200 OK\r\nDate: \(Self.date)\r\nContent-Length: 5000\r\n\r\n")
            withExtendedLifetime(response) { #expect(released.all.isEmpty) }
        }
        #expect(released.all == [42])
    }

    @Test func closeWhenNotKeepingAlive() {
        #expect(
            Self.written(Self.hello, keepAlive: false)
                == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nDate: \(Self.date)\r\nContent-Length: 5\r\n"
                + "Connection: close\r\n\r\nhello")
    }

    @Test func http10KeepAliveIsExplicit() {
        #expect(
            Self.written(Self.hello, version: .http1_0)
                == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nDate: \(Self.date)\r\nContent-Length: 5\r\n"
                + "Connection: keep-alive\r\n\r\nhello")
        #expect(Self.written(Self.hello, keepAlive: false, version: .http1_0).contains("\r\nConnection: close\r\n"))
    }

    @Test func headOmitsTheBodyButKeepsItsLength() {
        #expect(
            Self.written(Self.hello, head: true)
                == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nDate: \(Self.date)\r\nContent-Length: 5\r\n\r\n")
    }

    @Test(arguments: [HTTPStatus.noContent, .notModified, .continue, .switchingProtocols])
    func statusesWithoutContent(_ status: HTTPStatus) {
        let response = HTTPResponse(status: status, body: Array("ignored".utf8))
        #expect(Self.written(response) == "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nDate: \(Self.date)\r\n\r\n")
    }

    @Test func emptyBodyHasContentLengthZero() {
        #expect(
            Self.written(HTTPResponse(status: .notFound))
                == "HTTP/1.1 404 Not Found\r\nDate: \(Self.date)\r\nContent-Length: 0\r\n\r\n")
    }

    @Test func fieldsTheResponseCarriesAreNotDuplicated() {
        let response = HTTPResponse(
            status: .ok,
            headers: HTTPHeaders([
                (name: "content-length", value: "2"), (name: "DATE", value: "x"), (name: "connection", value: "upgrade"),
            ]),
            body: Array("hi".utf8))
        #expect(
            Self.written(response, keepAlive: false)
                == "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nDATE: x\r\nconnection: upgrade\r\n\r\nhi")
        let streamed = HTTPResponse(status: .ok, headers: ["Transfer-Encoding": "chunked"])
        #expect(Self.written(streamed) == "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nDate: \(Self.date)\r\n\r\n")
    }

    @Test func handlersCannotSplitTheResponse() {
        let response = HTTPResponse(
            status: HTTPStatus(code: 299, reasonPhrase: "Odd\r\nX: y"),
            headers: HTTPHeaders([
                (name: "X-Value", value: "a\r\nInjected: 1\0"), (name: "Bad Name", value: "v"), (name: "", value: "v"),
                (name: "X-Tab", value: "a\tb"),
            ]))
        #expect(
            Self.written(response)
                == "HTTP/1.1 299 Odd  X: y\r\nX-Value: a  Injected: 1 \r\nX-Tab: a\tb\r\nDate: \(Self.date)\r\n"
                + "Content-Length: 0\r\n\r\n")
    }

    @Test("more than 64 fields: a bad name anywhere is dropped, UTF-8 values and odd status codes are kept whole")
    func manyFields() {
        var fields: [(name: String, value: String)] = (0..<70).map { (name: "X-\($0)", value: "v\($0)") }
        fields[3].name = "bad name"
        fields[66].name = "also bad"
        fields[67].value = "Zoë \u{1F600}\u{7F}"
        let response = HTTPResponse(status: HTTPStatus(code: 1234, reasonPhrase: "Ünusual"), headers: HTTPHeaders(fields))
        var expected = "HTTP/1.1 1234 Ünusual\r\n"
        for (i, field) in fields.enumerated() where i != 3 && i != 66 {
            expected += "\(field.name): \(i == 67 ? "Zoë \u{1F600} " : field.value)\r\n"
        }
        expected += "Date: \(Self.date)\r\nContent-Length: 0\r\n\r\n"
        #expect(Self.written(response) == expected)
        #expect(Self.written(HTTPResponse(status: HTTPStatus(code: -5, reasonPhrase: "Neg"))).hasPrefix("HTTP/1.1 0 Neg\r\n"))
    }

    @Test("an extra field is written after the response's own, checked and cleaned like them")
    func extraField() {
        func written(_ response: HTTPResponse, _ field: HTTPHeaders.Element) -> String {
            var buffer: [UInt8] = []
            HTTPResponseWriter.write(
                response, into: &buffer, date: Self.date, keepAlive: true, requestVersion: .http1_1, isHeadRequest: false,
                extraField: field)
            return String(decoding: buffer, as: UTF8.self)
        }
        #expect(
            written(Self.hello, ("X-Request-Id", "abc-1"))
                == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Request-Id: abc-1\r\nDate: \(Self.date)\r\n"
                + "Content-Length: 5\r\n\r\nhello")
        #expect(written(Self.hello, ("Bad Name", "x")) == Self.written(Self.hello))
        #expect(written(Self.hello, ("X-Id", "a\r\nb")).contains("\r\nX-Id: a  b\r\n"))
        #expect(written(HTTPResponse(status: .ok), ("Date", "mine")) == "HTTP/1.1 200 OK\r\nDate: mine\r\nContent-Length: 0\r\n\r\n")
    }

    @Test func appendsToWhatIsAlreadyBuffered() {
        var buffer = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
        HTTPResponseWriter.write(
            HTTPResponse(status: .created), into: &buffer, date: "D", keepAlive: true, requestVersion: .http1_1,
            isHeadRequest: false)
        #expect(
            String(decoding: buffer, as: UTF8.self)
                == "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nDate: D\r\nContent-Length: 0\r\n\r\n")
    }

    @Test func continueBytes() {
        var buffer: [UInt8] = []
        HTTPResponseWriter.writeContinue(into: &buffer)
        #expect(buffer == Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
    }

    @Test func chunkedStream() {
        var buffer: [UInt8] = []
        HTTPResponseWriter.writeChunkedHead(
            status: .ok,
            headers: HTTPHeaders([
                (name: "Content-Type", value: "text/event-stream"), (name: "Content-Length", value: "9"),
                (name: "Transfer-Encoding", value: "gzip"),
            ]), into: &buffer, date: Self.date, keepAlive: false, requestVersion: .http1_1)
        HTTPResponseWriter.writeChunk(Array("Wiki".utf8), into: &buffer)
        HTTPResponseWriter.writeChunk([], into: &buffer)
        HTTPResponseWriter.writeChunk([UInt8](repeating: 0x2E, count: 26), into: &buffer)
        HTTPResponseWriter.writeLastChunk(into: &buffer)
        let dots = String(repeating: ".", count: 26)
        #expect(
            String(decoding: buffer, as: UTF8.self)
                == "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nDate: \(Self.date)\r\n"
                + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n4\r\nWiki\r\n1a\r\n\(dots)\r\n0\r\n\r\n")
    }

    @Test func writtenChunksParseBack() throws {
        var stream = Array("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        HTTPResponseWriter.writeChunk(Array("hello ".utf8), into: &stream)
        HTTPResponseWriter.writeChunk([UInt8](repeating: 0x21, count: 300), into: &stream)
        HTTPResponseWriter.writeLastChunk(into: &stream)
        var parser = HTTPRequestParser()
        parser.append(stream)
        _ = try parser.next()
        guard case .request(let request)? = try parser.next() else {
            Issue.record("expected .request")
            return
        }
        #expect(request.body == Array("hello ".utf8) + [UInt8](repeating: 0x21, count: 300))
    }
}

@Suite("RFC 9110 §5.6.7: HTTP-date")
struct HTTPDateTests {
    @Test(
        arguments: [
            (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"), (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"), (4_107_542_399, "Sun, 28 Feb 2100 23:59:59 GMT"),
            (-1, "Wed, 31 Dec 1969 23:59:59 GMT"), (1_700_000_000, "Tue, 14 Nov 2023 22:13:20 GMT"),
            (253_402_300_799, "Fri, 31 Dec 9999 23:59:59 GMT"),
        ])
    func imfFixdate(seconds: Int, expected: String) {
        #expect(HTTPDate.format(epochSeconds: seconds) == expected)
        #expect(HTTPDate.parse(expected) == seconds, "parse is format's inverse")
    }

    @Test("a recipient reads all three formats (RFC 9110 §5.6.7's example in each)")
    func parseFormats() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == 784_111_777)
        #expect(HTTPDate.parse("Thu Feb 29 00:00:00 2024") == 1_709_164_800)
        #expect(HTTPDate.parse("Thursday, 01-Jan-70 00:00:00 GMT") == 0)
        #expect(HTTPDate.parse("Wednesday, 31-Dec-69 23:59:59 GMT") == 3_155_759_999, "a year below 70 is 20xx")
        #expect(HTTPDate.parse("Tue, 30 Jun 2015 23:59:60 GMT") == HTTPDate.parse("Tue, 30 Jun 2015 23:59:59 GMT"))
    }

    @Test(
        "anything else is nil",
        arguments: [
            "", "7", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37", "Xyz, 06 Nov 1994 08:49:37 GMT",
            "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 31 Nov 1994 08:49:37 GMT", "Tue, 29 Feb 2100 00:00:00 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 1994 08:49:61 GMT", "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, +6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37:00 GMT", "Sun, 00 Nov 1994 08:49:37 GMT",
            "Sun, 06-Nov-94 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT", "Sun Nov  6 08:49:37 94",
        ])
    func parseRefuses(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }
}

/// Descriptors an `HTTPFileRegion` released.
final class ReleasedDescriptors: Sendable {
    private let descriptors = Mutex<[Int32]>([])
    func add(_ descriptor: Int32) { descriptors.withLock { $0.append(descriptor) } }
    var all: [Int32] { descriptors.withLock { $0 } }
}
