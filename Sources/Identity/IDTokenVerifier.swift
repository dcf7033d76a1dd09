import Hashing

/// Verifies an OpenID Connect ID token (OpenID Connect Core 1.0 §3.1.3.7) as Sign in with Apple and
/// Google issue them: a JWS in compact serialisation (RFC 7515 §7.1) signed with RS256 or ES256 under
/// a key of the provider's published key set (`JWKS`). Sans-I/O: the token, the key set, the nonce
/// and `now` in, a `VerifiedIdentity` or an `IDTokenError` out — fetching the key set (and fetching
/// it again once on `.unknownKeyID`), remembering used nonces and linking accounts are the caller's.
///
/// Order of the checks: size and shape; `alg` against the allowed set *before* any key is touched
/// (so `none`, and HS256 with the provider's public key as the HMAC secret, never reach a
/// verifier); the `kid`'s key and its fit to `alg`; the signature; then the claims — `iss`, `aud`
/// (and `azp` when several audiences), `exp`/`iat` within `clockSkew`, the nonce, `sub`.
public struct IDTokenVerifier: Sendable {
    /// Signature algorithms accepted (RFC 7518 §3.1 names). Apple signs RS256; Google RS256.
    public static let supportedAlgorithms: Set<String> = ["RS256", "ES256"]

    /// The size bounds, checked before anything is decoded.
    public struct Limits: Sendable {
        /// Longest token accepted (Apple's and Google's are ~1 KB; a 4096-bit RSA signature alone is
        /// 683 characters of base64url).
        public var maxTokenBytes = 16 * 1024
        public init() {}
    }

    /// How the `nonce` claim relates to the nonce the client sends with the token.
    public enum NonceRule: Sendable {
        /// The claim is the nonce itself (Google).
        case equal
        /// The claim is lowercase hex SHA-256 of the nonce (Sign in with Apple: the app passes the
        /// hash in the request and keeps the raw nonce for the server).
        case sha256Hex
    }

    /// Issuers accepted in `iss` (Google uses both spellings).
    public var issuers: Set<String>
    /// The configured client ids: `aud` must hold one of them.
    public var clientIDs: Set<String>
    /// How the nonce appears in the token.
    public var nonceRule: NonceRule
    /// Clock difference tolerated between the provider and this server, both ways, for `exp` and `iat`.
    public var clockSkewSeconds: Int64
    /// The oldest `iat` accepted, in seconds before now (nil: only `exp` bounds the age).
    public var maxAgeSeconds: Int64?
    public var limits: Limits

    /// The default tolerated clock skew: one minute (providers and servers run NTP; more would widen
    /// the window in which an expired token still signs in).
    public static let defaultClockSkewSeconds: Int64 = 60

    public init(
        issuers: Set<String>, clientIDs: Set<String>, nonceRule: NonceRule, clockSkewSeconds: Int64 = defaultClockSkewSeconds,
        maxAgeSeconds: Int64? = nil, limits: Limits = Limits()
    ) {
        self.issuers = issuers
        self.clientIDs = clientIDs
        self.nonceRule = nonceRule
        self.clockSkewSeconds = clockSkewSeconds
        self.maxAgeSeconds = maxAgeSeconds
        self.limits = limits
    }

    /// Sign in with Apple: issuer `https://appleid.apple.com`, nonce as SHA-256 hex; `clientIDs` are the
    /// app's bundle id and the Services ID of the web flow.
    public static func apple(clientIDs: Set<String>) -> IDTokenVerifier {
        IDTokenVerifier(issuers: ["https://appleid.apple.com"], clientIDs: clientIDs, nonceRule: .sha256Hex)
    }

    /// Google: issuer `https://accounts.google.com` (or without the scheme), nonce as sent; `clientIDs`
    /// are the OAuth client ids of the apps.
    public static func google(clientIDs: Set<String>) -> IDTokenVerifier {
        IDTokenVerifier(
            issuers: ["https://accounts.google.com", "accounts.google.com"], clientIDs: clientIDs, nonceRule: .equal)
    }

    /// Checks `token` against `keys` at `nowMilliseconds`, expecting `nonce` (what the client sent).
    public func verify(
        _ token: String, keys: JWKS, nonce: String, nowMilliseconds: Int64
    ) -> Result<VerifiedIdentity, IDTokenError> {
        Result { () throws(IDTokenError) in try check(token, keys: keys, nonce: nonce, now: nowMilliseconds / 1000) }
    }

    /// Checks `token` against `keys` at `nowMilliseconds` without a nonce: for ID tokens no client asked
    /// for, which carry none — Google's tokens on Pub/Sub push requests (docs/subscriptions.md#real-time-developer-notifications).
    /// Every other check is `verify`'s. Sign-in never comes here: a sign-in token must carry the nonce
    /// the client sent (`verify`, which refuses an empty nonce), or it could be replayed.
    public func verifyWithoutNonce(_ token: String, keys: JWKS, nowMilliseconds: Int64) -> Result<VerifiedIdentity, IDTokenError> {
        Result { () throws(IDTokenError) in try check(token, keys: keys, nonce: nil, now: nowMilliseconds / 1000) }
    }

