import Testing
import Wire

/// Each limit at exactly the limit (accepted) and one byte over (rejected), with the defaults fed
/// whole and byte by byte, and with small limits at every split point.
@Suite("HTTPLimits")
struct LimitsTests {
    static let defaults = HTTPLimits()

    static func pad(_ count: Int) -> String { String(repeating: "a", count: count) }

    // MARK: Request line → 414

    /// A GET whose request line (without CRLF) is `length` bytes long.
    static func requestLine(length: Int) -> String {
        let fixed = "GET / HTTP/1.1".utf8.count
        return "GET /\(pad(length - fixed)) HTTP/1.1"
    }

    @Test func requestLineAtTheLimit() {
        let line = Self.requestLine(length: Self.defaults.maxRequestLineBytes)
        #expect(line.utf8.count == 8192)
        let target = String(line.dropFirst(4).dropLast(9))
        expectWholeAndBytewise(bytes(line + "\r\nHost: a\r\n\r\n"), Event.exchange(.get(target)))
    }

    @Test func requestLineOneOver() {
        let line = Self.requestLine(length: Self.defaults.maxRequestLineBytes + 1)
        expectWholeAndBytewise(bytes(line + "\r\nHost: a\r\n\r\n"), [.error(414)])
    }

    @Test func requestLineOverTheLimitIsRejectedBeforeItsCRLF() {
        var parser = HTTPRequestParser()
        parser.append(bytes("GET /" + Self.pad(8187)))  // 8192 bytes: could still end here
        #expect(drain(&parser).isEmpty)
        parser.append(bytes("\r"))  // the CR could still be the line's end
        #expect(drain(&parser).isEmpty)
        var over = HTTPRequestParser()
        over.append(bytes("GET /" + Self.pad(8188)))  // 8193 bytes without CRLF
        #expect(drain(&over) == [.error(414)])
    }

    @Test func smallRequestLineLimitAtEverySplit() {
        let limits = HTTPLimits(maxRequestLineBytes: 20)
        let atLimit = Self.requestLine(length: 20)
        let target = String(atLimit.dropFirst(4).dropLast(9))
        expectAtEverySplit(bytes(atLimit + "\r\nHost: a\r\n\r\n"), Event.exchange(.get(target)), limits: limits)
        expectAtEverySplit(bytes(Self.requestLine(length: 21) + "\r\nHost: a\r\n\r\n"), [.error(414)], limits: limits)
        expectAtEverySplit(bytes("GET /" + Self.pad(40)), [.error(414)], limits: limits)
    }

    // MARK: Header block → 431

    /// A request whose field lines (with their CRLFs) total `length` bytes: `Host: a` plus one
    /// padding field.
    static func headerBlock(length: Int) -> (input: [UInt8], head: Event.Head) {
        let padding = "X: " + pad(length - "Host: a\r\n".utf8.count - "X: \r\n".utf8.count)
        return (bytes("GET / HTTP/1.1\r\nHost: a\r\n\(padding)\r\n\r\n"), .get("/", ["Host: a", padding]))
    }

    @Test func headerBlockAtTheLimit() {
        let (input, head) = Self.headerBlock(length: Self.defaults.maxHeaderBlockBytes)
        expectWholeAndBytewise(input, Event.exchange(head))
    }

    @Test func headerBlockOneOver() {
        expectWholeAndBytewise(Self.headerBlock(length: Self.defaults.maxHeaderBlockBytes + 1).input, [.error(431)])
    }

    @Test func headerBlockOverTheLimitIsRejectedBeforeTheLineEnds() {
        var parser = HTTPRequestParser()
        parser.append(bytes("GET / HTTP/1.1\r\nHost: a\r\nX: " + Self.pad(20_000)))
        #expect(drain(&parser) == [.error(431)])
    }

    @Test func smallHeaderBlockLimitAtEverySplit() {
        let limits = HTTPLimits(maxHeaderBlockBytes: 24)
        let (input, head) = Self.headerBlock(length: 24)
        expectAtEverySplit(input, Event.exchange(head), limits: limits)
        expectAtEverySplit(Self.headerBlock(length: 25).input, [.error(431)], limits: limits)
    }

    // MARK: Header fields → 431

    static func fields(count: Int) -> (input: [UInt8], head: Event.Head) {
        let fields = ["Host: a"] + (1..<count).map { "X-\($0): v" }
        return (bytes("GET / HTTP/1.1\r\n" + fields.map { $0 + "\r\n" }.joined() + "\r\n"), .get("/", fields))
    }

    @Test func headerFieldsAtTheLimit() {
        let (input, head) = Self.fields(count: Self.defaults.maxHeaderFields)
        expectWholeAndBytewise(input, Event.exchange(head))
    }

    @Test func headerFieldsOneOver() {
        expectWholeAndBytewise(Self.fields(count: Self.defaults.maxHeaderFields + 1).input, [.error(431)])
    }

    @Test func smallHeaderFieldLimitAtEverySplit() {
        let limits = HTTPLimits(maxHeaderFields: 3)
        let (input, head) = Self.fields(count: 3)
        expectAtEverySplit(input, Event.exchange(head), limits: limits)
        expectAtEverySplit(Self.fields(count: 4).input, [.error(431)], limits: limits)
    }

    // MARK: Body → 413

    static func post(contentLength: Int) -> (head: [UInt8], event: Event.Head) {
        let fields = ["Host: a", "Content-Length: \(contentLength)"]
        return (
            bytes("POST / HTTP/1.1\r\n" + fields.map { $0 + "\r\n" }.joined() + "\r\n"),
            Event.Head(method: "POST", target: "/", version: "HTTP/1.1", headers: fields)
        )
    }

