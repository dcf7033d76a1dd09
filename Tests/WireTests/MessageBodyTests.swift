import Testing
import Wire

@Suite("RFC 9112 §6: message body length")
struct MessageBodyTests {
    static func post(_ fields: [String], body: String = "") -> [UInt8] {
        bytes("POST /p HTTP/1.1\r\nHost: a\r\n" + fields.map { $0 + "\r\n" }.joined() + "\r\n" + body)
    }

    static func postHead(_ fields: [String]) -> Event.Head {
        Event.Head(method: "POST", target: "/p", version: "HTTP/1.1", headers: ["Host: a"] + fields)
    }

    @Test func contentLengthBody() {
        expectAtEverySplit(
            Self.post(["Content-Length: 5"], body: "hello"),
            Event.exchange(Self.postHead(["Content-Length: 5"]), body: "hello"))
    }

    @Test func bodyBytesAreOpaque() {
        let body: [UInt8] = [0x0D, 0x0A, 0x00, 0xFF, 0x0A, 0x0D, 0x0A]
        let input = Self.post(["Content-Length: 7"]) + body
        let head = Self.postHead(["Content-Length: 7"])
        expectAtEverySplit(input, [.head(head), .request(head, body: body)])
    }

    @Test func zeroContentLengthAndNoFramingMeanNoBody() {
        expectAtEverySplit(Self.post(["Content-Length: 0"]), Event.exchange(Self.postHead(["Content-Length: 0"])))
        expectAtEverySplit(Self.post([]), Event.exchange(Self.postHead([])))
    }

    @Test(
        "identical repeated Content-Length values are one length",
        arguments: [["Content-Length: 5, 5"], ["Content-Length: 5", "Content-Length: 5"], ["Content-Length: 005,5"]])
    func identicalContentLengths(_ fields: [String]) {
        expectAtEverySplit(
            Self.post(fields, body: "hello"), Event.exchange(Self.postHead(fields), body: "hello"))
    }

    @Test(
        "invalid or conflicting Content-Length is 400",
        arguments: [
            ["Content-Length: 5, 6"], ["Content-Length: 5", "Content-Length: 6"], ["Content-Length: +5"],
            ["Content-Length: -5"], ["Content-Length: 5 5"], ["Content-Length:"], ["Content-Length: 0x5"],
            ["Content-Length: 5,"], ["Content-Length: ,5"], ["Content-Length: 5.0"], ["Content-Length: ５"],
            ["Content-Length: 1e3"],
        ])
    func invalidContentLength(_ fields: [String]) {
        expectAtEverySplit(Self.post(fields, body: "hello"), [.error(400)])
    }

    @Test(
        "a Content-Length beyond any integer is 413, not an overflow",
        arguments: ["9223372036854775807", "9223372036854775808", "18446744073709551616", String(repeating: "9", count: 400)])
    func hugeContentLength(_ value: String) {
        expectAtEverySplit(Self.post(["Content-Length: \(value)"]), [.error(413)])
    }

    @Test(
        "Transfer-Encoding with Content-Length is 400 (no smuggling)",
        arguments: [
            ["Transfer-Encoding: chunked", "Content-Length: 5"], ["Content-Length: 5", "Transfer-Encoding: chunked"],
            ["Content-Length: 0", "Transfer-Encoding: chunked"],
        ])
    func transferEncodingWithContentLength(_ fields: [String]) {
        expectAtEverySplit(Self.post(fields, body: "0\r\n\r\n"), [.error(400)])
    }

