import Foundation
import TLS
import TestSupport
import Testing
import Transport

/// A blocking TLS client over `LoopbackClient`, on this package's own engine (client role):
/// handshakes, then sends and receives plaintext. For HTTPS and upgraded-connection tests where
/// the test needs to see the bytes; curl and `openssl s_client` are the independent clients.
final class TLSTestClient {
    let socket: LoopbackClient
    let engine: TLSEngine
    private var plaintext: [UInt8] = []

    init(port: Int, context: TLSContext, serverName: String = "localhost") throws {
        socket = try LoopbackClient(port: port)
        engine = TLSEngine(context: context, serverName: serverName)
        try socket.send(engine.receive([]).records)
        while engine.isHandshaking {
            let bytes = try socket.receive()
            guard !bytes.isEmpty else { throw TLSTestFailure.closedDuringHandshake }
            let step = engine.receive(bytes)
            plaintext += step.plaintext
            if !step.records.isEmpty { try socket.send(step.records) }
        }
        guard engine.state == .open else { throw TLSTestFailure.handshake("\(engine.state)") }
    }

    func send(_ text: String) throws { try socket.send(engine.send(Array(text.utf8))) }

    /// Plaintext until `count` bytes or the end of the stream.
    func receive(atLeast count: Int) throws -> [UInt8] {
        while plaintext.count < count {
            let bytes = try socket.receive()
            if bytes.isEmpty { break }
            let step = engine.receive(bytes)
            plaintext += step.plaintext
            if !step.records.isEmpty { try socket.send(step.records) }
            if case .closed = step.state { break }
        }
        defer { plaintext = [] }
        return plaintext
    }

    /// One HTTP response (head + Content-Length body) as text.
    func response() throws -> String {
        var bytes = try receive(atLeast: 1)
        while true {
            let text = String(decoding: bytes, as: UTF8.self)
            if let end = text.range(of: "\r\n\r\n") {
                let head = text[..<end.lowerBound].lowercased()
                let length =
                    head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                let total = text.utf8.distance(from: text.utf8.startIndex, to: end.upperBound) + length
                if bytes.count >= total { return String(decoding: bytes.prefix(total), as: UTF8.self) }
            }
            let more = try receive(atLeast: 1)
            if more.isEmpty { return text }
            bytes += more
        }
    }
}

enum TLSTestFailure: Error { case closedDuringHandshake, handshake(String) }

/// A test CA, the server's context slot and a client context trusting the CA.
struct TLSFixture {
    let authority: TestCertificateAuthority
    let slot: CurrentTLSContext
    let client: TLSContext

    init() throws {
        authority = try TestCertificateAuthority()
        slot = CurrentTLSContext(try Self.serverContext(authority))
        client = try TLSContext(clientTrusting: try Self.bytes(authority.certificatePath))
    }

    static func serverContext(_ authority: TestCertificateAuthority) throws -> TLSContext {
        try TLSContext(
            certificateChainPEM: try bytes(authority.serverCertificatePath), privateKeyPEM: try bytes(authority.serverKeyPath))
    }

    static func bytes(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }
}

@Suite("TLS on the HTTP server")
struct TLSServerTests {
    @Test func curlGetsAnHTTPSAnswerWithHSTS() throws {
        let fixture = try TLSFixture()
        try withHTTPServer({ $0.tls = fixture.slot }) { _, port, _ in
            let output = try ChildProcess.run(
                "curl",
                [
                    "-sS", "--http1.1", "--cacert", fixture.authority.certificatePath, "-D", "-", "-w", "\n",
                    "https://localhost:\(port)/hello",
                ])
            #expect(output.hasPrefix("HTTP/1.1 200"))
            #expect(output.contains("Strict-Transport-Security: max-age=31536000"))
            #expect(output.contains("\nGET /hello||"))
        }
    }

