import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing
import Transport
import Wire

/// Answers uploads to `/up/*` (streamed bodies) with `file|<bytes>|<whether the path was in the upload
/// directory>` and remembers their paths; `/file/<name>` with that file of `directory` as a file body
/// (`Range: bytes=a-b` → that slice, 206).
final class FileResponder: HTTPResponder {
    let directory: String
    let uploads = Mutex<[String]>([])

    init(directory: String) { self.directory = directory }

    /// `X-Refuse: yes` heads are refused (403); the others are admitted from another thread.
    func admitBody(of head: HTTPRequestHead, context: RequestContext, admission: BodyAdmission) {
        if head.headers[first: "x-refuse"] == "yes" { return admission.refuse(HTTPResponse(status: .forbidden)) }
        DispatchQueue.global().async { admission.admit() }
    }

    func respond(to request: HTTPRequest, context: RequestContext, sink: ResponseSink) {
        let path = String(request.head.path)
        if path.hasPrefix("/up/") {
            guard let file = request.bodyFile else {
                sink.send(HTTPResponse(status: .ok, body: Array("memory|".utf8) + request.body))
                return
            }
            uploads.withLock { $0.append(file.path) }
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: file.path))).map(Array.init) ?? []
            let inDirectory = file.path.hasPrefix(directory + "/.tmp-")
            sink.send(HTTPResponse(status: .ok, body: Array("file|".utf8) + bytes + Array("|\(inDirectory)".utf8)))
            return
        }
        let fd = open(directory + "/" + path.dropFirst("/file/".count), O_RDONLY | O_CLOEXEC)
        guard path.hasPrefix("/file/"), fd >= 0 else {
            sink.send(HTTPResponse(status: .notFound))
            return
        }
        var info = stat()
        fstat(fd, &info)
        var offset: Int64 = 0
        var count = Int64(info.st_size)
        var status = HTTPStatus.ok
        if let range = request.head.headers[first: "range"], range.hasPrefix("bytes=") {
            let parts = range.dropFirst(6).split(separator: "-").compactMap { Int64($0) }
            offset = parts[0]
            count = parts[1] - parts[0] + 1
            status = .partialContent
        }
        sink.send(HTTPResponse(status: status, bodyFile: HTTPFileRegion(descriptor: fd, offset: offset, count: count) { close($0) }))
    }
}

/// Streamed upload bodies written to `ServerConfiguration.uploadDirectory` and responses sent from
/// files (`HTTPResponse.bodyFile`): plain with `sendfile`, TLS through the engine in chunks.
@Suite("Transport — streamed upload bodies and file responses")
struct FileBodyTests {
    static let uploadLimits: HTTPLimits = {
        var limits = HTTPLimits()
        limits.maxUploadBodyBytes = 8 << 20
        limits.uploadPaths = ["/up/*"]
        return limits
    }()

