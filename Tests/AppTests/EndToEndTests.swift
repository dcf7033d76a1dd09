import Foundation
import TestSupport
import Testing
import Transport

@testable import App

@Suite("End to end — Application behind the real transport on 127.0.0.1")
struct EndToEndTests {
    /// Starts an HTTPServer on an ephemeral port in front of a harness application.
    func serve(_ h: AppHarness) throws -> (HTTPServer, Int) {
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.loopCount = 2
        let server = HTTPServer(configuration: configuration, responder: h.app)
        return (server, try server.start())
    }

    func json(_ body: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }

    @Test("register, then me with the token, on one keep-alive connection")
    func registerAndMe() async throws {
        let h = try AppHarness()
        let (server, port) = try serve(h)
        defer { server.shutdown() }
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
        let h = try AppHarness()
        let (server, port) = try serve(h)
        defer { server.shutdown() }
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
    }
}
