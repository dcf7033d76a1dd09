/// Why an ID token was refused (`IDTokenVerifier.verify`). Every case is a refusal of the token; the
/// caller answers them alike to the client (a token that does not sign anyone in) and logs the case.
public enum IDTokenError: Error, Equatable, Sendable {
    /// Not three base64url parts with JSON objects for header and claims, or longer than
    /// `IDTokenVerifier.Limits.maxTokenBytes`.
    case malformed
    /// The header's `alg` is not one the verifier accepts (RS256, ES256): `none`, HS256 and every
    /// other — or the header lists `crit` extensions (RFC 7515 §4.1.11), which are not understood.
    case unsupportedAlgorithm(String)
    /// The header names no `kid`, or one the key set does not hold. For an unknown `kid` the caller
    /// fetches the provider's key set again (once: the provider rotated its keys) and retries.
    case unknownKeyID(String?)
    /// The key `kid` names does not fit the header's `alg` (an EC key for RS256, a JWK whose own `alg`
    /// or `use` says otherwise).
    case keyAlgorithmMismatch
    /// The signature does not verify under the key.
    case badSignature
    /// `iss` is not the provider's issuer.
    case wrongIssuer
    /// `aud` holds none of the configured client ids (or, with several audiences, `azp` is not one).
    case wrongAudience
    /// `exp` passed (beyond the allowed clock skew).
    case expired
    /// `iat` lies in the future (beyond the allowed clock skew), or further back than the maximum age.
    case issuedAtOutOfRange
    /// The `nonce` claim is missing or is not the one the client sent.
    case nonceMismatch
    /// A required claim (`sub`, `exp`, `iat`) is missing or has the wrong type.
    case missingClaim(String)
}