    /// `nonce` nil: no nonce check (`verifyWithoutNonce` only).
    private func check(_ token: String, keys: JWKS, nonce: String?, now: Int64) throws(IDTokenError) -> VerifiedIdentity {
        guard token.utf8.count <= limits.maxTokenBytes else { throw .malformed }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(String(parts[0])),
            let header = JSONValue.object(headerBytes), let signature = Base64URL.decode(String(parts[2]))
        else { throw .malformed }

        guard let algorithm = header["alg"]?.string else { throw .malformed }
        guard Self.supportedAlgorithms.contains(algorithm), header["crit"] == nil else {
            throw .unsupportedAlgorithm(algorithm)
        }
        let kid = header["kid"]?.string
        guard let kid, let entry = keys.keys[kid] else { throw .unknownKeyID(kid) }
        if let restricted = entry.algorithm, restricted != algorithm { throw .keyAlgorithmMismatch }
        let signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        let valid: Bool
        switch (algorithm, entry.key) {
        case ("RS256", .rsa(let key)): valid = key.isValidSignatureSHA256(signature, for: signingInput)
        case ("ES256", .p256(let key)): valid = key.isValidSignature(signature, for: signingInput)
        default: throw .keyAlgorithmMismatch
        }
        guard valid else { throw .badSignature }

        guard let claimBytes = Base64URL.decode(String(parts[1])), let claims = JSONValue.object(claimBytes) else {
            throw .malformed
        }
        guard let issuer = claims["iss"]?.string, issuers.contains(issuer) else { throw .wrongIssuer }
        let audiences: [String]
        switch claims["aud"] {
        case .string(let one)?: audiences = [one]
        case .array(let many)?: audiences = many.compactMap(\.string)
        default: throw .wrongAudience
        }
        guard let audience = audiences.first(where: clientIDs.contains) else { throw .wrongAudience }
        // OpenID Connect Core §3.1.3.7 (4, 5): with several audiences the authorized party must be ours.
        if audiences.count > 1 {
            guard let party = claims["azp"]?.string, clientIDs.contains(party) else { throw .wrongAudience }
        }
        guard let expires = Self.seconds(claims["exp"]) else { throw .missingClaim("exp") }
        guard let issued = Self.seconds(claims["iat"]) else { throw .missingClaim("iat") }
        guard now < expires + clockSkewSeconds else { throw .expired }
        guard issued <= now + clockSkewSeconds else { throw .issuedAtOutOfRange }
        if let maxAgeSeconds, now - issued > maxAgeSeconds + clockSkewSeconds { throw .issuedAtOutOfRange }

        if let nonce {
            guard let claimed = claims["nonce"]?.string else { throw .nonceMismatch }
            let expected: String
            switch nonceRule {
            case .equal: expected = nonce
            case .sha256Hex: expected = Hex.encode(SHA256.hash(nonce.utf8))
            }
            guard !nonce.isEmpty, ConstantTime.equals(Array(claimed.utf8), Array(expected.utf8)) else { throw .nonceMismatch }
        }

        guard let subject = claims["sub"]?.string, !subject.isEmpty else { throw .missingClaim("sub") }
        let email = claims["email"]?.string
        return VerifiedIdentity(
            issuer: issuer, subject: subject, audience: audience, email: email,
            emailVerified: email != nil && Self.flag(claims["email_verified"]),
            isPrivateEmail: Self.flag(claims["is_private_email"]), issuedAt: issued, expiresAt: expires,
            name: claims["name"]?.string)
    }

    /// A NumericDate (RFC 7519 §2): a JSON number of seconds; a fraction is cut off.
    static func seconds(_ value: JSONValue?) -> Int64? {
        guard case .number(let double)? = value, double.isFinite, abs(double) < 1e15 else { return nil }
        return Int64(double.rounded(.down))
    }

    /// A boolean claim: JSON `true`, or the string `"true"` (Apple sends `email_verified` as either).
    static func flag(_ value: JSONValue?) -> Bool {
        switch value {
        case .bool(let flag)?: flag
        case .string(let text)?: text == "true"
        default: false
        }
    }
}

/// Who a verified ID token says signed in.
public struct VerifiedIdentity: Sendable, Equatable {
    /// `iss`: the provider.
    public var issuer: String
    /// `sub`: the provider's stable id of the user — with `issuer`, the identity's key.
    public var subject: String
    /// The configured client id the token was issued to.
    public var audience: String
    /// `email`, as the provider states it (Apple: possibly a private relay address).
    public var email: String?
    /// Whether the provider vouches for `email` (`email_verified`); false without an email.
    public var emailVerified: Bool
    /// Apple's `is_private_email`: `email` is a private relay address.
    public var isPrivateEmail: Bool
    /// `iat` and `exp`, seconds since the epoch.
    public var issuedAt: Int64
    public var expiresAt: Int64
    /// `name` (Google, with the `profile` scope; Apple never puts the name in the token), as given.
    public var name: String? = nil
}

extension IDTokenVerifier {
    /// An integral JSON number (App Store dates in milliseconds, ids): nil for anything else.
    static func milliseconds(_ value: JSONValue?) -> Int64? {
        guard case .number(let double)? = value, double.isFinite, abs(double) < 9e15, double == double.rounded(.down) else { return nil }
        return Int64(double)
    }
}
