import Foundation
import Hashing
import Push
import Testing

/// The JSON object a base64url JWT part decodes to.
func jsonObject(_ part: Substring) throws -> [String: Any] {
    let bytes = try #require(Base64URL.decode(String(part)))
    return try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
}

@Suite("RFC 7519 JWT, ES256 compact serialisation")
struct JWTTests {
    @Test func shapeHeaderClaimsAndSignature() throws {
        let key = P256.PrivateKey()
        let token = JWT.signES256(
            claims: [JWT.Claim("iss", .string("TEAM123456")), JWT.Claim("iat", .integer(1_764_000_000))], keyID: "KEY1234567", key: key)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        for part in parts { #expect(!part.contains("=") && !part.contains("+") && !part.contains("/")) }
        #expect(
            Base64URL.decode(String(parts[0])).map { String(decoding: $0, as: UTF8.self) }
                == #"{"typ":"JWT","alg":"ES256","kid":"KEY1234567"}"#)
        #expect(Base64URL.decode(String(parts[1])).map { String(decoding: $0, as: UTF8.self) } == #"{"iss":"TEAM123456","iat":1764000000}"#)
        #expect(Base64URL.decode(String(parts[2]))?.count == 64)
        #expect(key.publicKey.isValidSignature(Base64URL.decode(String(parts[2]))!, for: "\(parts[0]).\(parts[1])".utf8))
        #expect(JWT.hasValidES256Signature(token, publicKey: key.publicKey))
        #expect(!JWT.hasValidES256Signature(token, publicKey: P256.PrivateKey().publicKey))
        let forged = "\(parts[0]).\(Base64URL.encode(#"{"iss":"TEAM123457","iat":1764000000}"#.utf8)).\(parts[2])"
        #expect(!JWT.hasValidES256Signature(forged, publicKey: key.publicKey))
        #expect(!JWT.hasValidES256Signature(token + ".", publicKey: key.publicKey))
        #expect(!JWT.hasValidES256Signature(String(token.dropLast()), publicKey: key.publicKey))
    }

    @Test func headerWithoutKeyIDAndEscapedStrings() throws {
        let key = P256.PrivateKey()
        let awkward = "a\"b\\c\nd\u{01}é✓"
        let token = JWT.signES256(claims: [JWT.Claim("sub", .string(awkward)), JWT.Claim("n\"", .integer(-5))], key: key)
        let parts = token.split(separator: ".")
        #expect(try jsonObject(parts[0]) as NSDictionary == ["typ": "JWT", "alg": "ES256"] as NSDictionary)
        let claims = try jsonObject(parts[1])
        #expect(claims["sub"] as? String == awkward)
        #expect(claims["n\""] as? Int == -5)
        #expect(JWT.hasValidES256Signature(token, publicKey: key.publicKey))
    }
}
