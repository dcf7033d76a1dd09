import Foundation
import Outbound
import TestSupport

/// `Tests/Fakes/echo_server.py` with a fresh test CA: HTTPS (ALPN h2 + http/1.1, or http/1.1
/// only) and plain HTTP/1.1 + h2c on loopback. Stopped when released.
final class EchoServer: Sendable {
    let authority: TestCertificateAuthority
    let service: PythonService
    var tlsPort: Int { service.ports[0] }
    var plainPort: Int { service.ports[1] }

    /// Starts one on a Dispatch thread (making the CA and starting Python block for a while; the
    /// tests' tasks must not hold a cooperative thread meanwhile).
    static func start(
        http1Only: Bool = false, serverNames: [String] = TestCertificateAuthority.loopbackNames
    ) async throws -> EchoServer {
        try await blocking { try EchoServer(http1Only: http1Only, serverNames: serverNames) }
    }

    private init(http1Only: Bool, serverNames: [String]) throws {
        authority = try TestCertificateAuthority(serverNames: serverNames)
        service = try PythonService(
            script: "echo_server.py",
            arguments: [authority.serverCertificatePath, authority.serverKeyPath] + (http1Only ? ["http1"] : []))
    }

    deinit { service.stop() }

    /// `https://127.0.0.1:<port><path>`.
    func https(_ path: String, host: String = "127.0.0.1") -> String { "https://\(host):\(tlsPort)\(path)" }
    /// `http://127.0.0.1:<port><path>`.
    func http(_ path: String) -> String { "http://127.0.0.1:\(plainPort)\(path)" }

    /// A client that trusts this server's CA and may connect to loopback.
    func client(limits: OutboundLimits = OutboundLimits(), allowPlainHTTP: Bool = false) -> OutboundClient {
        OutboundClient(
            configuration: .init(
                limits: limits, policy: DestinationPolicy(allowPrivateDestinations: true, allowPlainHTTP: allowPlainHTTP),
                caFile: authority.certificatePath))
    }
}

/// What `/echo` saw.
struct Echo: Decodable {
    let method: String
    let headers: [[String]]
    let body: String
    let http_version: String
    let client_port: Int

    init(_ response: OutboundResponse) throws {
        self = try JSONDecoder().decode(Echo.self, from: Data(response.body))
    }

    /// The values of header `name` the server received (names arrive lower-cased).
    func header(_ name: String) -> [String] {
        headers.filter { $0[0] == name.lowercased() }.map { $0[1] }
    }
}

/// The error `client` fails `request` with, or nil when it answers.
func failure(_ client: OutboundClient, _ request: OutboundRequest) async -> OutboundError? {
    do {
        _ = try await client.send(request)
        return nil
    } catch {
        return error
    }
}
