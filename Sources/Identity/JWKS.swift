public import Hashing

/// A JSON Web Key Set (RFC 7517 §5) as Apple (`https://appleid.apple.com/auth/keys`) and Google
/// (`https://www.googleapis.com/oauth2/v3/certs`) publish it: the public keys that sign their ID
/// tokens, each named by its `kid`. Parsing is pure — fetching and caching the set is the caller's.
///
/// Keys this verifier cannot use (another `kty` or curve, `use` other than `sig`, a malformed
/// member) are skipped, not fatal: a provider may publish keys for other purposes next to its
/// signing keys. A `kid` that appears twice keeps its first key.
public struct JWKS: Sendable {
    /// A usable verification key.
    public enum Key: Sendable {
        /// `kty: RSA` (`n`, `e`), for RS256.
        case rsa(RSA.PublicKey)
        /// `kty: EC`, `crv: P-256` (`x`, `y`), for ES256.
        case p256(P256.PublicKey)
    }

    /// One key with the algorithm its JWK restricts it to (`alg`), if it does.
    public struct Entry: Sendable {
        public var key: Key
        /// The JWK's `alg` member (RFC 7517 §4.4), when present.
        public var algorithm: String?
    }

    /// Largest key-set document accepted (Google's is ~1.5 KB, Apple's ~1.5 KB).
    public static let maxDocumentBytes = 64 * 1024
    /// Most keys kept from one document.
    public static let maxKeys = 32

    /// The usable keys by `kid`.
    public let keys: [String: Entry]

    /// Parses a key-set document. Throws `JWKS.Invalid` when it is not a JSON object with a `keys`
    /// array or is larger than `maxDocumentBytes`; individual unusable keys are skipped.
    public init(json: some Collection<UInt8>) throws(Invalid) {
        let bytes = Array(json)
        guard bytes.count <= Self.maxDocumentBytes, let object = JSONValue.object(bytes), case .array(let list)? = object["keys"]
        else { throw Invalid() }
        var keys: [String: Entry] = [:]
        for case .object(let member) in list.prefix(Self.maxKeys) {
            guard let kid = member["kid"]?.string, keys[kid] == nil, let entry = Self.entry(member) else { continue }
            keys[kid] = entry
        }
        self.keys = keys
    }

    /// A key set holding `keys` (tests, and a set assembled from configuration).
    public init(keys: [String: Entry]) { self.keys = keys }

    /// A key-set document that is not one.
    public struct Invalid: Error, Equatable, Sendable {}

    /// The key of one JWK member, or nil when it cannot verify signatures here.
    static func entry(_ member: [String: JSONValue]) -> Entry? {
        if let use = member["use"] { guard use.string == "sig" else { return nil } }
        let algorithm = member["alg"]?.string
        if member["alg"] != nil, algorithm == nil { return nil }
        switch member["kty"]?.string {
        case "RSA":
            guard let n = member["n"]?.string.flatMap(Base64URL.decode),
                let e = member["e"]?.string.flatMap(Base64URL.decode),
                let key = try? RSA.PublicKey(modulus: n, exponent: e)
            else { return nil }
            return Entry(key: .rsa(key), algorithm: algorithm)
        case "EC":
            guard member["crv"]?.string == "P-256",
                let x = member["x"]?.string.flatMap(Base64URL.decode), x.count == P256.scalarByteCount,
                let y = member["y"]?.string.flatMap(Base64URL.decode), y.count == P256.scalarByteCount,
                let key = try? P256.PublicKey(x963Representation: [0x04] + x + y)
            else { return nil }
            return Entry(key: .p256(key), algorithm: algorithm)
        default:
            return nil
        }
    }
}
