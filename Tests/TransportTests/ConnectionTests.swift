import Dispatch
import TestSupport
import Testing
import Transport

/// Echoes every byte back; closes when the peer sends `q`.
final class EchoHandler: ConnectionHandler {
    func received(_ bytes: UnsafeRawBufferPointer, on connection: Connection) {
        connection.write(bytes)
        connection.flush()
        if bytes.contains(UInt8(ascii: "q")) { connection.close() }
    }
}

/// Answers every byte received with `size` bytes of output, and counts input.
final class FloodHandler: ConnectionHandler {
    let size: Int
    let received: Counter
    let maxPending: Counter
    init(size: Int, received: Counter, maxPending: Counter) {
        self.size = size
        self.received = received
        self.maxPending = maxPending
    }
    func received(_ bytes: UnsafeRawBufferPointer, on connection: Connection) {
        received.add(bytes.count)
        for _ in 0..<bytes.count where connection.isWritable {
            connection.write([UInt8](repeating: UInt8(ascii: "x"), count: size))
            connection.flush()
        }
        maxPending.raise(to: connection.pendingOutboundBytes)
    }
}

@Suite("Connections (raw bytes)")
struct ConnectionTests {
    @Test func echoesBytesAndClosesOnRequest() throws {
        let server = HTTPServer(configuration: testConfiguration()) { EchoHandler() }
        let port = try server.start()
        let client = try LoopbackClient(port: port)
        try client.send("hello")
        var got: [UInt8] = []
        while got.count < 5 { got += try client.receive() }
        #expect(String(decoding: got, as: UTF8.self) == "hello")
        #expect(server.openConnectionCount == 1)
        try client.send("q")
        #expect(try client.readUntilClose() == Array("q".utf8))
        #expect(eventually { server.openConnectionCount == 0 })
        #expect(shutdownAndWait(server))
    }

    @Test func lingeringConnectionSeesAnEndOfStreamThatArrivesWithData() throws {
        // The server closes first (echo's `q`: flush, shut down sending, linger). The loop is then held
        // while the client sends more bytes and its FIN, so one readable event finds both queued: a
        // short read returns the bytes, only the next read the end of stream, and with both directions
        // shut down the source does not fire again. The linger timeout is on a clock that never moves:
        // only reading the end of stream closes the connection.
        let clock = ManualClock()
        let server = HTTPServer(
            configuration: testConfiguration {
                $0.loopCount = 1
                $0.clock = clock
            }
        ) { EchoHandler() }
        let port = try server.start()
        let client = try LoopbackClient(port: port)
        try client.send("q")
        #expect(try client.readUntilClose() == Array("q".utf8))  // the server's side is shut down
        let gate = DispatchSemaphore(value: 0)
        let held = DispatchSemaphore(value: 0)
        server.group.loops[0].execute {
            held.signal()
            gate.wait()
        }
        held.wait()
        try client.send("more")
        client.shutdownWrite()
        gate.signal()
        #expect(eventually { server.openConnectionCount == 0 }, "the lingering connection closed at the end of stream")
        #expect(shutdownAndWait(server))
    }

    @Test func bindingATakenPortFailsWithSocketError() throws {
        let first = HTTPServer(configuration: testConfiguration()) { EchoHandler() }
        let port = try first.start()
        let second = HTTPServer(configuration: testConfiguration { $0.port = port }) { EchoHandler() }
        #expect(throws: SocketError.self) { try second.start() }
        #expect(shutdownAndWait(first))
    }

    @Test func listensOnIPv6Loopback() throws {
        let server = HTTPServer(configuration: testConfiguration { $0.host = "::1" }) { EchoHandler() }
        #expect(try server.start() > 0)
        #expect(shutdownAndWait(server))
    }

