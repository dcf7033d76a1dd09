public import Hashing

/// Voluntary Application Server Identification (RFC 8292): the `Authorization` header value an
/// application server sends with each push message,
///
///     vapid t=<ES256 JWT {"aud": origin, "exp": now + validity, "sub": contact}>, k=<base64url public key>
///
/// Sans-I/O: the caller passes the time (`now`, Unix seconds), so this module reads no clock.
public enum VAPID {
    /// RFC 8292 §2: `exp` MUST NOT be more than 24 hours after the request.
    public static let maxValiditySeconds: Int64 = 86_400
    /// Default token lifetime: half the maximum, so clock skew of hours at the push service is harmless.
    public static let defaultValiditySeconds: Int64 = 43_200
    /// Longest contact URI accepted, in bytes.
    public static let maxSubjectByteCount = 1_024

    /// The header value for a message to `endpoint`, signed with the server's VAPID key.
    ///
    /// - `subject`: a contact URI for the operator (RFC 8292 §2.1): `mailto:` with an address, or an
    ///   `https:` URL; printable ASCII, at most `maxSubjectByteCount` bytes, else `.invalidSubject`.
    /// - `validitySeconds`: 1…86,400, else `.invalidValidity`.
    public static func authorization(
        for endpoint: PushEndpoint, subject: String, key: P256.PrivateKey, now: Int64,
        validitySeconds: Int64 = defaultValiditySeconds
    ) throws(VAPIDError) -> String {
        guard isValidSubject(subject) else { throw .invalidSubject }
        guard (1...maxValiditySeconds).contains(validitySeconds) else { throw .invalidValidity }
        let (expiry, overflow) = now.addingReportingOverflow(validitySeconds)
        guard !overflow else { throw .invalidValidity }
        let token = JWT.signES256(
            claims: [
                JWT.Claim("aud", .string(endpoint.origin)), JWT.Claim("exp", .integer(expiry)), JWT.Claim("sub", .string(subject)),
            ],
            key: key)
        return "vapid t=\(token), k=\(Base64URL.encode(key.publicKey.x963Representation))"
    }

    /// `mailto:` + something with an `@`, or `https://` + a host, in printable ASCII: what
    /// `authorization` accepts as `subject` (operators' configuration is checked with it at start-up).
    public static func isValidSubject(_ subject: String) -> Bool {
        let bytes = Array(subject.utf8)
        guard bytes.count <= maxSubjectByteCount, bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else { return false }
        if subject.hasPrefix("mailto:") {
            let address = subject.dropFirst("mailto:".count)
            guard let at = address.firstIndex(of: "@") else { return false }
            return at != address.startIndex && address.index(after: at) != address.endIndex
        }
        return (try? PushEndpoint(subject)) != nil
    }
}

/// Why a VAPID header could not be made: both are configuration errors of the operator.
public enum VAPIDError: Error, Sendable, Equatable {
    /// The contact is not a `mailto:` address or an `https:` URL.
    case invalidSubject
    /// The validity is outside 1…86,400 seconds (or `now` + validity overflows).
    case invalidValidity
}
