import Foundation
import Hashing
import Identity
import Testing

/// Tokens minted here with keys generated here (Hashing's RSA and P-256), checked by the verifier the
/// way Sign in with Apple and Google tokens will be: every refusal the issue lists, and the boundaries
/// of the clock skew.
@Suite("ID tokens — OpenID Connect Core §3.1.3.7 with RS256/ES256 against a JWKS")
struct IDTokenVerifierTests {
    static let rsa = try! RSA.PrivateKey(bits: 2048)
    static let rotated = try! RSA.PrivateKey(bits: 2048)
    static let ec = P256.PrivateKey()
    /// 2027-01-15T08:00:00Z, in milliseconds.
    static let now: Int64 = 1_800_000_000_000
    static let nowSeconds = now / 1000

    static func rsaJWK(_ key: RSA.PublicKey, kid: String, extra: String = #","use":"sig","alg":"RS256""#) -> String {
        #"{"kty":"RSA","kid":"\#(kid)","n":"\#(Base64URL.encode(key.modulus))","e":"\#(Base64URL.encode(key.exponent))"\#(extra)}"#
    }

    static func ecJWK(_ key: P256.PublicKey, kid: String) -> String {
        let point = key.x963Representation
        let (x, y) = (Base64URL.encode(point[1...32]), Base64URL.encode(point[33...64]))
        return #"{"kty":"EC","kid":"\#(kid)","crv":"P-256","x":"\#(x)","y":"\#(y)"}"#
    }

