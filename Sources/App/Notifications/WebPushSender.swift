public import Domain
public import Hashing
public import Outbound
public import Push
public import Store
import Synchronization

/// The Web Push sender (RFC 8030, payload encryption RFC 8291 `aes128gcm`, VAPID RFC 8292;
/// docs/notifications.md#web-push-sender--built): one POST per delivery to the subscription's
/// endpoint, the payload encrypted for the subscription's keys, signed with the server's VAPID key.
///
/// Request (besides the encrypted body, `Content-Encoding: aes128gcm`):
/// `TTL` = whole seconds left until the delivery expires (≥ 0); `Urgency` from the type's priority
/// (high / normal / low); `Topic` = `topic(forKey:)` of the outbox key, so a push service replaces
/// an undelivered copy of the same notification; `Authorization: vapid t=…, k=…`, whose JWT is
/// cached per endpoint origin and reused until `renewBeforeExpirySeconds` before its `exp`.
///
/// Outcomes (`outcome(status:retryAfter:now:)`, `outcome(of:)`): 2xx delivered; 404/410 device
/// gone; 429/5xx retry (`Retry-After` honoured); other statuses rejected; timeouts and connection,
/// TLS and transport failures retry; a refused destination (SSRF policy) or an unusable request is
/// rejected; a payload over the RFC 8291 limit is rejected; a stored subscription that does not
/// validate (a key off the curve) can never be reached, so its device is dropped as gone.
public final class WebPushSender: RequestSender {
    /// Lifetime of a VAPID JWT: `VAPID.defaultValiditySeconds` (12 h), so a push service whose
    /// clock is hours off still accepts it.
    public static let validitySeconds = VAPID.defaultValiditySeconds
    /// A cached JWT is replaced this long before its `exp`, so none is sent that expires in flight
    /// or on the push service's skewed clock.
    public static let renewBeforeExpirySeconds: Int64 = 3_600
    /// Origins whose JWT is kept. Endpoints are chosen by clients, so the cache is bounded: when it
    /// is full, stale entries go, and if none is stale, all go (re-signing costs ~0.1 ms).
    public static let maxCachedOrigins = 1_024
    /// Default per-request deadline: a push service answers in well under a second; a hung one must
    /// not hold the dispatcher's lease (60 s).
    public static let defaultTimeout: Duration = .seconds(15)
    /// How long DNS plus the TCP and TLS handshakes to a push service may take:
    /// a push service connects in well under a second; an endpoint that accepts and never finishes
    /// TLS (or an unroutable address) is given up on after 3 s instead of the client's 10.
    public static let connectTimeout: Duration = .seconds(3)

    public var provider: Device.Provider? { .webpush }

    private let vapidKey: P256.PrivateKey
    private let subject: String
    public let client: OutboundClient
    private let timeout: Duration
    private let connectTimeout: Duration
    private let cache = Mutex<[String: CachedAuthorization]>([:])

    private struct CachedAuthorization {
        var value: String
        var issuedAt: Int64
        var expiresAt: Int64
    }

    /// A sender signing with `vapidKey` (`VAPIDKey.loadOrCreate`) and the operator contact `subject`
    /// (`mailto:` address or `https:` URL; `.invalidSubject` otherwise), sending through `client`
    /// (the caller owns and closes it) with `timeout` per request and `connectTimeout` for its connect phase.
    public init(
        vapidKey: P256.PrivateKey, subject: String, client: OutboundClient, timeout: Duration = WebPushSender.defaultTimeout,
        connectTimeout: Duration = WebPushSender.connectTimeout
    ) throws(VAPIDError) {
        guard VAPID.isValidSubject(subject) else { throw .invalidSubject }
        self.vapidKey = vapidKey
        self.subject = subject
        self.client = client
        self.timeout = timeout
        self.connectTimeout = connectTimeout
    }

    /// The server's VAPID public key as browsers take it (`applicationServerKey`): base64url of
    /// the 65-byte uncompressed point.
    public var publicKeyText: String { VAPIDKey.publicKeyText(vapidKey) }

