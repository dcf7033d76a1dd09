import Foundation
import Logging
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// `--log-format json`: one JSON object per line for every request and every connection event.
@Suite("Logs — one JSON line per request and per connection event")
struct MetricsConnectionLogTests {
    /// A pipe the sink writes into, read without blocking. The pipe is left open on purpose: the
    /// sink's flush timer and a server still winding down may write after the test, and a closed
    /// descriptor number could by then belong to someone else (two descriptors per test).
    final class Capture: @unchecked Sendable {
        let fds: [Int32]
        let sink: LogSink
        private var text = ""

        init() {
            var fds: [Int32] = [0, 0]
            precondition(pipe(&fds) == 0)
            _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
            self.fds = fds
            sink = LogSink(fd: fds[1])
        }

        /// Every line written so far, parsed.
        func lines() -> [[String: Any]] {
            sink.flush()
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = read(fds[0], &chunk, chunk.count)
                if n <= 0 { break }
                text += String(decoding: chunk[0..<n], as: UTF8.self)
            }
            return text.split(separator: "\n").map { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? ["unparsed": String(line)]
            }
        }
    }

    @Test("a keep-alive connection and a WebSocket: opened, each request, upgraded, closed — all JSON")
    func connectionEvents() async throws {
        let capture = Capture()
        let h = try AppHarness(accessLog: AccessLog(sink: capture.sink, format: .json, level: .info))
        defer { h.app.realtime.stop() }
        let (token, _) = try await h.register("log@example.com")
        let transportLog = TransportLog(
            sink: capture.sink, format: .json, level: .info, logger: Logger(label: "test"))
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.loopCount = 2
        let server = HTTPServer(configuration: configuration, responder: h.app) { transportLog.record($0) }
        let port = try server.start()
        defer { server.shutdown() }

        try await blocking {
            let client = try LoopbackClient(port: port, timeout: ioTimeout)
            _ = try client.request("GET", "/healthz")
            _ = try client.request("GET", "/v1/nothing-here")
            client.close()
            let ws = try WebSocketTestClient(
                port: port, path: "/v1/realtime", extraHeaders: [("Authorization", "Bearer \(token)")], timeout: ioTimeout)
            #expect(ws.handshake.status == 101)
            ws.connection.close()
        }
        // The close lines follow what the clients saw: wait for them (bounded; not a timing).
        _ = await eventually { capture.lines().filter { $0["msg"] as? String == "connection closed" }.count >= 2 }
        let lines = capture.lines()
        #expect(lines.allSatisfy { $0["unparsed"] == nil && $0["ts"] is String && $0["level"] is String })

        let connectionLines = lines.filter { $0["logger"] as? String == "chronir.connection" }
        let ids = Set(connectionLines.compactMap { $0["connection_id"] as? Int })
        #expect(ids.count == 2)
        let (plain, socket) = (ids.min()!, ids.max()!)
        func events(_ id: Int) -> [String] {
            connectionLines.filter { $0["connection_id"] as? Int == id }.compactMap { $0["msg"] as? String }
        }
        #expect(events(plain) == ["connection opened", "connection closed"])
        #expect(events(socket) == ["connection opened", "connection upgraded", "connection closed"])
        let opened = try #require(connectionLines.first { $0["msg"] as? String == "connection opened" })
        #expect(opened["client_ip"] as? String == "127.0.0.1")
        #expect(opened["level"] as? String == "info")

        let requests = lines.filter { $0["logger"] as? String == "chronir.access" }.compactMap { $0["path"] as? String }
        #expect(requests.suffix(3) == ["/healthz", "/v1/nothing-here", "/v1/realtime"])
    }

    @Test("below info the connection lines are off, like the access log")
    func levelGate() {
        let capture = Capture()
        let log = TransportLog(sink: capture.sink, format: .json, level: .notice, logger: Logger(label: "test"))
        log.record(.accepted(connectionID: 7, remoteAddress: "10.0.0.1"))
        log.record(.upgraded(connectionID: 7))
        log.record(.closed(connectionID: 7))
        #expect(capture.lines().isEmpty)
        let on = TransportLog(sink: capture.sink, format: .json, level: .info, logger: Logger(label: "test"))
        on.record(.timedOut(connectionID: 8, .header))
        on.record(.badRequest(connectionID: 9, status: 400, reason: "invalid header field"))
        let lines = capture.lines()
        #expect(lines.count == 2)
        #expect(lines.first?["msg"] as? String == "connection timed out")
        #expect(lines.first?["deadline"] as? String == "header")
        #expect(lines.last?["msg"] as? String == "request rejected")
        #expect(lines.last?["status"] as? Int == 400)
    }
}
