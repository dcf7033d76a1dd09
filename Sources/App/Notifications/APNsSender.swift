public import Domain
import Foundation
public import Hashing
public import Logging
public import Outbound
import Push
public import Store
import Synchronization

/// Apple Push Notification service, token authentication (docs/notifications.md#apns--built): one
/// `POST /3/device/<token>` over HTTP/2 per delivery, authorised by an ES256 JWT made from the team's
/// `.p8` key and reused for `tokenLifetimeSeconds`.
public final class APNsSender: NotificationSender {
    /// Which APNs the app's tokens belong to (a development build's tokens work only on sandbox).
    public enum Environment: String, Sendable, CaseIterable {
        /// App Store, TestFlight and ad-hoc builds.
        case production
        /// Development builds (Xcode-signed).
        case sandbox

        /// The provider API's host.
        public var host: String {
            switch self {
            case .production: "api.push.apple.com"
            case .sandbox: "api.sandbox.push.apple.com"
            }
        }
    }

    /// What the operator configures.
    public struct Configuration: Sendable, Equatable {
        /// The 10-character id of the `.p8` key (the JWT's `kid`).
        public var keyID: String
        /// The 10-character Apple developer team id (the JWT's `iss`).
        public var teamID: String
        /// The app's bundle id (`apns-topic`).
        public var topic: String
        /// Which APNs: production or sandbox.
        public var environment: Environment
        /// `https://host[:port]` used instead of the environment's host (tests' fake APNs).
        public var baseURL: String?

        /// A configuration; see the properties.
        public init(keyID: String, teamID: String, topic: String, environment: Environment, baseURL: String? = nil) {
            self.keyID = keyID
            self.teamID = teamID
            self.topic = topic
            self.environment = environment
            self.baseURL = baseURL
        }

        /// Where requests go: `baseURL`, else `https://<environment host>`.
        var origin: String { baseURL ?? "https://\(environment.host)" }
    }

    /// How long one provider token is used: Apple refuses tokens older than an hour and throttles
    /// ones refreshed more often than every 20 minutes; 50 minutes leaves room for clock skew.
    public static let tokenLifetimeSeconds: Int64 = 50 * 60
    /// Deadline of one request (APNs answers in well under a second; a stalled stream is retried).
    public static let requestTimeout: Duration = .seconds(15)

    /// Serves APNs devices.
    public var provider: Device.Provider? { .apns }

    private let configuration: Configuration
    private let key: P256.PrivateKey
    private let client: OutboundClient
    private let logger: Logger
    /// The provider token in use and its `iat` (Unix seconds).
    private let token = Mutex<(jwt: String, issuedAt: Int64)?>(nil)

    /// A sender signing with `key` and sending through `client` (the caller owns and closes it).
    public init(configuration: Configuration, key: P256.PrivateKey, client: OutboundClient, logger: Logger) {
        self.configuration = configuration
        self.key = key
        self.client = client
        self.logger = logger
    }

    /// A sender whose key is read from the `.p8` file at `keyFile` (PKCS#8 PEM); throws when the
    /// file cannot be read or is not a P-256 private key.
    public convenience init(configuration: Configuration, keyFile: String, client: OutboundClient, logger: Logger) throws {
        let text = try String(contentsOfFile: keyFile, encoding: .utf8)
        self.init(configuration: configuration, key: try P256.PrivateKey(pemRepresentation: text), client: client, logger: logger)
    }

    /// One `POST /3/device/<token>`; the answer mapped as docs/notifications.md#apns--built tabulates.
    public func send(_ delivery: NotificationDeliveries.Delivery, now: Int64) async -> SendOutcome {
        guard case .device(_, let device) = delivery.target, case .token(let deviceToken) = device.address else {
            return .rejected(reason: "apns: not an APNs device")
        }
        let jwt = providerToken(now: now)
        let request = OutboundRequest(
            method: .post, url: "\(configuration.origin)/3/device/\(deviceToken)",
            headers: headers(delivery, jwt: jwt), body: Self.payload(delivery.content, policy: delivery.type.policy),
            timeout: Self.requestTimeout, httpVersion: .http2PriorKnowledge)
        let response: OutboundResponse
        do {
            response = try await client.send(request)
        } catch {
            return ProviderExchange.outcome(of: error, provider: "apns")
        }
        guard response.httpVersion == .http2 else { return .retry(reason: "apns: answered without HTTP/2", retryAfterMilliseconds: nil) }
        return outcome(of: response, jwt: jwt, now: now)
    }

