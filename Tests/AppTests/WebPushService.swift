import Foundation
import Outbound
import TestSupport

/// `Tests/Fakes/webpush_service.py` with a fresh test CA: a fake Web Push service on loopback that
/// verifies VAPID and decrypts what it receives with subscription keys it made itself. Stopped when
/// released.
final class WebPushService: Sendable {
    let fake: ProviderFake
    /// Trusts the CA and may reach loopback: the tests' own calls, and what the sender under test uses.
    var client: OutboundClient { fake.client }
    var origin: String { fake.origin }

    /// A subscription the fake made: what a browser would register.
    struct Subscription: Decodable {
        let endpoint: String
        let p256dh: String
        let auth: String

        /// The `subscription` object of `PUT /v1/me/devices/{id}`.
        var json: String { #"{"endpoint":"\#(endpoint)","keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"# }
    }

    /// One push the fake received.
    struct Received: Sendable {
        let id: String
        let status: Int
        let error: String?
        let headers: [String: String]
        let vapidKey: String?
        let jwt: [String: any Sendable]
        let payload: [String: any Sendable]

        var notification: [String: String] { payload["notification"] as? [String: String] ?? [:] }
        var data: [String: String] { payload["data"] as? [String: String] ?? [:] }
    }

    /// Starts one on a Dispatch thread (the CA and Python start-up block for a while).
    static func start() async throws -> WebPushService {
        WebPushService(fake: try await ProviderFake.start("webpush_service.py", []))
    }

    private init(fake: ProviderFake) { self.fake = fake }

    /// A new subscription `id` (the fake makes its key pair and auth secret).
    func subscribe(_ id: String) async throws -> Subscription {
        try JSONDecoder().decode(Subscription.self, from: Data(try await call(.post, "/subscriptions/\(id)", 201)))
    }

    /// Later pushes to `id` are answered `status` (with `Retry-After` when given).
    func answer(_ id: String, status: Int, retryAfter: String? = nil) async throws {
        let retry = retryAfter.map { #","retry_after":"\#($0)""# } ?? ""
        _ = try await call(.post, "/control/\(id)", 200, body: #"{"status":\#(status)\#(retry)}"#)
    }

    /// The time the fake checks a JWT's `exp` against (the tests' injected clock, in ms).
    func setClock(milliseconds: Int64) async throws {
        _ = try await call(.post, "/clock", 200, body: #"{"now":\#(milliseconds / 1_000)}"#)
    }

    /// Every push received so far, in arrival order.
    func received() async throws -> [Received] {
        let list = try JSONSerialization.jsonObject(with: Data(try await call(.get, "/received", 200))) as? [[String: Any]] ?? []
        return list.map { entry in
            Received(
                id: entry["id"] as? String ?? "", status: entry["status"] as? Int ?? 0, error: entry["error"] as? String,
                headers: entry["headers"] as? [String: String] ?? [:], vapidKey: entry["vapid_key"] as? String,
                jwt: (entry["jwt"] as? [String: Any] ?? [:]).mapValues { "\($0)" },
                payload: Self.sendable(entry["payload"] as? [String: Any] ?? [:]))
        }
    }

    /// Strings and string maps only (what the payload holds).
    private static func sendable(_ object: [String: Any]) -> [String: any Sendable] {
        object.compactMapValues { value -> (any Sendable)? in
            if let text = value as? String { return text }
            if let map = value as? [String: String] { return map }
            return nil
        }
    }

    private func call(_ method: OutboundRequest.Method, _ path: String, _ expected: Int, body: String = "") async throws
        -> [UInt8]
    {
        let response = try await client.send(OutboundRequest(method: method, url: origin + path, body: Array(body.utf8)))
        guard response.status == expected else {
            throw Unexpected(
                description: "\(method.rawValue) \(path): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
        return response.body
    }

    struct Unexpected: Error, CustomStringConvertible {
        var description: String
    }
}
