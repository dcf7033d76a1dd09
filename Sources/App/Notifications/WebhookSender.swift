public import Domain
import Hashing
public import Outbound
public import Store

/// The operator's webhook (`--notify-webhook-url`; docs/notifications.md#operator-webhook): every
/// notification, once, as JSON, so an operator can bridge to anything (Matrix, ntfy, SMS…).
///
/// Each POST carries `X-Chronir-Timestamp` (Unix seconds) and `X-Chronir-Signature: v1=<hex>`, the
/// HMAC-SHA-256 under the shared secret of `<timestamp>.<body>` — a receiver recomputes it, compares
/// in constant time, and refuses old timestamps (replay). `X-Chronir-Key` is the notification's
/// outbox key: delivery is at-least-once, the key lets a receiver drop repeats.
public struct WebhookSender: RequestSender {
    public var provider: Device.Provider? { nil }

    private let url: String
    private let secret: [UInt8]
    public let client: OutboundClient
    private let timeout: Duration

    /// Secrets shorter than this are refused at start-up (`init` returns nil).
    public static let minSecretBytes = 16

    public init?(url: String, secret: [UInt8], client: OutboundClient, timeout: Duration = .seconds(10)) {
        guard secret.count >= Self.minSecretBytes else { return nil }
        self.url = url
        self.secret = secret
        self.client = client
        self.timeout = timeout
    }

    /// The body sent for a delivery.
    struct Body: Encodable {
        var key: String
        var type: String
        var title: String
        var body: String
        var data: [String: String]
        var recipients: [String]
        var expiresAt: Timestamp
        enum CodingKeys: String, CodingKey {
            case key, type, title, body, data, recipients
            case expiresAt = "expires_at"
        }
    }

    /// `DocumentCoding.encode(body)`, byte for byte, written by `DocumentWriter` (one per
    /// notification: `JSONEncoder` was ≈ 5 % of the server's CPU in the 10,000-alarm burst).
    static func body(_ body: Body) -> [UInt8] {
        // Members in sorted key order (the `CodingKeys` raw values).
        var writer = DocumentWriter(capacity: 512)
        writer.member("body", body.body)
        writer.member("data", body.data)
        writer.member("expires_at", body.expiresAt)
        writer.member("key", body.key)
        writer.member("recipients", body.recipients)
        writer.member("title", body.title)
        writer.member("type", body.type)
        return writer.finish()
    }

    /// `v1=` + hex HMAC-SHA-256(secret, "<timestamp>.<body>").
    public static func signature(secret: [UInt8], timestamp: Int64, body: [UInt8]) -> String {
        "v1=" + Hex.encode(HMACSHA256.authenticationCode(key: secret, message: Array("\(timestamp).".utf8) + body))
    }

    /// The signed POST of `delivery`'s JSON (`Body`), timestamped `now`.
    public func prepare(_ delivery: NotificationDeliveries.Delivery, now: Int64) -> PreparedSend {
        guard case .webhook(let recipients) = delivery.target else {
            return .settled(.rejected(reason: "not a webhook delivery"))
        }
        let words = NotificationText.words(delivery.content)
        let body = Self.body(
            Body(
                key: delivery.key, type: delivery.type.rawValue, title: words.title,
                body: words.body, data: delivery.content.data, recipients: recipients,
                expiresAt: Timestamp(milliseconds: delivery.expiresAt)))
        let timestamp = now / 1000
        return .request(
            OutboundRequest(
                method: .post, url: url,
                headers: [
                    HTTPField(name: "Content-Type", value: "application/json"),
                    HTTPField(name: "User-Agent", value: "chronir-server"),
                    HTTPField(name: "X-Chronir-Key", value: delivery.key),
                    HTTPField(name: "X-Chronir-Timestamp", value: "\(timestamp)"),
                    HTTPField(name: "X-Chronir-Signature", value: Self.signature(secret: secret, timestamp: timestamp, body: body)),
                ],
                body: body, timeout: timeout))
    }

    public func outcome(of result: Result<OutboundResponse, OutboundError>, now: Int64) -> SendOutcome {
        switch result {
        case .success(let response): Self.outcome(status: response.status, retryAfter: response.headers.value(of: "retry-after"), now: now)
        case .failure(let error): ProviderExchange.outcome(of: error, provider: "webhook")
        }
    }

    /// 2xx → delivered; 408, 429, 5xx → retry (with `Retry-After`); any other status → rejected.
    static func outcome(status: Int, retryAfter: String?, now: Int64) -> SendOutcome {
        switch status {
        case 200..<300: .delivered
        case 408, 429, 500..<600:
            .retry(reason: "webhook answered \(status)", retryAfterMilliseconds: RetryAfter.milliseconds(retryAfter, now: now))
        default: .rejected(reason: "webhook answered \(status)")
        }
    }

}
