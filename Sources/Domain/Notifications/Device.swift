import Hashing
import Push

/// One install of a client that can receive push notifications (docs/notifications.md#devices): a
/// client-chosen id per user, the provider that reaches it and the provider's address. A delivery
/// address, not a shared document: devices never enter the change log.
public struct Device: Sendable, Equatable {
    /// What the client runs on.
    public enum Platform: String, Sendable, Codable, CaseIterable {
        case ios, android, web
    }

    /// The push service that reaches the device.
    public enum Provider: String, Sendable, Codable, CaseIterable {
        /// Apple Push Notification service (HTTP/2, token authentication).
        case apns
        /// Firebase Cloud Messaging HTTP v1.
        case fcm
        /// Web Push (RFC 8030 + RFC 8291 + RFC 8292): browsers and UnifiedPush distributors.
        case webpush
    }

    /// A Web Push subscription as a browser's `PushSubscription.toJSON()` gives it.
    public struct WebPushSubscription: Sendable, Equatable {
        /// The push service URL the server POSTs to (https).
        public var endpoint: String
        /// The user agent's P-256 public key, uncompressed point, base64url without padding.
        public var p256dh: String
        /// The 16-byte authentication secret, base64url without padding.
        public var auth: String

        public init(endpoint: String, p256dh: String, auth: String) {
            self.endpoint = endpoint
            self.p256dh = p256dh
            self.auth = auth
        }
    }

    /// Where the provider reaches the device.
    public enum Address: Sendable, Equatable {
        /// An APNs device token (lowercase hex) or an FCM registration token.
        case token(String)
        /// A Web Push subscription.
        case webPush(WebPushSubscription)

        /// The unique part: the token, or the subscription's endpoint.
        public var key: String {
            switch self {
            case .token(let token): token
            case .webPush(let subscription): subscription.endpoint
            }
        }
    }

    public var deviceID: String
    public var platform: Platform
    public var provider: Provider
    public var address: Address
    public var appVersion: String?
    public var locale: String?
    public var createdAt: Timestamp
    /// Refreshed by every registration (clients re-register when they start); unseen for
    /// `DeviceRules.unseenLifetimeMilliseconds`, the device is purged.
    public var lastSeenAt: Timestamp

    public init(
        deviceID: String, platform: Platform, provider: Provider, address: Address, appVersion: String?,
        locale: String?, createdAt: Timestamp, lastSeenAt: Timestamp
    ) {
        self.deviceID = deviceID
        self.platform = platform
        self.provider = provider
        self.address = address
        self.appVersion = appVersion
        self.locale = locale
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
    }
}

extension Device: Encodable {
    enum CodingKeys: String, CodingKey {
        case platform, provider, token, subscription, locale
        case deviceID = "device_id"
        case appVersion = "app_version"
        case createdAt = "created_at"
        case lastSeenAt = "last_seen_at"
    }

    /// The owner's view: a token as registered; of a subscription only the endpoint — its keys are
    /// write-only, like a password.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(deviceID, forKey: .deviceID)
        try c.encode(platform, forKey: .platform)
        try c.encode(provider, forKey: .provider)
        switch address {
        case .token(let token): try c.encode(token, forKey: .token)
        case .webPush(let subscription): try c.encode(["endpoint": subscription.endpoint], forKey: .subscription)
        }
        try c.encode(appVersion, forKey: .appVersion)
        try c.encode(locale, forKey: .locale)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(lastSeenAt, forKey: .lastSeenAt)
    }
}

/// Validation and limits of device registrations (`PUT /v1/me/devices/{device_id}`). Every failure is
/// `invalidField` naming the JSON field.
public enum DeviceRules {
    /// A device id is 1…64 of `[A-Za-z0-9._-]` (a UUID fits).
    public static let maxDeviceIDBytes = 64
    /// Devices one account may have; registering one more drops the least recently seen.
    public static let maxDevicesPerUser = 20
    /// A device not registered again for 60 days is purged (data-schema §8).
    public static let unseenLifetimeMilliseconds: Int64 = 60 * 24 * 3600 * 1000
    /// An APNs token is 32 bytes today (64 hex digits); Apple reserves the right to lengthen it.
    public static let apnsTokenHexDigits = 64...200
    /// FCM registration tokens are ~150–250 characters; this bounds what is stored.
    public static let maxFCMTokenBytes = 4_096
    /// `app_version` ("1.2.0 (345)") and `locale` (a BCP 47 tag) are short labels.
    public static let maxAppVersionBytes = 32
    public static let maxLocaleBytes = 35

