import Foundation
import TLS
import TestSupport
import Testing

/// A server context from a throwaway CA, and a client context trusting that CA.
private struct Pair {
    let authority: TestCertificateAuthority
    let server: TLSContext
    let client: TLSContext

    static let shared: Result<Pair, any Error> = Result {
        let authority = try TestCertificateAuthority()
        let server = try TLSContext(
            certificateChainPEM: Array(try Data(contentsOf: URL(fileURLWithPath: authority.serverCertificatePath))),
            privateKeyPEM: Array(try Data(contentsOf: URL(fileURLWithPath: authority.serverKeyPath))))
        let client = try TLSContext(
            clientTrusting: Array(try Data(contentsOf: URL(fileURLWithPath: authority.certificatePath))))
        return Pair(authority: authority, server: server, client: client)
    }
}

private func pem(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

/// Runs the handshake between two engines through byte arrays until both are open.
private func handshake(_ client: TLSEngine, _ server: TLSEngine) {
    var toServer = client.receive([]).records  // the ClientHello
    for _ in 0..<8 {
        let fromServer = server.receive(toServer)
        let atClient = client.receive(fromServer.records)
        toServer = atClient.records
        if client.state == .open, server.state == .open, toServer.isEmpty { return }
    }
}

@Suite("TLS engine (RFC 8446 over memory BIOs)")
struct TLSEngineTests {
    @Test func handshakeNegotiatesTLS13AndALPNThenCarriesDataBothWays() throws {
        let pair = try Pair.shared.get()
        let client = TLSEngine(context: pair.client, serverName: "localhost")
        let server = TLSEngine(context: pair.server)
        handshake(client, server)
        #expect(client.state == .open)
        #expect(server.state == .open)
        #expect(server.protocolVersion == "TLSv1.3")
        #expect(server.applicationProtocol == "http/1.1")
        #expect(client.peerCertificate?.subject == "/CN=localhost")

        let request = Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
        #expect(server.receive(client.send(request)).plaintext == request)
        let response = Array(repeating: UInt8(ascii: "x"), count: 100_000)  // several 16 KiB records
        #expect(client.receive(server.send(response)).plaintext == response)
    }

    @Test func recordsSplitAtEveryOffsetDecryptToTheSamePlaintext() throws {
        let pair = try Pair.shared.get()
        let client = TLSEngine(context: pair.client, serverName: "127.0.0.1")
        let server = TLSEngine(context: pair.server)
        handshake(client, server)
        // Two records back to back (two sends), split at every offset of their bytes: inside the
        // first header, the first body, the boundary, the second header, the second tag.
        let first = Array("GET /a HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        let second = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let length = client.send(first).count + client.send(second).count  // sizes only; never delivered
        let server2 = TLSEngine(context: pair.server)
        let client2 = TLSEngine(context: pair.client, serverName: "127.0.0.1")
        handshake(client2, server2)
        for offset in 0...length {
            let records = client2.send(first) + client2.send(second)
            #expect(records.count == length)
            let head = server2.receive(Array(records[..<offset]))
            let tail = server2.receive(Array(records[offset...]))
            #expect(head.plaintext + tail.plaintext == first + second, "split at \(offset)")
            #expect(tail.state == .open)
            if head.plaintext + tail.plaintext != first + second { break }
        }
        #expect(server.state == .open)
    }

    @Test func theClientHelloSplitAtEveryOffsetGetsTheServerFlightOnlyWhenComplete() throws {
        let pair = try Pair.shared.get()
        let hello = TLSEngine(context: pair.client, serverName: "localhost").receive([]).records
        #expect(hello.count > 100)
        for offset in 0..<hello.count {
            let server = TLSEngine(context: pair.server)
            let first = server.receive(Array(hello[..<offset]))
            // A truncated ClientHello: still handshaking, nothing to send; the caller's header
            // deadline is what ends such a connection.
            #expect(first.state == .handshaking, "split at \(offset)")
            #expect(first.records.isEmpty, "split at \(offset)")
            let second = server.receive(Array(hello[offset...]))
            #expect(second.state == .handshaking)
            #expect(!second.records.isEmpty, "split at \(offset): the ServerHello flight")
            if second.records.isEmpty { break }
        }
    }

    @Test func plainHTTPOnTheTLSPortFailsCleanly() throws {
        let pair = try Pair.shared.get()
        let server = TLSEngine(context: pair.server)
        let result = server.receive(Array("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        #expect(result.plaintext.isEmpty)
        #expect(result.state == .closed(.failed("http request")))
        // Closed for good: later input is ignored, reads keep reporting the end.
        #expect(server.receive([0x16, 3, 1]).state == .closed(.failed("http request")))
    }

    @Test func garbageRecordsFailCleanly() throws {
        let pair = try Pair.shared.get()
        var generator = SplitMix64(seed: 22)
        for _ in 0..<200 {
            let server = TLSEngine(context: pair.server)
            let length = Int(generator.next() % 600) + 5
            var garbage = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            garbage[0] = 0x16  // a handshake record header, so the record layer reads further
            garbage[1] = 3
            let result = server.receive(garbage)
            #expect(result.plaintext.isEmpty)
            if case .closed(.failed) = result.state {
            } else if result.state != .handshaking {
                Issue.record("unexpected state \(result.state)")
            }
        }
        // Garbage after a finished handshake, in place of an application-data record.
        let client = TLSEngine(context: pair.client, serverName: "localhost")
        let server = TLSEngine(context: pair.server)
        handshake(client, server)
        var record = client.send(Array("hello".utf8))
        record[record.count - 1] ^= 0xFF  // breaks the AEAD tag
        let result = server.receive(record)
        #expect(result.plaintext.isEmpty)
        #expect(
            result.state == .closed(.failed("bad record mac")) || result.state == .closed(.failed("decryption failed or bad record mac")))
        #expect(!result.records.isEmpty, "an alert for the peer")
    }

    @Test func closeNotifyEndsTheStreamCleanlyBothWays() throws {
        let pair = try Pair.shared.get()
        let client = TLSEngine(context: pair.client, serverName: "localhost")
        let server = TLSEngine(context: pair.server)
        handshake(client, server)
        client.close()
        var goodbye: [UInt8] = []
        client.takeOutput(into: &goodbye)
        #expect(client.state == .closed(.closedLocally))
        let atServer = server.receive(goodbye)
        #expect(atServer.state == .closed(.closeNotify))
        server.close()
        var reply: [UInt8] = []
        server.takeOutput(into: &reply)
        #expect(!reply.isEmpty, "the server's close_notify")
        #expect(server.send(Array("late".utf8)).isEmpty, "nothing is sealed after close")
    }

    @Test func aHandshakeThatNeverStartedClosesWithoutAnAlert() throws {
        let pair = try Pair.shared.get()
        let server = TLSEngine(context: pair.server)
        server.close()
        var records: [UInt8] = []
        server.takeOutput(into: &records)
        #expect(records.isEmpty)
        #expect(server.state == .closed(.closedLocally))
    }

    @Test func badMaterialIsRefusedWithTheReason() throws {
        let pair = try Pair.shared.get()
        let certificate = try pem(pair.authority.serverCertificatePath)
        let key = try pem(pair.authority.serverKeyPath)
        let otherKey = try pem(pair.authority.directory.file(named: "ca.key"))
        #expect(throws: TLSError.self) { try TLSContext(certificateChainPEM: Array("nonsense".utf8), privateKeyPEM: key) }
        #expect(throws: TLSError.self) { try TLSContext(certificateChainPEM: certificate, privateKeyPEM: Array("nonsense".utf8)) }
        do {
            _ = try TLSContext(certificateChainPEM: certificate, privateKeyPEM: otherKey)
            Issue.record("a key of another certificate was accepted")
        } catch {
            if case .keyMismatch = error {} else { Issue.record("wrong error \(error)") }
        }
        let context = try TLSContext(certificateChainPEM: certificate, privateKeyPEM: key)
        #expect(context.certificate?.subject == "/CN=localhost")
        let now = Int(Date().timeIntervalSince1970)
        let left = context.certificate.map { $0.secondsUntilExpiry(nowEpochSeconds: now) } ?? 0
        #expect(left > 86_400 && left <= 2 * 86_400 + 60, "the test CA's two-day certificate")
        #expect(context.certificate?.sha256Fingerprint.count == 64)
    }
}
