import Testing
import Wire

@Suite("RFC 6455 §4.2 Server-Side Handshake")
struct WebSocketHandshakeTests {
    static func head(
        method: HTTPMethod = .get, version: HTTPVersion = .http1_1, _ fields: [(String, String)]? = nil,
        extra: [(String, String)] = []
    ) -> HTTPRequestHead {
        let base =
            fields ?? [
                ("Host", "server.example.com"), ("Upgrade", "websocket"), ("Connection", "Upgrade"),
                ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Origin", "http://example.com"),
                ("Sec-WebSocket-Version", "13"),
            ]
        return HTTPRequestHead(
            method: method, target: "/v1/realtime", version: version, headers: HTTPHeaders((base + extra).map { (name: $0.0, value: $0.1) })
        )
    }

    func accepted(_ head: HTTPRequestHead, deflate: PerMessageDeflateConfiguration? = nil) -> WebSocketHandshake.Accepted? {
        if case .accept(let accepted) = WebSocketHandshake.evaluate(head, deflate: deflate, sha1: sha1) { return accepted }
        return nil
    }

    func rejected(_ head: HTTPRequestHead) -> WebSocketHandshake.Rejected? {
        if case .reject(let rejected) = WebSocketHandshake.evaluate(head, sha1: sha1) { return rejected }
        return nil
    }

    @Test func sha1TestVector() {
        #expect(
            sha1(Array("abc".utf8)).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
                == "a9993e364706816aba3e25717850c26c9cd0d89d")
    }

    @Test func rfcExampleAcceptKey() throws {
        #expect(WebSocketHandshake.acceptValue(key: "dGhlIHNhbXBsZSBub25jZQ==", sha1: sha1) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        let result = try #require(accepted(Self.head()))
        #expect(result.response.status == .switchingProtocols)
        #expect(
            result.response.headers.map { "\($0.name): \($0.value)" } == [
                "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
            ])
        #expect(result.origin == "http://example.com")
        #expect(result.deflate == nil)
    }

    @Test func tokensAreCaseInsensitiveAndListed() throws {
        let head = Self.head([
            ("Host", "h"), ("Upgrade", "WebSocket"), ("Connection", "keep-alive, UPGRADE"),
            ("Sec-WebSocket-Key", "AQIDBAUGBwgJCgsMDQ4PEA=="), ("Sec-WebSocket-Version", "13"),
        ])
        let result = try #require(accepted(head))
        #expect(result.origin == nil)
    }

    @Test func deflateIsNegotiatedOnlyWhenConfigured() throws {
        let head = Self.head(extra: [("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits")])
        #expect(try #require(accepted(head)).deflate == nil)
        let result = try #require(accepted(head, deflate: PerMessageDeflateConfiguration()))
        #expect(result.deflate == PerMessageDeflateParameters(serverNoContextTakeover: true))
        #expect(result.response.headers[first: "Sec-WebSocket-Extensions"] == "permessage-deflate; server_no_context_takeover")
    }

    @Test func wrongVersionIs426WithVersion13() throws {
        for version in ["8", "13, 8", ""] {
            var fields = Self.head().headers
            fields.replaceOrAdd(name: "Sec-WebSocket-Version", value: version)
            let result = try #require(rejected(Self.head(fields.map { ($0.name, $0.value) })))
            #expect(result.status == .upgradeRequired)
            #expect(result.headers[first: "Sec-WebSocket-Version"] == "13")
        }
    }

    @Test func notAnUpgradeIs426() throws {
        let result = try #require(rejected(Self.head([("Host", "h")])))
        #expect(result.status == .upgradeRequired)
        #expect(result.headers[first: "Upgrade"] == "websocket")
        #expect(result.response.body == Array("WebSocket upgrade required\n".utf8))
    }

    @Test(arguments: [
        "", "dGhlIHNhbXBsZSBub25jZQ", "dGhlIHNhbXBsZSBub25jZQ=", "dGhlIHNhbXBsZSBub25j", "AQIDBAUGBwgJCgsMDQ4PEBE=",
        "dGhlIHNhbXBsZSBub25jZR==", "dGhl*HNhbXBsZSBub25jZQ==",
    ])
    func badKeyIs400(key: String) throws {
        var fields = Self.head().headers
        fields.replaceOrAdd(name: "Sec-WebSocket-Key", value: key)
        let result = try #require(rejected(Self.head(fields.map { ($0.name, $0.value) })))
        #expect(result.status == .badRequest)
        #expect(result.reason == "invalid Sec-WebSocket-Key")
    }

    @Test func otherViolationsAre400() throws {
        #expect(try #require(rejected(Self.head(method: .post))).status == .badRequest)
        #expect(try #require(rejected(Self.head(version: .http1_0))).status == .badRequest)
        var noConnection = Self.head().headers
        noConnection.replaceOrAdd(name: "Connection", value: "keep-alive")
        #expect(try #require(rejected(Self.head(noConnection.map { ($0.name, $0.value) }))).status == .badRequest)
        let twoKeys = Self.head(extra: [("Sec-WebSocket-Key", "AQIDBAUGBwgJCgsMDQ4PEA==")])
        #expect(try #require(rejected(twoKeys)).reason == "invalid Sec-WebSocket-Key")
    }
}

@Suite("RFC 6455 §4 Upgrade from the HTTP parser")
struct WebSocketUpgradeTests {
    @Test func bytesAfterTheUpgradeRequestReachTheProtocol() throws {
        let request = Array(
            ("GET /v1/realtime HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                + "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n").utf8)
        var parser = HTTPRequestParser()
        parser.append(request + WS.frame(.text, WS.hex("f2 48 cd c9 c9 07 00"), rsv1: true) + WS.hex("81 85 37 fa"))
        guard case .head(let head) = try parser.next() else {
            Issue.record("no head")
            return
        }
        guard case .request = try parser.next() else {
            Issue.record("no request")
            return
        }
        guard case .accept(let accepted) = WebSocketHandshake.evaluate(head, deflate: PerMessageDeflateConfiguration(), sha1: sha1)
        else {
            Issue.record("rejected")
            return
        }
        var buffer: [UInt8] = []
        HTTPResponseWriter.write(
            accepted.response, into: &buffer, date: "Sat, 21 Nov 2026 07:00:00 GMT", keepAlive: true, requestVersion: .http1_1,
            isHeadRequest: false)
        #expect(
            String(decoding: buffer, as: UTF8.self)
                == "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                + "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover\r\n"
                + "Date: Sat, 21 Nov 2026 07:00:00 GMT\r\n\r\n")
        var proto = WebSocketProtocol(deflate: accepted.deflate)
        #expect(WS.drain(&proto, parser.takeBufferedBytes()) == [.deliver(.text("Hello"))])
        #expect(proto.bufferedByteCount == 4)
        #expect(WS.drain(&proto, WS.hex("21 3d 7f 9f 4d 51 58")) == [.deliver(.text("Hello"))])
        #expect(proto.bufferedByteCount == 0)
    }
}