    @Test func keepAliveBigResponsesAndAnUpgradeRideTheTLSStream() throws {
        let fixture = try TLSFixture()
        try withHTTPServer({
            $0.tls = fixture.slot
            $0.maxOutboundBytes = 64 * 1024
        }) { _, port, _ in
            let client = try TLSTestClient(port: port, context: fixture.client)
            #expect(client.engine.applicationProtocol == "http/1.1")
            try client.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.response().contains("GET /one||"))
            // 2 MiB through a 64 KiB outbound cap: back-pressure with records in between.
            try client.send("GET /big/2048 HTTP/1.1\r\nHost: x\r\n\r\n")
            let big = try client.response()
            #expect(big.hasPrefix("HTTP/1.1 200"))
            #expect(big.utf8.count > 2048 * 1024)
            // Switching protocols: the echo handler behind the upgrade gets plaintext too.
            try client.send("GET /upgrade HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.response().hasPrefix("HTTP/1.1 101"))
            try client.send("ping")
            #expect(String(decoding: try client.receive(atLeast: 4), as: UTF8.self) == "ping")
        }
    }

    @Test func plainHTTPOnTheTLSPortIsClosedWithoutAnHTTPAnswer() throws {
        let fixture = try TLSFixture()
        let events = EventLog()
        try withHTTPServer({ $0.tls = fixture.slot }, events: events) { server, port, responder in
            let client = try LoopbackClient(port: port)
            try client.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let answer = try client.readUntilClose()
            #expect(!String(decoding: answer, as: UTF8.self).contains("HTTP/1.1"))
            #expect(responder.calls.value == 0)
            #expect(eventually { server.openConnectionCount == 0 })
            #expect(events.count { if case .tlsFailed(_, "http request") = $0 { true } else { false } } == 1)
        }
    }

    @Test func aTruncatedClientHelloIsClosedByTheHeaderDeadline() throws {
        let fixture = try TLSFixture()
        try withHTTPServer({
            $0.tls = fixture.slot
            $0.requestHeaderTimeout = .milliseconds(200)
        }) { server, port, _ in
            let hello = TLSEngine(context: fixture.client, serverName: "localhost").receive([]).records
            let client = try LoopbackClient(port: port)
            try client.send(Array(hello.prefix(hello.count / 2)))
            #expect(client.waitForClose(timeout: LoopbackClient.hangBound))
            #expect(eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func aClientVanishingWithoutCloseNotifyIsClosed() throws {
        let fixture = try TLSFixture()
        try withHTTPServer({ $0.tls = fixture.slot }) { server, port, _ in
            let client = try TLSTestClient(port: port, context: fixture.client)
            try client.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\n")
            _ = try client.response()
            client.socket.close()
            #expect(eventually { server.openConnectionCount == 0 })
        }
    }

    @Test func aReplacedContextServesNewConnectionsWhileOldOnesKeepTheirs() throws {
        let fixture = try TLSFixture()
        try withHTTPServer({ $0.tls = fixture.slot }) { _, port, _ in
            let before = try TLSTestClient(port: port, context: fixture.client)
            let oldFingerprint = before.engine.peerCertificate?.sha256Fingerprint
            // A second certificate from a second CA, swapped in like a SIGHUP reload does.
            let renewed = try TestCertificateAuthority(commonName: "Renewed CA")
            fixture.slot.replace(with: try TLSFixture.serverContext(renewed))
            let renewedClient = try TLSContext(clientTrusting: try TLSFixture.bytes(renewed.certificatePath))
            let after = try TLSTestClient(port: port, context: renewedClient)
            #expect(after.engine.peerCertificate?.sha256Fingerprint != oldFingerprint)
            // The connection made before the swap still works.
            try before.send("GET /still HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try before.response().contains("GET /still||"))
            #expect(throws: (any Error).self) { _ = try TLSTestClient(port: port, context: fixture.client) }
        }
    }

    @Test func aConnectionRefusedForCapacityGetsItsAnswerAfterTheHandshake() throws {
        let fixture = try TLSFixture()
        try withHTTPServer({
            $0.tls = fixture.slot
            $0.maxConnections = 1
        }) { server, port, _ in
            let first = try TLSTestClient(port: port, context: fixture.client)
            #expect(eventually { server.openConnectionCount == 1 })
            let second = try TLSTestClient(port: port, context: fixture.client)
            #expect(try second.response().hasPrefix("HTTP/1.1 503"))
            try first.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try first.response().contains("GET /one||"))
        }
    }
}