    /// The provider token for `now` (Unix ms): the cached one while younger than
    /// `tokenLifetimeSeconds`, else a new one `{alg ES256, kid} {iss team, iat now}`.
    func providerToken(now: Int64) -> String {
        let seconds = now / 1_000
        return token.withLock { cached in
            if let cached, seconds >= cached.issuedAt, seconds - cached.issuedAt < Self.tokenLifetimeSeconds { return cached.jwt }
            let jwt = JWT.signES256(
                claims: [JWT.Claim("iss", .string(configuration.teamID)), JWT.Claim("iat", .integer(seconds))],
                keyID: configuration.keyID, key: key)
            cached = (jwt, seconds)
            return jwt
        }
    }

    /// Forgets `jwt` if it is still the cached token (APNs called it expired): the next send makes a new one.
    private func discard(_ jwt: String) {
        token.withLock { cached in if cached?.jwt == jwt { cached = nil } }
    }

    private func headers(_ delivery: NotificationDeliveries.Delivery, jwt: String) -> [HTTPField] {
        let policy = delivery.type.policy
        return [
            HTTPField(name: "authorization", value: "bearer \(jwt)"),
            HTTPField(name: "apns-topic", value: configuration.topic),
            // Apple: a background push must have priority 5 (10 is refused).
            HTTPField(name: "apns-push-type", value: policy.silent ? "background" : "alert"),
            HTTPField(name: "apns-priority", value: policy.priority == .high && !policy.silent ? "10" : "5"),
            HTTPField(name: "apns-expiration", value: String(max(0, delivery.expiresAt / 1_000))),
            HTTPField(name: "apns-collapse-id", value: ProviderExchange.collapseKey(delivery.key)),
            HTTPField(name: "content-type", value: "application/json"),
        ]
    }

    /// The JSON payload: `aps` (alert, default sound, interruption level) and the app's `data` ids; a
    /// silent type's `aps` is only `content-available: 1` (the app is woken in the background, nothing shown).
    static func payload(_ content: NotificationContent, policy: NotificationPolicy) -> [UInt8] {
        if policy.silent { return ProviderExchange.json(["aps": ["content-available": 1], "data": content.data]) }
        let words = NotificationText.words(content)
        return ProviderExchange.json([
            "aps": [
                "alert": ["title": words.title, "body": words.body],
                "sound": "default",
                "interruption-level": policy.timeSensitive ? "time-sensitive" : "active",
            ] as [String: Any],
            "data": content.data,
        ])
    }

    /// APNs' answer as an outcome (Apple, "Handling notification responses from APNs").
    private func outcome(of response: OutboundResponse, jwt: String, now: Int64) -> SendOutcome {
        let reason = ProviderExchange.jsonObject(response.body)?["reason"] as? String ?? ""
        let described = "apns \(response.status)" + (reason.isEmpty ? "" : " \(reason)")
        switch response.status {
        case 410:
            return .deviceGone(reason: described)
        case 400 where ["BadDeviceToken", "Unregistered", "DeviceTokenNotForTopic"].contains(reason):
            return .deviceGone(reason: described)
        case 403 where reason == "ExpiredProviderToken":
            discard(jwt)
            return .retry(reason: described, retryAfterMilliseconds: 0)
        default:
            let outcome = ProviderExchange.outcome(ofStatus: response, described: described, now: now)
            if case .rejected = outcome {
                logger.warning("apns refused a notification", metadata: ["status": "\(response.status)", "reason": "\(reason)"])
            }
            return outcome
        }
    }
}