    @Test func transferEncodingInHTTP10() {
        expectAtEverySplit(bytes("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), [.error(400)])
    }

    @Test(
        "transfer codings other than chunked are 501",
        arguments: ["gzip", "gzip, chunked", "chunked, gzip", "deflate;q=1, chunked", "identity"])
    func unknownTransferCoding(_ value: String) {
        expectAtEverySplit(Self.post(["Transfer-Encoding: \(value)"], body: "0\r\n\r\n"), [.error(501)])
    }

    @Test(
        "malformed Transfer-Encoding is 400",
        arguments: [
            ["Transfer-Encoding: chunked, chunked"], ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"],
            ["Transfer-Encoding:"], ["Transfer-Encoding: ,"], ["Transfer-Encoding: chunked;x=1"],
            ["Transfer-Encoding: \"chunked\""], ["Transfer-Encoding: chunked x"],
        ])
    func malformedTransferEncoding(_ fields: [String]) {
        expectAtEverySplit(Self.post(fields, body: "0\r\n\r\n"), [.error(400)])
    }

    @Test(
        "chunked is matched case-insensitively, empty list elements are skipped",
        arguments: ["chunked", "CHUNKED", "Chunked", "chunked, ", ", chunked"])
    func chunkedSpellings(_ value: String) {
        let fields = ["Transfer-Encoding: \(value)"]
        let head = Self.postHead(fields.map { $0.hasSuffix(" ") ? String($0.dropLast()) : $0 })
        expectAtEverySplit(Self.post(fields, body: "2\r\nhi\r\n0\r\n\r\n"), Event.exchange(head, body: "hi"))
    }
}

@Suite("RFC 9112 §7.1: chunked transfer coding")
struct ChunkedTests {
    static func chunked(_ body: String, extraFields: [String] = []) -> [UInt8] {
        bytes(
            "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                + extraFields.map { $0 + "\r\n" }.joined() + "\r\n" + body)
    }

    static let head = Event.Head(
        method: "POST", target: "/c", version: "HTTP/1.1", headers: ["Host: a", "Transfer-Encoding: chunked"])

    @Test func chunksAreJoined() {
        expectAtEverySplit(
            Self.chunked("4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n"), Event.exchange(Self.head, body: "Wikipedia"))
    }

    @Test func hexSizesAnyCaseWithLeadingZeros() {
        let ten = "0123456789"
        expectAtEverySplit(
            Self.chunked("a\r\n\(ten)\r\nA\r\n\(ten)\r\n0000000000000002\r\nhi\r\n000\r\n\r\n"),
            Event.exchange(Self.head, body: ten + ten + "hi"))
    }

    @Test func extensionsAreAcceptedAndIgnored() {
        let body =
            "4;name=value\r\nWiki\r\n5 ; a ; b = \"q ; \\\" x\"\r\npedia\r\n3;flag\r\n, z\r\n0;last=1\r\n\r\n"
        expectAtEverySplit(Self.chunked(body), Event.exchange(Self.head, body: "Wikipedia, z"))
    }

    @Test func trailersAreCheckedThenDiscarded() {
        expectAtEverySplit(
            Self.chunked("2\r\nhi\r\n0\r\nX-Checksum: abc\r\nY:  z \r\n\r\n"), Event.exchange(Self.head, body: "hi"))
    }

    @Test(
        "bad chunk framing is 400",
        arguments: [
            "x\r\n",  // not hex
            "\r\n",  // empty size
            "-1\r\nx\r\n0\r\n\r\n",
            "0x5\r\n",
            " 5\r\nhello\r\n0\r\n\r\n",
            "5 \r\nhello\r\n0\r\n\r\n",  // whitespace without an extension
            "00000000000000005\r\nhello\r\n0\r\n\r\n",  // 17 digits
            "4\r\nWikiX\r\n0\r\n\r\n",  // missing CRLF after data
            "4\r\nWiki\r0\r\n\r\n",
            "4\r\nWiki\n0\r\n\r\n",
            "4;\r\nWiki\r\n0\r\n\r\n",  // extension without a name
            "4;a=\r\nWiki\r\n0\r\n\r\n",
            "4;a=\"open\r\nWiki\r\n0\r\n\r\n",
            "4;a b\r\nWiki\r\n0\r\n\r\n",
            "4;a=\"\u{01}\"\r\nWiki\r\n0\r\n\r\n",
            "4;a=b=c\r\nWiki\r\n0\r\n\r\n",
            "4\r\nWiki\r\n0\r\nBad Trailer: x\r\n\r\n",
            "4\r\nWiki\r\n0\r\nX: a\r\n folded\r\n\r\n",
            "4\r\nWiki\r\n0\r\nX: nul\0\r\n\r\n",
        ])
    func badChunkFraming(_ body: String) {
        expectAtEverySplit(Self.chunked(body), [.head(Self.head), .error(400)])
    }

    @Test func sixteenHexDigitsOverTheLimitAre413NotOverflow() {
        expectAtEverySplit(Self.chunked("FFFFFFFFFFFFFFFF\r\n"), [.head(Self.head), .error(413)])
    }
}
