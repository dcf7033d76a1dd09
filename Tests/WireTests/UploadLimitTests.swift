import Testing
import Wire

/// `HTTPLimits.uploadPaths` / `maxUploadBodyBytes`: the one per-route body limit (attachments), at the
/// limit and one byte over, from `Content-Length` at head time and from a chunk size, with its own 413.
@Suite("HTTPLimits — upload routes")
struct UploadLimitTests {
    static let limits: HTTPLimits = {
        var limits = HTTPLimits(maxBodyBytes: 10)
        limits.maxUploadBodyBytes = 20
        limits.uploadPaths = ["/v1/groups/*/alarms/*/attachments"]
        return limits
    }()
    static let upload = "/v1/groups/g1/alarms/a1/attachments"

    /// Parses `input` to its end: the events (`.bodyChunk`s not counted, joined into the body), or the
    /// error that ended it.
    static func run(_ input: String, limits: HTTPLimits = limits) -> (events: Int, body: [UInt8]?, error: HTTPParseError?) {
        var parser = HTTPRequestParser(limits: limits)
        parser.append(Array(input.utf8))
        var count = 0
        var body: [UInt8]?
        do {
            var streamed: [UInt8] = []
            while let event = try parser.next() {
                switch event {
                case .head: count += 1
                case .request(let request):
                    count += 1
                    body = request.body
                case .bodyChunk(let bytes): streamed += bytes  // an upload's body is streamed
                case .bodyEnd:
                    count += 1
                    body = streamed
                }
            }
        } catch {
            return (count, body, error)
        }
        return (count, body, nil)
    }

    static func post(_ path: String, length: Int, body: String = "") -> String {
        "POST \(path) HTTP/1.1\r\nHost: a\r\nContent-Length: \(length)\r\n\r\n\(body)"
    }

    @Test func uploadAtItsLimitIsRead() {
        let body = String(repeating: "u", count: 20)
        let outcome = Self.run(Self.post(Self.upload, length: 20, body: body))
        #expect(outcome.error == nil && outcome.body == Array(body.utf8))
        // With a query string too: the path decides.
        #expect(Self.run(Self.post(Self.upload + "?x=1", length: 20, body: body)).error == nil)
    }

    @Test func uploadOneOverIsRefusedAtHeadTimeWithItsOwn413() {
        let outcome = Self.run(Self.post(Self.upload, length: 21))
        #expect(outcome.error == HTTPRequestParser.uploadBodyTooLarge)
        #expect(outcome.error?.status == .contentTooLarge && outcome.events == 0)
    }

    @Test func chunkedUploadOverItsLimitIsRefusedAtTheChunkSize() {
        let prefix = "POST \(Self.upload) HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        #expect(Self.run(prefix + "14\r\n" + String(repeating: "c", count: 20) + "\r\n0\r\n\r\n").error == nil)
        let over = Self.run(prefix + "14\r\n" + String(repeating: "c", count: 20) + "\r\n1\r\n")
        #expect(over.error == HTTPRequestParser.uploadBodyTooLarge && over.events == 1)
    }

    @Test func otherRoutesKeepTheJSONLimit() {
        #expect(Self.run(Self.post("/v1/groups", length: 10, body: "0123456789")).error == nil)
        let json = Self.run(Self.post("/v1/groups", length: 11))
        #expect(json.error?.status == .contentTooLarge && json.error != HTTPRequestParser.uploadBodyTooLarge)
        // Same path, other method; a pattern segment never matches an empty or an extra segment.
        #expect(Self.run("PUT \(Self.upload) HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n").error != nil)
        #expect(Self.run(Self.post("/v1/groups//alarms/a1/attachments", length: 11)).error != nil)
        #expect(Self.run(Self.post("/v1/groups/g/alarms/a/attachments/x", length: 11)).error != nil)
        #expect(Self.run(Self.post("/x/v1/groups/g/alarms/a/attachments", length: 11)).error != nil)
    }

    @Test func withoutUploadPathsNothingIsAnUpload() {
        var limits = HTTPLimits(maxBodyBytes: 10)
        limits.maxUploadBodyBytes = 20
        #expect(!limits.isUpload(HTTPRequestHead(method: .post, target: Self.upload)))
        #expect(Self.run(Self.post(Self.upload, length: 11), limits: limits).error?.status == .contentTooLarge)
    }
}