    static let keys = try! JWKS(json: Array(#"{"keys":[\#(rsaJWK(rsa.publicKey, kid: "r1")),\#(ecJWK(ec.publicKey, kid: "e1"))]}"#.utf8))

    /// `header.claims.signature` with `sign` over the signing input.
    static func mint(_ header: String, _ claims: String, sign: ([UInt8]) -> [UInt8]) -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        return input + "." + Base64URL.encode(sign(Array(input.utf8)))
    }

    static func claims(
        iss: String = "https://accounts.google.com", aud: String = #""client-1""#, exp: Int64 = nowSeconds + 600,
        iat: Int64 = nowSeconds - 10, nonce: String? = "n-123", extra: String = ""
    ) -> String {
        let nonceMember = nonce.map { #","nonce":"\#($0)""# } ?? ""
        return #"{"iss":"\#(iss)","aud":\#(aud),"sub":"1234567890","exp":\#(exp),"iat":\#(iat)\#(nonceMember),"#
            + #""email":"ana@example.com","email_verified":true\#(extra)}"#
    }

    static func rs256(_ claims: String, kid: String = "r1", key: RSA.PrivateKey = rsa) -> String {
        mint(#"{"alg":"RS256","kid":"\#(kid)","typ":"JWT"}"#, claims) { key.signatureSHA256(for: $0) }
    }

    static let google = IDTokenVerifier.google(clientIDs: ["client-1", "client-2"])

    func verify(_ token: String, _ verifier: IDTokenVerifier = google, keys: JWKS = keys, nonce: String = "n-123")
        -> Result<VerifiedIdentity, IDTokenError>
    {
        verifier.verify(token, keys: keys, nonce: nonce, nowMilliseconds: Self.now)
    }

    func refused(_ token: String, _ verifier: IDTokenVerifier = google, nonce: String = "n-123") -> IDTokenError? {
        if case .failure(let error) = verify(token, verifier, nonce: nonce) { return error }
        return nil
    }

    @Test("a valid RS256 token: the identity, its audience, a verified email")
    func validRS256() throws {
        let identity = try verify(Self.rs256(Self.claims())).get()
        #expect(identity.issuer == "https://accounts.google.com")
        #expect(identity.subject == "1234567890")
        #expect(identity.audience == "client-1")
        #expect(identity.email == "ana@example.com" && identity.emailVerified && !identity.isPrivateEmail)
        #expect(identity.expiresAt == Self.nowSeconds + 600)
    }

    @Test("a valid ES256 token")
    func validES256() throws {
        let token = Self.mint(#"{"alg":"ES256","kid":"e1"}"#, Self.claims()) { Self.ec.signature(for: $0) }
        #expect(try verify(token).get().subject == "1234567890")
    }

    @Test("Sign in with Apple: the nonce claim is SHA-256 hex of the raw nonce; email_verified as a string; private relay")
    func apple() throws {
        let raw = "raw-nonce-xyz"
        let hashed = Hex.encode(SHA256.hash(Array(raw.utf8)))
        let claims = Self.claims(
            iss: "https://appleid.apple.com", aud: #""com.example.app""#, nonce: hashed,
            extra: #","is_private_email":"true""#
        ).replacingOccurrences(of: #""email_verified":true"#, with: #""email_verified":"true""#)
        let apple = IDTokenVerifier.apple(clientIDs: ["com.example.app"])
        let identity = try verify(Self.rs256(claims), apple, nonce: raw).get()
        #expect(identity.emailVerified && identity.isPrivateEmail)
        // The hash itself as the nonce does not pass: the client must hold the raw nonce.
        #expect(refused(Self.rs256(claims), apple, nonce: hashed) == .nonceMismatch)
    }

    @Test("a bad signature: a flipped bit, another key under the same kid")
    func badSignature() {
        var token = Array(Self.rs256(Self.claims()).utf8)
        let last = token.count - 5
        token[last] = token[last] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(refused(String(decoding: token, as: UTF8.self)) == .badSignature)
        #expect(refused(Self.rs256(Self.claims(), key: Self.rotated)) == .badSignature)
        // Claims edited after signing.
        let parts = Self.rs256(Self.claims()).split(separator: ".").map(String.init)
        let forged = parts[0] + "." + Base64URL.encode(Array(Self.claims(aud: #""client-2""#).utf8)) + "." + parts[2]
        #expect(refused(forged) == .badSignature)
    }

    @Test("alg none, HS256 keyed with the provider's public key, and crit headers are refused before any key is used")
    func algorithmConfusion() {
        let none = Self.mint(#"{"alg":"none","kid":"r1"}"#, Self.claims()) { _ in [] }
        #expect(refused(none) == .unsupportedAlgorithm("none"))
        let publicPEM = Array(Self.rsa.publicKey.pemRepresentation.utf8)
        let hs256 = Self.mint(#"{"alg":"HS256","kid":"r1"}"#, Self.claims()) {
            HMACSHA256.authenticationCode(key: publicPEM, message: $0)
        }
        #expect(refused(hs256) == .unsupportedAlgorithm("HS256"))
        let modulusKeyed = Self.mint(#"{"alg":"HS256","kid":"r1"}"#, Self.claims()) {
            HMACSHA256.authenticationCode(key: Self.rsa.publicKey.modulus, message: $0)
        }
        #expect(refused(modulusKeyed) == .unsupportedAlgorithm("HS256"))
        let crit = Self.mint(#"{"alg":"RS256","kid":"r1","crit":["exp"],"exp":1}"#, Self.claims()) {
            Self.rsa.signatureSHA256(for: $0)
        }
        #expect(refused(crit) == .unsupportedAlgorithm("RS256"))
    }

    @Test("a key that does not fit alg: ES256 naming an RSA key, RS256 naming an EC key, a JWK restricted to another alg")
    func keyMismatch() {
        let es = Self.mint(#"{"alg":"ES256","kid":"r1"}"#, Self.claims()) { Self.ec.signature(for: $0) }
        #expect(refused(es) == .keyAlgorithmMismatch)
        #expect(refused(Self.rs256(Self.claims(), kid: "e1")) == .keyAlgorithmMismatch)
        let restricted = try! JWKS(
            json: Array(#"{"keys":[\#(Self.rsaJWK(Self.rsa.publicKey, kid: "r1", extra: #","alg":"RS512""#))]}"#.utf8))
        #expect(verify(Self.rs256(Self.claims()), keys: restricted) == .failure(.keyAlgorithmMismatch))
    }

    @Test("an unknown kid is named so the caller refreshes the key set once; after a rotation the new key verifies")
    func unknownKeyRotation() throws {
        let token = Self.rs256(Self.claims(), kid: "r2", key: Self.rotated)
        #expect(refused(token) == .unknownKeyID("r2"))
        let refreshed = try JWKS(
            json: Array(#"{"keys":[\#(Self.rsaJWK(Self.rotated.publicKey, kid: "r2")),\#(Self.ecJWK(Self.ec.publicKey, kid: "e1"))]}"#.utf8)
        )
        #expect(try verify(token, keys: refreshed).get().subject == "1234567890")
        // The old key is gone from the rotated set.
        #expect(verify(Self.rs256(Self.claims()), keys: refreshed) == .failure(.unknownKeyID("r1")))
        let noKid = Self.mint(#"{"alg":"RS256"}"#, Self.claims()) { Self.rsa.signatureSHA256(for: $0) }
        #expect(refused(noKid) == .unknownKeyID(nil))
    }

    @Test("wrong iss, wrong aud; several audiences need azp to be ours")
    func issuerAndAudience() throws {
        #expect(refused(Self.rs256(Self.claims(iss: "https://evil.example"))) == .wrongIssuer)
        #expect(refused(Self.rs256(Self.claims(iss: "https://appleid.apple.com"))) == .wrongIssuer)
        #expect(refused(Self.rs256(Self.claims(aud: #""someone-else""#))) == .wrongAudience)
        #expect(refused(Self.rs256(Self.claims(aud: #"["someone-else"]"#))) == .wrongAudience)
        #expect(refused(Self.rs256(Self.claims(aud: "42"))) == .wrongAudience)
        #expect(refused(Self.rs256(Self.claims(aud: #"["client-1","other"]"#))) == .wrongAudience)
        #expect(refused(Self.rs256(Self.claims(aud: #"["client-1","other"]"#, extra: #","azp":"other""#))) == .wrongAudience)
        let both = try verify(Self.rs256(Self.claims(aud: #"["other","client-2"]"#, extra: #","azp":"client-2""#))).get()
        #expect(both.audience == "client-2")
        // Google's issuer without the scheme is Google's too.
        #expect(try verify(Self.rs256(Self.claims(iss: "accounts.google.com"))).get().issuer == "accounts.google.com")
    }

    @Test("exp and iat at exactly the skew and one second past it")
    func clock() throws {
        let skew = IDTokenVerifier.defaultClockSkewSeconds
        #expect(try verify(Self.rs256(Self.claims(exp: Self.nowSeconds - skew + 1))).get().subject == "1234567890")
        #expect(refused(Self.rs256(Self.claims(exp: Self.nowSeconds - skew))) == .expired)
        #expect(try verify(Self.rs256(Self.claims(iat: Self.nowSeconds + skew))).get().subject == "1234567890")
        #expect(refused(Self.rs256(Self.claims(iat: Self.nowSeconds + skew + 1))) == .issuedAtOutOfRange)
        var young = Self.google
        young.maxAgeSeconds = 600
        #expect(try verify(Self.rs256(Self.claims(iat: Self.nowSeconds - 600 - skew)), young).get().subject == "1234567890")
        #expect(refused(Self.rs256(Self.claims(iat: Self.nowSeconds - 600 - skew - 1)), young) == .issuedAtOutOfRange)
        let noExp = Self.claims().replacingOccurrences(of: #""exp":\#(Self.nowSeconds + 600),"#, with: "")
        #expect(refused(Self.rs256(noExp)) == .missingClaim("exp"))
        let stringExp = Self.claims().replacingOccurrences(
            of: #""exp":\#(Self.nowSeconds + 600)"#, with: #""exp":"\#(Self.nowSeconds + 600)""#)
        #expect(refused(Self.rs256(stringExp)) == .missingClaim("exp"))
        let boolIat = Self.claims().replacingOccurrences(of: #""iat":\#(Self.nowSeconds - 10)"#, with: #""iat":true"#)
        #expect(refused(Self.rs256(boolIat)) == .missingClaim("iat"))
    }

    @Test("the nonce: another one, none in the token, none expected")
    func nonce() {
        #expect(refused(Self.rs256(Self.claims()), nonce: "n-124") == .nonceMismatch)
        #expect(refused(Self.rs256(Self.claims(nonce: nil))) == .nonceMismatch)
        #expect(refused(Self.rs256(Self.claims(nonce: "")), nonce: "") == .nonceMismatch)
    }

    @Test("malformed tokens: parts, base64url, JSON, size")
    func malformed() {
        let valid = Self.rs256(Self.claims())
        let parts = valid.split(separator: ".").map(String.init)
        for token in [
            "", "a.b", parts[0] + "." + parts[1], valid + ".x", "!!." + parts[1] + "." + parts[2],
            Base64URL.encode(Array("[1]".utf8)) + "." + parts[1] + "." + parts[2],
            Base64URL.encode(Array(#"{"kid":"r1"}"#.utf8)) + "." + parts[1] + "." + parts[2],
        ] {
            #expect(refused(token) == .malformed, "\(token)")
        }
        var limited = Self.google
        limited.limits.maxTokenBytes = valid.utf8.count
        #expect(refused(valid, limited) == nil)
        limited.limits.maxTokenBytes = valid.utf8.count - 1
        #expect(refused(valid, limited) == .malformed)
        // A signed token whose claims are not a JSON object.
        let notObject = Self.mint(#"{"alg":"RS256","kid":"r1"}"#, "[]") { Self.rsa.signatureSHA256(for: $0) }
        #expect(refused(notObject) == .malformed)
    }
}

@Suite("JWKS — usable keys kept, the rest skipped")
struct JWKSTests {
    @Test("unusable keys are skipped: oct, encryption keys, P-384, a 1024-bit modulus, bad base64; duplicates keep the first")
    func skipping() throws {
        let good = IDTokenVerifierTests.rsaJWK(IDTokenVerifierTests.rsa.publicKey, kid: "good")
        let document = """
            {"keys":[
              {"kty":"oct","kid":"o","k":"c2VjcmV0"},
              {"kty":"RSA","kid":"enc","use":"enc","n":"\(Base64URL.encode(IDTokenVerifierTests.rsa.publicKey.modulus))","e":"AQAB"},
              {"kty":"EC","kid":"p384","crv":"P-384","x":"AA","y":"AA"},
              {"kty":"RSA","kid":"small","n":"\(Base64URL.encode([0xC0] + [UInt8](repeating: 1, count: 127)))","e":"AQAB"},
              {"kty":"RSA","kid":"bad","n":"***","e":"AQAB"},
              \(good),
              \(IDTokenVerifierTests.rsaJWK(IDTokenVerifierTests.rotated.publicKey, kid: "good"))
            ]}
            """
        let set = try JWKS(json: Array(document.utf8))
        #expect(set.keys.keys.sorted() == ["good"])
        let token = IDTokenVerifierTests.rs256(IDTokenVerifierTests.claims(), kid: "good")
        #expect(
            (try? IDTokenVerifierTests.google.verify(token, keys: set, nonce: "n-123", nowMilliseconds: IDTokenVerifierTests.now).get())
                != nil)
    }

    @Test("a document that is not a key set throws; one past the size bound too")
    func invalid() {
        for text in ["", "[]", #"{"keys":{}}"#, "{", #"{"other":[]}"#] {
            #expect(throws: JWKS.Invalid.self) { try JWKS(json: Array(text.utf8)) }
        }
        let padding = String(repeating: " ", count: JWKS.maxDocumentBytes)
        #expect(throws: JWKS.Invalid.self) { try JWKS(json: Array((#"{"keys":[]}"# + padding).utf8)) }
        #expect((try? JWKS(json: Array(#"{"keys":[]}"#.utf8)))?.keys.isEmpty == true)
    }
}

@Suite("RSA public keys from a JWK's n and e")
struct RSAComponentTests {
    @Test("n and e round-trip and verify the private key's signatures")
    func roundTrip() throws {
        let key = IDTokenVerifierTests.rsa
        #expect(key.publicKey.exponent == [0x01, 0x00, 0x01])
        #expect(key.publicKey.modulus.count == 256)
        let imported = try RSA.PublicKey(modulus: [0, 0] + key.publicKey.modulus, exponent: key.publicKey.exponent)
        let message = Array("signed".utf8)
        #expect(imported.isValidSignatureSHA256(key.signatureSHA256(for: message), for: message))
        #expect(imported.pemRepresentation == key.publicKey.pemRepresentation)
    }

    @Test("refused: a modulus outside the allowed sizes, an even exponent, exponent 1, an oversized exponent")
    func refusals() {
        let n = IDTokenVerifierTests.rsa.publicKey.modulus
        #expect(throws: CryptoError.invalidRSAKey) { try RSA.PublicKey(modulus: Array(n.prefix(128)), exponent: [1, 0, 1]) }
        #expect(throws: CryptoError.invalidRSAKey) { try RSA.PublicKey(modulus: [], exponent: [1, 0, 1]) }
        #expect(throws: CryptoError.invalidRSAKey) { try RSA.PublicKey(modulus: n, exponent: [1, 0, 0]) }
        #expect(throws: CryptoError.invalidRSAKey) { try RSA.PublicKey(modulus: n, exponent: [1]) }
        #expect(throws: CryptoError.invalidRSAKey) { try RSA.PublicKey(modulus: n, exponent: [UInt8](repeating: 1, count: 9)) }
        #expect(throws: CryptoError.invalidRSAKey) { try RSA.PublicKey(modulus: n, exponent: []) }
    }
}
