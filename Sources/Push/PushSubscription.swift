public import Hashing

/// What a browser's `PushSubscription.toJSON()` hands the server (W3C Push API), validated: the
/// endpoint, the user agent's ECDH public key and its authentication secret (RFC 8291 §2).
public struct PushSubscription: Sendable, Equatable {
    /// Length of the authentication secret (RFC 8291 §3.2).
    public static let authSecretByteCount = 16
    /// Longest base64url text read for `p256dh` or `auth` (65 bytes encode as 87 characters);
    /// anything longer is refused before decoding.
    static let maxKeyTextByteCount = 128

    /// Where messages for this subscription are POSTed.
    public let endpoint: PushEndpoint
    /// The user agent's public key (`p256dh`).
    public let p256dh: P256.PublicKey
    /// The 16-byte authentication secret (`auth`).
    public let authSecret: [UInt8]

    /// Validates the three strings of a subscription: `keys.p256dh` and `keys.auth` are base64url
    /// (RFC 4648 §5), unpadded as browsers send them; trailing `=` padding is tolerated.
    public init(endpoint: String, p256dh: String, auth: String) throws(PushSubscriptionError) {
        let endpoint = try PushEndpoint(endpoint)
        guard let point = Self.decode(p256dh), let key = try? P256.PublicKey(x963Representation: point) else {
            throw .invalidP256dh
        }
        guard let secret = Self.decode(auth) else { throw .invalidAuth }
        try self.init(endpoint: endpoint, p256dh: key, authSecret: secret)
    }

    /// A subscription from already-decoded parts; throws `.invalidAuth` unless the secret is 16 bytes.
    public init(endpoint: PushEndpoint, p256dh: P256.PublicKey, authSecret: [UInt8]) throws(PushSubscriptionError) {
        guard authSecret.count == Self.authSecretByteCount else { throw .invalidAuth }
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.authSecret = authSecret
    }

    /// Base64url with up to two `=` of padding (then the padded length is a multiple of 4), or nil.
    private static func decode(_ text: String) -> [UInt8]? {
        guard text.utf8.count <= maxKeyTextByteCount else { return nil }
        let padding = text.utf8.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        guard padding <= 2, padding == 0 || text.utf8.count % 4 == 0 else { return nil }
        return Base64URL.decode(String(text.dropLast(padding)))
    }
}