    @Test func connectionsPastTheLimitGet503AndClose() throws {
        let events = EventLog()
        // All clients share 127.0.0.1: lift the per-address share to the whole server so the
        // global limit is what trips (ConnectionLimitTests covers the per-address one).
        let configuration = testConfiguration {
            $0.maxConnections = 3
            $0.maxConnectionsPerAddress = 3
        }
        let server = HTTPServer(configuration: configuration, onEvent: events.hook) {
            EchoHandler()
        }
        let port = try server.start()
        let clients = try (0..<3).map { _ in try LoopbackClient(port: port) }
        for client in clients {  // each is served: echo answers
            try client.send("a")
            #expect(try client.receive() == Array("a".utf8))
        }
        let fourth = try LoopbackClient(port: port)
        let response = try fourth.readResponse()
        #expect(response.status == 503)
        #expect(LoopbackClient.value(of: "connection", in: response.headers) == "close")
        #expect(fourth.waitForClose())
        #expect(server.openConnectionCount == 3)
        #expect(events.count { if case .connectionLimitReached = $0 { true } else { false } } == 1)
        clients.forEach { $0.close() }
        #expect(eventually { server.openConnectionCount == 0 })
        let fifth = try LoopbackClient(port: port)  // room again
        try fifth.send("b")
        #expect(try fifth.receive() == Array("b".utf8))
        #expect(shutdownAndWait(server))
    }

    @Test func peerThatNeverReadsStopsBeingReadFrom() throws {
        let received = Counter()
        let maxPending = Counter()
        let limit = 256 * 1024
        let server = HTTPServer(configuration: testConfiguration { $0.maxOutboundBytes = limit }) {
            FloodHandler(size: 1024 * 1024, received: received, maxPending: maxPending)
        }
        let port = try server.start()
        let client = try LoopbackClient(port: port)
        // Each byte asks for 1 MiB; we never read. Once its output is over the limit the server must
        // stop reading from us: the bytes sent after that stay in the kernel.
        var sent = 0
        while sent < 200 {
            try client.send([0x61])
            sent += 1
            // Each byte is either read (and answered) or waits because the server's output is full.
            let sentSoFar = sent
            #expect(eventually { received.value == sentSoFar || server.hasUnwritableConnection })
            if server.hasUnwritableConnection { break }
        }
        #expect(server.hasUnwritableConnection)
        let seen = received.value
        while sent < 200 {
            try client.send([0x61])
            sent += 1
        }
        server.drainLoops()
        #expect(received.value == seen)
        #expect(seen < 200)
        // Pending output never exceeds the limit by more than one write's worth.
        #expect(maxPending.value <= limit + 1024 * 1024)
        // Reading drains the output, after which the server reads again.
        var drained = 0
        while let chunk = try? client.receive(timeout: .milliseconds(300)), !chunk.isEmpty { drained += chunk.count }
        #expect(drained > 0)
        #expect(eventually { received.value > seen })
        #expect(shutdownAndWait(server))
    }

    @Test func stalledPeerIsClosedAfterWriteTimeout() throws {
        let received = Counter()
        let maxPending = Counter()
        let server = HTTPServer(
            configuration: testConfiguration {
                $0.maxOutboundBytes = 64 * 1024
                $0.writeTimeout = .milliseconds(300)
            }
        ) { FloodHandler(size: 64 * 1024 * 1024, received: received, maxPending: maxPending) }
        let port = try server.start()
        let client = try LoopbackClient(port: port)
        try client.send([0x61])
        #expect(eventually { server.openConnectionCount == 1 })
        #expect(eventually(timeout: .seconds(5)) { server.openConnectionCount == 0 })
        #expect(shutdownAndWait(server))
    }

    @Test func shutdownRefusesNewConnectionsAndCompletes() throws {
        let server = HTTPServer(configuration: testConfiguration()) { EchoHandler() }
        let port = try server.start()
        let client = try LoopbackClient(port: port)
        try client.send("x")
        _ = try client.receive()
        #expect(shutdownAndWait(server))  // echo's default shutdown: flush and close
        #expect(client.waitForClose())
        #expect(throws: LoopbackClient.Failure.self) { try LoopbackClient(port: port) }
    }
}
