import TestSupport
import Testing
import Wire

/// Streamed bodies (`HTTPRequestHead.streamsBody`): an upload's body comes out as `.bodyChunk`s as it
/// arrives and ends with `.bodyEnd`, never buffered whole — at every split of the input, with
/// `Content-Length` and chunked framing, and bounded by the upload limit mid-stream.
@Suite("HTTPRequestParser — streamed upload bodies")
struct StreamedBodyTests {
    static let limits: HTTPLimits = {
        var limits = HTTPLimits(maxBodyBytes: 10)
        limits.maxUploadBodyBytes = 20
        limits.uploadPaths = ["/up/*"]
        return limits
    }()

    /// The transcript with adjacent `.chunk`s joined (where a body is cut depends on the split), and
    /// whether every chunk was non-empty and the parser never held a body byte after returning it.
    static func feed(_ chunks: [[UInt8]], limits: HTTPLimits = limits) -> (events: [Event], wellFormed: Bool) {
        var fed = FedParser(limits: limits)
        var events: [Event] = []
        var wellFormed = true
        for chunk in chunks {
            for event in fed.feed(chunk) {
                if case .chunk(let bytes) = event {
                    if bytes.isEmpty { wellFormed = false }
                    if case .chunk(let previous)? = events.last {
                        events[events.count - 1] = .chunk(previous + bytes)
                        continue
                    }
                }
                events.append(event)
            }
            // Every body byte received was handed out: at most a partial chunk-size line, CRLF or trailer remains.
            if fed.parser.state == .body, fed.parser.bufferedByteCount > 24 { wellFormed = false }
        }
        return (events, wellFormed)
    }

    static func expectAtEverySplit(
        _ input: String, _ expected: [Event], limits: HTTPLimits = limits, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for split in ChunkFeeder.splits(of: Array(input.utf8)) {
            let (events, wellFormed) = feed(split.chunks, limits: limits)
            #expect(events == expected, "\(split)", sourceLocation: sourceLocation)
            #expect(wellFormed, "\(split)", sourceLocation: sourceLocation)
        }
    }

    static func head(_ target: String, _ headers: [String]) -> Event.Head {
        Event.Head(method: "POST", target: target, version: "HTTP/1.1", headers: headers)
    }

    @Test("Content-Length: .head, the bytes as .bodyChunk, .bodyEnd — then the next request as usual")
    func contentLength() {
        let headers = ["Host: a", "Content-Length: 12"]
        Self.expectAtEverySplit(
            "POST /up/1 HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n\r\nhello, file!GET / HTTP/1.1\r\nHost: a\r\n\r\n",
            [.head(Self.head("/up/1", headers)), .chunk(bytes("hello, file!")), .end] + Event.exchange(.get()))
    }

    @Test("chunked: de-chunked as it arrives, chunk extensions and trailers dropped")
    func chunked() {
        let headers = ["Host: a", "Transfer-Encoding: chunked"]
        Self.expectAtEverySplit(
            "POST /up/1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5;x=y\r\nhello\r\n7\r\n, file!\r\n0\r\nT: v\r\n\r\n",
            [.head(Self.head("/up/1", headers)), .chunk(bytes("hello, file!")), .end])
    }

    @Test("an empty upload: .head then .bodyEnd, no chunk")
    func empty() {
        Self.expectAtEverySplit(
            "POST /up/1 HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
            [.head(Self.head("/up/1", ["Host: a", "Content-Length: 0"])), .end])
    }

    @Test("exactly at the upload limit the body streams; one byte over, 413 upload-too-large")
    func limitByContentLength() {
        let body = String(repeating: "u", count: 20)
        Self.expectAtEverySplit(
            "POST /up/1 HTTP/1.1\r\nHost: a\r\nContent-Length: 20\r\n\r\n\(body)",
            [.head(Self.head("/up/1", ["Host: a", "Content-Length: 20"])), .chunk(bytes(body)), .end])
        var parser = HTTPRequestParser(limits: Self.limits)
        parser.append(bytes("POST /up/1 HTTP/1.1\r\nHost: a\r\nContent-Length: 21\r\n\r\n"))
        #expect(throws: HTTPRequestParser.uploadBodyTooLarge) { try parser.next() }
    }

    @Test("chunked over the limit: the chunks before are streamed, the chunk size that crosses it is 413 mid-stream")
    func limitMidStream() throws {
        let prefix = "POST /up/1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        let head = Event.head(Self.head("/up/1", ["Host: a", "Transfer-Encoding: chunked"]))
        Self.expectAtEverySplit(
            prefix + "a\r\n0123456789\r\na\r\nabcdefghij\r\n0\r\n\r\n",
            [head, .chunk(bytes("0123456789abcdefghij")), .end])
        Self.expectAtEverySplit(
            prefix + "a\r\n0123456789\r\na\r\nabcdefghij\r\n1\r\nz\r\n0\r\n\r\n",
            [head, .chunk(bytes("0123456789abcdefghij")), .error(413)])
        var parser = HTTPRequestParser(limits: Self.limits)
        parser.append(bytes(prefix + "a\r\n0123456789\r\nb\r\n"))
        guard case .head? = try parser.next(), case .bodyChunk(let first)? = try parser.next() else { throw Failure.unexpected }
        #expect(first == bytes("0123456789"))
        #expect(throws: HTTPRequestParser.uploadBodyTooLarge) { try parser.next() }
    }

    @Test("other routes still buffer their body whole into .request, under the JSON limit")
    func otherRoutesBuffer() {
        Self.expectAtEverySplit(
            "POST /other HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
            Event.exchange(Self.head("/other", ["Host: a", "Content-Length: 3"]), body: "abc"))
        var parser = HTTPRequestParser(limits: Self.limits)
        parser.append(bytes("POST /up/1 HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx"))
        guard case .head(let head)? = try? parser.next() else {
            Issue.record("no head")
            return
        }
        #expect(head.streamsBody)
    }

    @Test("a large streamed body never accumulates in the parser")
    func largeBodyIsNotBuffered() throws {
        var limits = Self.limits
        limits.maxUploadBodyBytes = 1 << 24
        var parser = HTTPRequestParser(limits: limits)
        parser.append(bytes("POST /up/1 HTTP/1.1\r\nHost: a\r\nContent-Length: \(1 << 24)\r\n\r\n"))
        guard case .head? = try parser.next() else { throw Failure.noHead }
        let piece = [UInt8](repeating: 0x61, count: 64 * 1024)
        var received = 0
        var ended = false
        for _ in 0..<256 {
            parser.append(piece)
            while let event = try parser.next() {
                switch event {
                case .bodyChunk(let bytes): received += bytes.count
                case .bodyEnd: ended = true
                case .head, .request: throw Failure.unexpected
                }
            }
            #expect(parser.bufferedByteCount == 0)
        }
        #expect(received == 1 << 24 && ended)
        parser.append(bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n"))
        guard case .head? = try parser.next(), case .request? = try parser.next() else { throw Failure.unexpected }
    }

    enum Failure: Error { case noHead, unexpected }
}
