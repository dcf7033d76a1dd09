import Foundation
import Hashing
import Outbound
import TestSupport

/// A fake from `Tests/Fakes` (fake_apns.py, fake_fcm.py, webpush_service.py, webhook_receiver.py) on
/// loopback TLS with a fresh test CA, and the client that reaches it; stopped when released. Every
/// fake of the notification tests starts through here.
final class ProviderFake: Sendable {
    let authority: TestCertificateAuthority
    let service: PythonService
    /// Trusts the CA, may connect to loopback; senders under test share it.
    let client: OutboundClient
    var port: Int { service.ports[0] }
    var origin: String { "https://127.0.0.1:\(port)" }

    /// Starts `script` with the CA's certificate and key followed by `arguments`, on a Dispatch
    /// thread (the CA and Python block for a while).
    static func start(_ script: String, _ arguments: [String]) async throws -> ProviderFake {
        try await blocking { try ProviderFake(script: script, arguments: arguments) }
    }

    private init(script: String, arguments: [String]) throws {
        authority = try TestCertificateAuthority()
        service = try PythonService(
            script: script, arguments: [authority.serverCertificatePath, authority.serverKeyPath] + arguments)
        client = OutboundClient(
            configuration: .init(policy: DestinationPolicy(allowPrivateDestinations: true), caFile: authority.certificatePath))
    }

    deinit {
        client.close()
        service.stop()
    }

    /// Sets the fake's clock to `milliseconds` (Unix ms; it judges token ages in whole seconds).
    func setClock(_ milliseconds: Int64) async throws {
        try await post("/control/clock", ["now": milliseconds / 1_000])
    }

    /// Queues scripted answers for requests to `token` (consumed one per request; then success).
    func script(_ token: String, _ responses: [[String: Any]]) async throws {
        try await post("/control/respond", ["token": token, "responses": responses])
    }

    /// POSTs a JSON control document.
    func post(_ path: String, _ document: [String: Any]) async throws {
        let body = try JSONSerialization.data(withJSONObject: document)
        let response = try await client.send(
            OutboundRequest(
                method: .post, url: origin + path, headers: [HTTPField(name: "content-type", value: "application/json")],
                body: Array(body), httpVersion: .http2WhereNegotiated))
        guard response.status == 200 else { throw FakeError.control(path, response.status, service.log) }
    }

    /// `GET /received`: what the fake recorded.
    func received() async throws -> [String: Any] {
        let response = try await client.send(OutboundRequest(url: origin + "/received", httpVersion: .http2WhereNegotiated))
        guard response.status == 200, let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        else { throw FakeError.control("/received", response.status, service.log) }
        return object
    }

    enum FakeError: Error {
        case control(String, Int, String)
    }
}

/// The claims and header of a compact JWT (no verification: the fakes verify).
func jwtParts(_ token: String) -> (header: [String: Any], claims: [String: Any])? {
    let parts = token.split(separator: ".")
    guard parts.count == 3, let header = Base64URL.decode(String(parts[0])), let claims = Base64URL.decode(String(parts[1])),
        let h = try? JSONSerialization.jsonObject(with: Data(header)) as? [String: Any],
        let c = try? JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any]
    else { return nil }
    return (h, c)
}