    /// Which providers a platform may register with: APNs reaches Apple devices; FCM reaches Android
    /// and (through APNs) iOS; Web Push reaches browsers and UnifiedPush distributors on Android.
    public static func allows(_ platform: Device.Platform, _ provider: Device.Provider) -> Bool {
        switch provider {
        case .apns: platform == .ios
        case .fcm: platform == .android || platform == .ios
        case .webpush: platform == .web || platform == .android
        }
    }

    public static func validateDeviceID(_ id: String) throws(DomainError) -> String {
        let bytes = Array(id.utf8)
        guard (1...maxDeviceIDBytes).contains(bytes.count), bytes.allSatisfy(isIDByte) else {
            throw .invalidField(
                field: "device_id", message: "device_id must be 1…\(maxDeviceIDBytes) of A-Z a-z 0-9 . _ -")
        }
        return id
    }

    /// The address for `provider` from exactly one of `token` / `subscription`; APNs tokens are
    /// lowercased, base64url keys lose any `=` padding (browsers differ).
    public static func address(
        provider: Device.Provider, token: String?, subscription: Device.WebPushSubscription?
    ) throws(DomainError) -> Device.Address {
        switch provider {
        case .apns:
            guard subscription == nil else { throw unexpected("subscription", provider) }
            guard let token else { throw .invalidField(field: "token", message: "token is required for apns") }
            let lower = token.lowercased()
            guard apnsTokenHexDigits.contains(lower.utf8.count), lower.utf8.allSatisfy(isHexDigit) else {
                throw .invalidField(field: "token", message: "an APNs token is 64…200 hexadecimal digits")
            }
            return .token(lower)
        case .fcm:
            guard subscription == nil else { throw unexpected("subscription", provider) }
            guard let token else { throw .invalidField(field: "token", message: "token is required for fcm") }
            guard (1...maxFCMTokenBytes).contains(token.utf8.count), token.utf8.allSatisfy(isFCMTokenByte) else {
                throw .invalidField(field: "token", message: "an FCM token is 1…\(maxFCMTokenBytes) of A-Z a-z 0-9 - _ : .")
            }
            return .token(token)
        case .webpush:
            guard token == nil else { throw unexpected("token", provider) }
            guard let subscription else {
                throw .invalidField(field: "subscription", message: "subscription is required for webpush")
            }
            return .webPush(try validate(subscription))
        }
    }

    /// The subscription parsed as the Web Push sender reads it (`Push.PushSubscription`: an https
    /// endpoint with a host the sender can use and no credentials, `p256dh` a point of the P-256
    /// curve, a 16-byte auth secret) — one parser, so a subscription stored is one that can be
    /// reached. Keys are kept as given minus any `=` padding. 422 naming the field.
    static func validate(_ s: Device.WebPushSubscription) throws(DomainError) -> Device.WebPushSubscription {
        let p256dh = unpadded(s.p256dh)
        let auth = unpadded(s.auth)
        do {
            _ = try PushSubscription(endpoint: s.endpoint, p256dh: p256dh, auth: auth)
        } catch {
            switch error {
            case .endpointTooLong, .endpointNotHTTPS, .endpointMalformed:
                throw .invalidField(
                    field: "subscription.endpoint",
                    message: "endpoint must be an https URL of at most \(PushEndpoint.maxByteCount) bytes a push can be sent to")
            case .invalidP256dh:
                throw .invalidField(
                    field: "subscription.keys.p256dh", message: "p256dh must be a base64url uncompressed point of the P-256 curve")
            case .invalidAuth:
                throw .invalidField(field: "subscription.keys.auth", message: "auth must be 16 bytes, base64url")
            }
        }
        return Device.WebPushSubscription(endpoint: s.endpoint, p256dh: p256dh, auth: auth)
    }

    /// `app_version` / `locale`: optional short printable labels; empty means absent.
    public static func label(_ value: String?, field: String, maxBytes: Int) throws(DomainError) -> String? {
        guard let value, !value.isEmpty else { return nil }
        guard value.utf8.count <= maxBytes, value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
            throw .invalidField(field: field, message: "\(field) must be at most \(maxBytes) printable ASCII characters")
        }
        return value
    }

    private static func unexpected(_ field: String, _ provider: Device.Provider) -> DomainError {
        .invalidField(field: field, message: "\(field) does not apply to provider \(provider.rawValue)")
    }

    private static func unpadded(_ text: String) -> String {
        String(text.reversed().drop { $0 == "=" }.reversed())
    }

    private static func isIDByte(_ b: UInt8) -> Bool {
        isAlphanumeric(b) || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "-")
    }

    private static func isFCMTokenByte(_ b: UInt8) -> Bool {
        isIDByte(b) || b == UInt8(ascii: ":")
    }

    private static func isHexDigit(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x61 && b <= 0x66)
    }

    private static func isAlphanumeric(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
    }
}
