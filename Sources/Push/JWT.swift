public import Hashing

/// JSON Web Tokens (RFC 7519) signed with ES256 (RFC 7518 §3.4: ECDSA P-256 SHA-256, raw r ‖ s) or RS256
/// (RFC 7518 §3.3, for Google's OAuth2 JWT-bearer grant), in
/// compact serialisation (RFC 7515 §7.1): `base64url(header) . base64url(claims) . base64url(signature)`,
/// base64url without padding. Used by VAPID (RFC 8292), APNs token authentication and FCM's OAuth2 grant.
///
/// The JSON is written here, members in the order given, so a token's bytes are reproducible.
public enum JWT {
    /// A claim's value: the two JSON types VAPID and APNs need.
    public enum ClaimValue: Sendable, Equatable {
        /// A JSON string.
        case string(String)
        /// A JSON number without fraction (e.g. NumericDate, RFC 7519 §2).
        case integer(Int64)
    }

    /// One claim: its name and value.
    public struct Claim: Sendable, Equatable {
        /// The member name, e.g. `aud`, `exp`, `sub`, `iss`, `iat`.
        public var name: String
        /// The member value.
        public var value: ClaimValue

        /// Makes a claim.
        public init(_ name: String, _ value: ClaimValue) {
            self.name = name
            self.value = value
        }
    }

    /// The signed token: header `{"typ":"JWT","alg":"ES256"}` plus `"kid"` when `keyID` is given
    /// (APNs wants its key's id), the claims as one JSON object in the order given.
    public static func signES256(claims: [Claim], keyID: String? = nil, key: P256.PrivateKey) -> String {
        compact(algorithm: "ES256", claims: claims, keyID: keyID) { key.signature(for: $0.utf8) }
    }

    /// The signed token with RS256 (RFC 7518 §3.3: RSASSA-PKCS1-v1_5 SHA-256): header
    /// `{"typ":"JWT","alg":"RS256"}` plus `"kid"` when given — a Google OAuth2 JWT-bearer assertion.
    public static func signRS256(claims: [Claim], keyID: String? = nil, key: RSA.PrivateKey) -> String {
        compact(algorithm: "RS256", claims: claims, keyID: keyID) { key.signatureSHA256(for: $0.utf8) }
    }

    /// True when `token` has three base64url parts and the third is a valid ES256 signature of the
    /// first two under `publicKey`. Checks nothing else: the header's `alg` and the claims are the
    /// caller's to read.
    public static func hasValidES256Signature(_ token: String, publicKey: P256.PublicKey) -> Bool {
        guard let (signingInput, signature) = split(token) else { return false }
        return publicKey.isValidSignature(signature, for: signingInput.utf8)
    }

    /// True when `token` has three base64url parts and the third is a valid RS256 signature of the
    /// first two under `publicKey` (the signature only, like `hasValidES256Signature`).
    public static func hasValidRS256Signature(_ token: String, publicKey: RSA.PublicKey) -> Bool {
        guard let (signingInput, signature) = split(token) else { return false }
        return publicKey.isValidSignatureSHA256(signature, for: signingInput.utf8)
    }

    /// `base64url(header) . base64url(claims) . base64url(sign(signing input))`.
    private static func compact(algorithm: String, claims: [Claim], keyID: String?, sign: (String) -> [UInt8]) -> String {
        var header: [Claim] = [Claim("typ", .string("JWT")), Claim("alg", .string(algorithm))]
        if let keyID { header.append(Claim("kid", .string(keyID))) }
        let signingInput = Base64URL.encode(jsonObject(header)) + "." + Base64URL.encode(jsonObject(claims))
        return signingInput + "." + Base64URL.encode(sign(signingInput))
    }

    /// The signing input and the decoded signature of a three-part token whose parts all decode.
    private static func split(_ token: String) -> (String, [UInt8])? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, Base64URL.decode(String(parts[0])) != nil, Base64URL.decode(String(parts[1])) != nil,
            let signature = Base64URL.decode(String(parts[2]))
        else { return nil }
        return ("\(parts[0]).\(parts[1])", signature)
    }

    /// UTF-8 JSON text of an object with `members` in order (RFC 8259).
    static func jsonObject(_ members: [Claim]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (index, member) in members.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            appendString(member.name, to: &out)
            out.append(UInt8(ascii: ":"))
            switch member.value {
            case .string(let text): appendString(text, to: &out)
            case .integer(let number): out.append(contentsOf: String(number).utf8)
            }
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// A JSON string (RFC 8259 §7): `"` and `\` escaped, control characters as `\u00XX`, the rest as UTF-8.
    private static func appendString(_ text: String, to out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out.append(UInt8(ascii: "\\"))
                out.append(byte)
            case 0..<0x20:
                out.append(contentsOf: "\\u00".utf8)
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            default:
                out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