    /// The encrypted, VAPID-signed POST of `delivery` to its subscription's endpoint.
    public func prepare(_ delivery: NotificationDeliveries.Delivery, now: Int64) -> PreparedSend {
        guard case .device(_, let device) = delivery.target, case .webPush(let stored) = device.address else {
            return .settled(.rejected(reason: "not a web push device"))
        }
        let subscription: PushSubscription
        do {
            subscription = try PushSubscription(endpoint: stored.endpoint, p256dh: stored.p256dh, auth: stored.auth)
        } catch {
            return .settled(.deviceGone(reason: "invalid subscription: \(error.rawValue)"))
        }
        let body: [UInt8]
        let authorization: String
        do {
            body = try WebPushEncryption.encrypt(Self.payload(delivery.content), for: subscription)
        } catch {
            return .settled(.rejected(reason: "payload: \(error)"))
        }
        do {
            authorization = try self.authorization(for: subscription.endpoint, now: now)
        } catch {
            return .settled(.rejected(reason: "VAPID: \(error)"))
        }
        return .request(
            OutboundRequest(
                method: .post, url: subscription.endpoint.url,
                headers: [
                    HTTPField(name: "TTL", value: String(max(0, (delivery.expiresAt - now) / 1_000))),
                    HTTPField(name: "Urgency", value: Self.urgency(delivery.type.policy.priority)),
                    HTTPField(name: "Topic", value: Self.topic(forKey: delivery.key)),
                    HTTPField(name: "Content-Type", value: "application/octet-stream"),
                    HTTPField(name: "Content-Encoding", value: "aes128gcm"),
                    HTTPField(name: "Authorization", value: authorization),
                ],
                body: body, timeout: timeout, connectTimeout: connectTimeout))
    }

    /// The subscription endpoint's origin: the user chose it.
    public func userChosenOrigin(of delivery: NotificationDeliveries.Delivery) -> String? {
        guard case .device(_, let device) = delivery.target, case .webPush(let stored) = device.address else { return nil }
        return (try? PushEndpoint(stored.endpoint))?.origin ?? stored.endpoint
    }

    public func outcome(of result: Result<OutboundResponse, OutboundError>, now: Int64) -> SendOutcome {
        switch result {
        case .success(let response): Self.outcome(status: response.status, retryAfter: response.headers.value(of: "Retry-After"), now: now)
        case .failure(let error): Self.outcome(of: error)
        }
    }

    // MARK: Pure parts

    /// The plaintext pushed: `{"notification":{"title","body"},"data":{…}}` (the service worker
    /// shows `notification` and routes on `data.type`), JSON with sorted keys.
    static func payload(_ content: NotificationContent) -> [UInt8] {
        struct Payload: Encodable {
            struct Notification: Encodable {
                var title: String
                var body: String
            }
            var notification: Notification
            var data: [String: String]
        }
        let words = NotificationText.words(content)
        return DocumentCoding.encode(Payload(notification: .init(title: words.title, body: words.body), data: content.data))
    }

    /// RFC 8030 §5.4: a topic is at most 32 characters of the base64url alphabet. The first 24
    /// bytes of SHA-256 of the outbox key, base64url (exactly 32 characters): the same notification
    /// retried always has the same topic, different ones practically never collide.
    public static func topic(forKey key: String) -> String {
        Base64URL.encode(SHA256.hash(Array(key.utf8)).prefix(24))
    }

    /// RFC 8030 §5.3 `Urgency` of a priority (`very-low` is not used).
    static func urgency(_ priority: NotificationPolicy.Priority) -> String {
        switch priority {
        case .high: "high"
        case .normal: "normal"
        case .low: "low"
        }
    }

    /// What a push service's answer means (RFC 8030 §5, §6.2; Retry-After read at `now`).
    static func outcome(status: Int, retryAfter: String?, now: Int64) -> SendOutcome {
        switch status {
        case 200..<300:
            return .delivered
        case 404, 410:
            return .deviceGone(reason: "push service answered \(status)")
        case 429, 500..<600:
            return .retry(
                reason: "push service answered \(status)",
                retryAfterMilliseconds: retryAfter.flatMap { RetryAfter.milliseconds($0, now: now) })
        default:
            // 400 (malformed), 401/403 (VAPID refused), 413 (too large) and anything unexpected: sending
            // the same request again cannot succeed.
            return .rejected(reason: "push service answered \(status)")
        }
    }

    /// What a failed exchange means: transient failures are retried, policy refusals are not.
    static func outcome(of error: OutboundError) -> SendOutcome {
        ProviderExchange.outcome(of: error, provider: "web push")
    }

    /// The VAPID header for `endpoint`'s origin at `now` (ms): the cached one while it has more than
    /// `renewBeforeExpirySeconds` left and was issued no later than `now`, else a fresh one.
    func authorization(for endpoint: PushEndpoint, now nowMilliseconds: Int64) throws(VAPIDError) -> String {
        let now = nowMilliseconds / 1_000
        let origin = endpoint.origin
        let renew = Self.renewBeforeExpirySeconds
        if let cached = cache.withLock({ $0[origin] }), cached.issuedAt <= now, now < cached.expiresAt - renew {
            return cached.value
        }
        let value = try VAPID.authorization(
            for: endpoint, subject: subject, key: vapidKey, now: now, validitySeconds: Self.validitySeconds)
        cache.withLock { cache in
            if cache.count >= Self.maxCachedOrigins {
                cache = cache.filter { now < $0.value.expiresAt - renew }
                if cache.count >= Self.maxCachedOrigins { cache.removeAll() }
            }
            cache[origin] = CachedAuthorization(value: value, issuedAt: now, expiresAt: now + Self.validitySeconds)
        }
        return value
    }
}