    /// A server with `FileResponder` on a fresh directory (uploads go there too), run for `body`.
    static func withServer(
        _ adjust: (inout ServerConfiguration) -> Void = { _ in },
        _ body: (Int, FileResponder, TemporaryDirectory) throws -> Void
    ) throws {
        let directory = TemporaryDirectory(prefix: "filebody")
        let responder = FileResponder(directory: directory.path)
        let server = HTTPServer(
            configuration: testConfiguration {
                $0.limits = uploadLimits
                $0.uploadDirectory = directory.path
                adjust(&$0)
            }, responder: responder)
        let port = try server.start()
        defer { #expect(shutdownAndWait(server), "the server shut down: every connection closed") }
        try body(port, responder, directory)
    }

    static func temporaryFiles(in directory: TemporaryDirectory) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasPrefix(".tmp-") }
    }

    static func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) } }

    @Test("an upload is written to a .tmp file in the upload directory as it arrives; the file is gone after the response")
    func streamedUpload() throws {
        try Self.withServer { port, responder, directory in
            let body = Self.pattern(3 << 20)
            let client = try LoopbackClient(port: port, timeout: .seconds(60))
            defer { client.close() }
            let response = try client.request("POST", "/up/1", headers: [("Host", "x")], body: body)
            #expect(response.status == 200)
            #expect(response.body == Array("file|".utf8) + body + Array("|true".utf8))
            // Released after the response: nothing left behind, and the connection goes on.
            #expect(eventually { Self.temporaryFiles(in: directory).isEmpty })
            let paths = responder.uploads.withLock { $0 }
            #expect(paths.count == 1 && access(paths[0], F_OK) != 0)
            #expect(try client.request("POST", "/other", headers: [("Host", "x")], body: "json").status == 404)
        }
    }

    @Test("admitBody: a refused head is answered before its body, Connection: close, no file; an admitted one gets 100 then")
    func admission() throws {
        try Self.withServer { port, _, directory in
            let refused = try LoopbackClient(port: port, timeout: .seconds(60))
            defer { refused.close() }
            try refused.send("POST /up/1 HTTP/1.1\r\nHost: x\r\nX-Refuse: yes\r\nContent-Length: 1000000\r\n\r\n")
            try refused.send(Self.pattern(4_096))
            let answer = try refused.readResponse()
            #expect(answer.status == 403 && LoopbackClient.value(of: "Connection", in: answer.headers) == "close")
            #expect(Self.temporaryFiles(in: directory).isEmpty)
            // Admitted from another thread: `Expect: 100-continue` is answered only then, and the body goes to its file.
            let admitted = try LoopbackClient(port: port, timeout: .seconds(60))
            defer { admitted.close() }
            try admitted.send("POST /up/2 HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
            #expect(try admitted.readResponse().status == 100)
            try admitted.send("hello")
            #expect(try admitted.readResponse().body == Array("file|hello|true".utf8))
        }
    }

    @Test("chunked upload: de-chunked into the file; over the limit mid-stream: 413 and no file")
    func chunkedUpload() throws {
        try Self.withServer({ $0.limits.maxUploadBodyBytes = 100 }) { port, _, directory in
            let client = try LoopbackClient(port: port, timeout: .seconds(60))
            defer { client.close() }
            try client.send("POST /up/1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
            #expect(try client.readResponse().body == Array("file|hello world|true".utf8))
            let over = try LoopbackClient(port: port, timeout: .seconds(60))
            defer { over.close() }
            try over.send(
                "POST /up/1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n32\r\n" + String(repeating: "a", count: 50) + "\r\n")
            try over.send("33\r\n")
            #expect(try over.readResponse().status == 413)
            #expect(eventually { Self.temporaryFiles(in: directory).isEmpty })
        }
    }

    @Test("a client that disconnects mid-body leaves no temporary file")
    func disconnectMidBody() throws {
        try Self.withServer { port, responder, directory in
            let client = try LoopbackClient(port: port, timeout: .seconds(60))
            try client.send("POST /up/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
            try client.send(Self.pattern(300_000))
            #expect(eventually { Self.temporaryFiles(in: directory).count == 1 })
            client.close()
            #expect(eventually { Self.temporaryFiles(in: directory).isEmpty })
            #expect(responder.uploads.withLock { $0 }.isEmpty)
        }
    }

    @Test("an upload directory that cannot be used: 500 before the body is read, and the connection closes")
    func unusableDirectory() throws {
        let blocker = TemporaryDirectory(prefix: "filebody-blocked")
        try Data("a file, not a directory".utf8).write(to: URL(fileURLWithPath: blocker.path + "/uploads"))
        try Self.withServer({ $0.uploadDirectory = blocker.path + "/uploads" }) { port, responder, _ in
            let client = try LoopbackClient(port: port, timeout: .seconds(60))
            defer { client.close() }
            try client.send("POST /up/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n")
            let response = try client.readResponse()
            #expect(response.status == 500)
            #expect(header("Connection", response) == "close")
            #expect(responder.uploads.withLock { $0 }.isEmpty)
        }
    }

    @Test("without an upload directory a streamed body is collected in memory")
    func withoutDirectory() throws {
        try Self.withServer({ $0.uploadDirectory = nil }) { port, _, _ in
            let response = try LoopbackClient.request(port: port, "POST", "/up/1", headers: [("Host", "x")], body: Array("abc".utf8))
            #expect(response.body == Array("memory|abc".utf8))
        }
    }

    @Test("a file response: whole, a range (206), HEAD without body; pipelined requests wait for the file")
    func fileResponses() throws {
        try Self.withServer({ $0.maxOutboundBytes = 64 * 1024 }) { port, _, directory in
            let content = Self.pattern(5 << 20)
            try Data(content).write(to: URL(fileURLWithPath: directory.path + "/five"))
            let client = try LoopbackClient(port: port, timeout: .seconds(60))
            defer { client.close() }
            let whole = try client.request("GET", "/file/five", headers: [("Host", "x")])
            #expect(whole.status == 200 && whole.body == content)
            let part = try client.request("GET", "/file/five", headers: [("Host", "x"), ("Range", "bytes=1000-1999")])
            #expect(part.status == 206 && part.body == Array(content[1000..<2000]))
            let head = try client.request("HEAD", "/file/five", headers: [("Host", "x")])
            #expect(head.status == 200 && head.body.isEmpty && header("Content-Length", head) == "\(content.count)")
            // Three requests in one write: the answers come in order, the file between the others.
            try client.send(
                "GET /file/five HTTP/1.1\r\nHost: x\r\nRange: bytes=0-9\r\n\r\nGET /file/five HTTP/1.1\r\nHost: x\r\n\r\n"
                    + "GET /file/missing HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readResponse().body == Array(content[0..<10]))
            #expect(try client.readResponse().body == content)
            #expect(try client.readResponse().status == 404)
        }
    }

    @Test("over TLS a file response is read and sealed in chunks")
    func fileResponseOverTLS() throws {
        let fixture = try TLSFixture()
        try Self.withServer({
            $0.tls = fixture.slot
            $0.maxOutboundBytes = 64 * 1024
        }) { port, _, directory in
            let content = Array(String(repeating: "0123456789abcdef", count: 200_000).utf8)
            try Data(content).write(to: URL(fileURLWithPath: directory.path + "/big"))
            let client = try TLSTestClient(port: port, context: fixture.client)
            try client.send("GET /file/big HTTP/1.1\r\nHost: x\r\n\r\n")
            let response = try client.response()
            #expect(response.hasPrefix("HTTP/1.1 200"))
            #expect(response.hasSuffix("\r\n\r\n" + String(decoding: content, as: UTF8.self)))
            try client.send("GET /file/big HTTP/1.1\r\nHost: x\r\nRange: bytes=16-31\r\nConnection: close\r\n\r\n")
            #expect(try client.response().hasSuffix("\r\n\r\n0123456789abcdef"))
        }
    }
}
