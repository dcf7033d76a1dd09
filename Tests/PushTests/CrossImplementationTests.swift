import Foundation
import Hashing
import Push
import TestSupport
import Testing

@Suite("Cross-checks with Python's cryptography")
struct CrossImplementationTests {
    /// Another implementation checks our tokens: Python's `cryptography` (python3-cryptography, a CI
    /// package) verifies the ES256 signature with the base64url public key and prints the claims.
    @Test func pythonCryptographyVerifiesOurToken() async throws {
        let key = P256.PrivateKey()
        let publicKey = Base64URL.encode(key.publicKey.x963Representation)
        let token = JWT.signES256(
            claims: [JWT.Claim("aud", .string("https://push.example.net")), JWT.Claim("exp", .integer(42))], key: key)
        let verified = try await PythonCryptography.run(Self.verifyScript, token, publicKey)
        #expect(verified.status == 0, "\(verified.output)")
        #expect(verified.output == #"{"aud": "https://push.example.net", "exp": 42}"# + "\n")
        let parts = token.split(separator: ".")
        let forged = "\(parts[0]).\(Base64URL.encode(#"{"aud":"https://push.example.net","exp":43}"#.utf8)).\(parts[2])"
        #expect(try await PythonCryptography.run(Self.verifyScript, forged, publicKey).status != 0)
    }

    /// Python's `cryptography` verifies our RS256 token (the FCM OAuth2 assertion's signature) with
    /// the PEM public key, and refuses it once a claim changed.
    @Test func pythonCryptographyVerifiesOurRS256Token() async throws {
        let key = try RSA.PrivateKey()
        let claims = [JWT.Claim("iss", .string("sender@example.iam.gserviceaccount.com")), JWT.Claim("iat", .integer(42))]
        let token = JWT.signRS256(claims: claims, key: key)
        #expect(JWT.hasValidRS256Signature(token, publicKey: key.publicKey))
        let verified = try await PythonCryptography.run(Self.verifyRS256Script, token, key.publicKey.pemRepresentation)
        #expect(verified.status == 0, "\(verified.output)")
        #expect(verified.output == #"{"iss": "sender@example.iam.gserviceaccount.com", "iat": 42}"# + "\n")
        let parts = token.split(separator: ".")
        let forged = "\(parts[0]).\(Base64URL.encode(#"{"iss":"x","iat":42}"#.utf8)).\(parts[2])"
        #expect(!JWT.hasValidRS256Signature(forged, publicKey: key.publicKey))
        #expect(try await PythonCryptography.run(Self.verifyRS256Script, forged, key.publicKey.pemRepresentation).status != 0)
    }

    /// Python's `cryptography` decrypts our RFC 8291 message with its own HKDF and AES-GCM.
    @Test func pythonCryptographyDecryptsOurWebPushMessage() async throws {
        let userAgent = P256.PrivateKey()
        let auth = SecureRandom.bytes(16)
        let plaintext = "Wake up ✓ — alarm_fired"
        let message = try WebPushEncryption.encrypt(Array(plaintext.utf8), userAgentPublicKey: userAgent.publicKey, authSecret: auth)
        let decrypted = try await PythonCryptography.run(
            Self.decryptScript, Base64URL.encode(message), Base64URL.encode(userAgent.rawRepresentation), Base64URL.encode(auth))
        #expect(decrypted.status == 0, "\(decrypted.output)")
        #expect(decrypted.output == plaintext + "\n")
    }

    static let verifyScript = """
        import base64, json, sys
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, utils
        def b64(text): return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        header, claims, signature = sys.argv[1].split(".")
        key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64(sys.argv[2]))
        raw = b64(signature)
        der = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        key.verify(der, (header + "." + claims).encode(), ec.ECDSA(hashes.SHA256()))
        assert json.loads(b64(header)) == {"typ": "JWT", "alg": "ES256"}
        print(json.dumps(json.loads(b64(claims))))
        """

    static let verifyRS256Script = """
        import base64, json, sys
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import padding
        def b64(text): return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        header, claims, signature = sys.argv[1].split(".")
        key = serialization.load_pem_public_key(sys.argv[2].encode())
        key.verify(b64(signature), (header + "." + claims).encode(), padding.PKCS1v15(), hashes.SHA256())
        assert json.loads(b64(header)) == {"typ": "JWT", "alg": "RS256"}
        print(json.dumps(json.loads(b64(claims))))
        """

    static let decryptScript = """
        import base64, sys
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF
        def b64(text): return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        def hkdf(salt, ikm, info, length): return HKDF(hashes.SHA256(), length, salt, info).derive(ikm)
        body, auth = b64(sys.argv[1]), b64(sys.argv[3])
        ua = ec.derive_private_key(int.from_bytes(b64(sys.argv[2]), "big"), ec.SECP256R1())
        ua_public = ua.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        salt, rs, idlen = body[:16], int.from_bytes(body[16:20], "big"), body[20]
        assert rs == 4096 and idlen == 65
        as_public = body[21:86]
        shared = ua.exchange(ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), as_public))
        ikm = hkdf(auth, shared, b"WebPush: info\\0" + ua_public + as_public, 32)
        key = hkdf(salt, ikm, b"Content-Encoding: aes128gcm\\0", 16)
        nonce = hkdf(salt, ikm, b"Content-Encoding: nonce\\0", 12)
        record = AESGCM(key).decrypt(nonce, body[86:], None).rstrip(b"\\0")
        assert record.endswith(b"\\2")
        print(record[:-1].decode())
        """
}

/// Python's `cryptography` package (python3-cryptography, installed by .ci/run) as a second
/// implementation that checks ours, run through TestSupport's ChildProcess (posix_spawn, output on a
/// close-on-exec socket: nothing of it leaks into other tests' children).
enum PythonCryptography {
    /// Runs `python3 -c script arguments…` on a Dispatch thread (it blocks until the child exits; a
    /// cooperative thread must never wait on a subprocess): 0 and its standard output, or 1 and the
    /// failure with its standard error.
    static func run(_ script: String, _ arguments: String...) async throws -> (status: Int32, output: String) {
        try await blocking { try runBlocking(script, arguments) }
    }

    private static func runBlocking(_ script: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        do {
            return (0, try ChildProcess.run("python3", ["-c", script] + arguments, timeout: .seconds(60)) + "\n")
        } catch let failure as ChildProcess.Failure {
            return (1, failure.description)
        }
    }
}