    @Test func contentLengthAtTheLimit() {
        let max = Self.defaults.maxBodyBytes
        let (head, event) = Self.post(contentLength: max)
        let body = [UInt8](repeating: 0x62, count: max)
        #expect(parse(head + body) == [.head(event), .request(event, body: body)])
    }

    @Test func contentLengthOneOverIsRejectedAtHeadTime() {
        // No body sent: the 413 comes from the head alone.
        expectWholeAndBytewise(Self.post(contentLength: Self.defaults.maxBodyBytes + 1).head, [.error(413)])
    }

    @Test func smallBodyLimitAtEverySplit() {
        let limits = HTTPLimits(maxBodyBytes: 10)
        let (head, event) = Self.post(contentLength: 10)
        expectAtEverySplit(head + bytes("0123456789"), Event.exchange(event, body: "0123456789"), limits: limits)
        expectAtEverySplit(Self.post(contentLength: 11).head, [.error(413)], limits: limits)
    }

    // MARK: Chunked body → 413

    static let chunkedPrefix = bytes("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
    static let chunkedHead = Event.Head(
        method: "POST", target: "/", version: "HTTP/1.1", headers: ["Host: a", "Transfer-Encoding: chunked"])

    @Test func chunkedTotalAtTheLimit() {
        let max = Self.defaults.maxBodyBytes
        let data = [UInt8](repeating: 0x63, count: max - 1)
        let input = Self.chunkedPrefix + bytes("FFFFF\r\n") + data + bytes("\r\n1\r\nz\r\n0\r\n\r\n")
        #expect(String(max - 1, radix: 16) == "fffff")
        #expect(parse(input) == [.head(Self.chunkedHead), .request(Self.chunkedHead, body: data + [0x7A])])
    }

    @Test func chunkedTotalOneOverIsRejectedAtTheChunkSize() {
        let max = Self.defaults.maxBodyBytes
        let data = [UInt8](repeating: 0x63, count: max)
        // The second chunk's size line alone pushes the total over: its data never arrives.
        let input = Self.chunkedPrefix + bytes("100000\r\n") + data + bytes("\r\n1\r\n")
        #expect(parse(input) == [.head(Self.chunkedHead), .error(413)])
        expectWholeAndBytewise(Self.chunkedPrefix + bytes("100001\r\n"), [.head(Self.chunkedHead), .error(413)])
    }

    @Test func smallChunkedLimitAtEverySplit() {
        let limits = HTTPLimits(maxBodyBytes: 10)
        expectAtEverySplit(
            Self.chunkedPrefix + bytes("6\r\n012345\r\n4\r\n6789\r\n0\r\n\r\n"),
            Event.exchange(Self.chunkedHead, body: "0123456789"), limits: limits)
        expectAtEverySplit(
            Self.chunkedPrefix + bytes("6\r\n012345\r\n5\r\n"), [.head(Self.chunkedHead), .error(413)], limits: limits)
    }

    // MARK: Chunk extensions → 400

    @Test func chunkExtensionsAtTheLimit() {
        // Two chunks whose extensions total 4096 bytes: ";" + 2047 name bytes, twice.
        let ext = ";" + Self.pad(2047)
        let input = Self.chunkedPrefix + bytes("1\(ext)\r\na\r\n0\(ext)\r\n\r\n")
        expectWholeAndBytewise(input, Event.exchange(Self.chunkedHead, body: "a"))
    }

    @Test func chunkExtensionsOneOver() {
        let input = Self.chunkedPrefix + bytes("1;\(Self.pad(2047))\r\na\r\n0;\(Self.pad(2048))\r\n\r\n")
        expectWholeAndBytewise(input, [.head(Self.chunkedHead), .error(400)])
        var parser = HTTPRequestParser()
        parser.append(Self.chunkedPrefix + bytes("1;" + Self.pad(10_000)))
        #expect(drain(&parser) == [.head(Self.chunkedHead), .error(400)])
    }

    @Test func smallChunkExtensionLimitAtEverySplit() {
        let limits = HTTPLimits(maxChunkExtensionBytes: 6)
        expectAtEverySplit(
            Self.chunkedPrefix + bytes("1;ab\r\nx\r\n0;cd\r\n\r\n"), Event.exchange(Self.chunkedHead, body: "x"),
            limits: limits)
        expectAtEverySplit(
            Self.chunkedPrefix + bytes("1;ab\r\nx\r\n0;cde\r\n\r\n"), [.head(Self.chunkedHead), .error(400)],
            limits: limits)
    }

    // MARK: Trailers → 431

    @Test func trailerSectionAtTheLimitAndOneOver() {
        let max = Self.defaults.maxHeaderBlockBytes
        let atLimit = "T: " + Self.pad(max - 5)
        expectWholeAndBytewise(
            Self.chunkedPrefix + bytes("0\r\n\(atLimit)\r\n\r\n"), Event.exchange(Self.chunkedHead))
        expectWholeAndBytewise(
            Self.chunkedPrefix + bytes("0\r\n\(atLimit)a\r\n\r\n"), [.head(Self.chunkedHead), .error(431)])
    }

    @Test func trailerFieldsAtTheLimitAndOneOver() {
        let limits = HTTPLimits(maxHeaderFields: 3)
        expectAtEverySplit(
            Self.chunkedPrefix + bytes("0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"), Event.exchange(Self.chunkedHead),
            limits: limits)
        expectAtEverySplit(
            Self.chunkedPrefix + bytes("0\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n"),
            [.head(Self.chunkedHead), .error(431)], limits: limits)
    }
}
