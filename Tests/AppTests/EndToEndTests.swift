import App
import Foundation
import Glibc
import Logging
import TestSupport
import Testing

/// What `chronir-server` starts — `ChronirRuntime.build` from options — on a free port of
/// 127.0.0.1, on the test backend, with fast password hashing; logs go nowhere.
final class RunningServer: Sendable {
    let runtime: ChronirRuntime
    let directory: TemporaryDirectory
    private let serving: Task<Void, any Error>
    private let sink: LogSink

    init(_ extra: [String] = []) throws {
        directory = TemporaryDirectory()
        var arguments = [
            "--port", "0", "--loops", "2", "--data-dir", directory.path, "--public-dir", "none", "--password-hashing", "fast",
            "--log-level", "critical",
        ]
        if TestBackend.current == .postgres { arguments += ["--database-url", try PostgresServer.freshDatabaseURL()] }
        let configuration = try ServerOptions.configuration(arguments: arguments + extra, environment: [:])
        sink = LogSink(fd: open("/dev/null", O_WRONLY | O_CLOEXEC))
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let runtime = try ChronirRuntime.build(configuration, sink: sink, logger: logger)
        self.runtime = runtime
        serving = Task { try await runtime.run() }
    }

    var port: Int { runtime.port }

    /// The graceful shutdown SIGTERM starts; returns when every part has stopped.
    func stop() async throws {
        await runtime.shutDown()
        try await serving.value
    }
}

@Suite("End to end — what chronir-server starts, on 127.0.0.1")
struct EndToEndTests {
    func json(_ body: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }

    @Test("register, then me with the token, on one keep-alive connection; shutdown stops the listener")
    func registerAndMe() async throws {
        let server = try RunningServer()
        let port = server.port
        let (registered, me) = try await blocking {
            let client = try LoopbackClient(port: port)
            defer { client.close() }
            let registered = try client.request(
                "POST", "/v1/auth/register", headers: [("Content-Type", "application/json")],
                body: #"{"email":"e2e@example.com","password":"correct horse","display_name":"E"}"#)
            let token =
                (try? JSONSerialization.jsonObject(with: Data(registered.body)) as? [String: Any])?["token"]
                as? String ?? ""
            let me = try client.request("GET", "/v1/me", headers: [("Authorization", "Bearer \(token)")])
            return (registered, me)
        }
        #expect(registered.status == 201)
        #expect(me.status == 200)
        #expect(json(me.body)["email"] as? String == "e2e@example.com")
        try await server.stop()
        #expect(throws: (any Error).self) { try LoopbackClient(port: port) }
    }

    @Test("the metrics listener and a port already taken")
    func listeners() async throws {
        let token = String(repeating: "m", count: 16)
        let server = try RunningServer(["--metrics-port", "0", "--metrics-token", token])
        let metricsPort = try #require(server.runtime.metricsPort)
        let (refused, scraped) = try await blocking {
            let client = try LoopbackClient(port: metricsPort)
            defer { client.close() }
            return (
                try client.request("GET", "/metrics"),
                try client.request("GET", "/metrics", headers: [("Authorization", "Bearer \(token)")])
            )
        }
        #expect(refused.status == 401)
        #expect(scraped.status == 200)
        // A second server on the same port fails to start and leaves nothing running.
        #expect(throws: ChronirRuntime.StartupFailure.self) { try RunningServer(["--port", "\(server.port)"]) }
        try await server.stop()
    }

    /// Requests the transport refuses, by name (the raw bytes are long; test output shows the name).
    enum Refusal: String, CaseIterable, Sendable {
        case smuggling, longTarget, hugeBody
        var raw: String {
            switch self {
            case .smuggling: "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
            case .longTarget: "GET /\(String(repeating: "a", count: 9000)) HTTP/1.1\r\nHost: x\r\n\r\n"
            case .hugeBody: "POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n"
            }
        }
        var expected: (status: Int, name: String) {
            switch self {
            case .smuggling: (400, "INVALID_REQUEST")
            case .longTarget: (414, "URI_TOO_LONG")
            case .hugeBody: (413, "PAYLOAD_TOO_LARGE")
            }
        }
    }

    @Test("transport-level refusals carry the JSON error envelope", arguments: Refusal.allCases)
    func transportErrors(refusal: Refusal) async throws {
        let raw = refusal.raw
        let (status, name) = refusal.expected
        let server = try RunningServer()
        let port = server.port
        let (response, closed) = try await blocking {
            let client = try LoopbackClient(port: port)
            defer { client.close() }
            try client.send(raw)
            let response = try client.readResponse()
            return (response, client.waitForClose())
        }
        #expect(response.status == status)
        let error = try #require(json(response.body)["error"] as? [String: Any])
        #expect(error["name"] as? String == name)
        #expect(closed)
        try await server.stop()
    }
}
