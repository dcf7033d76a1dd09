/// Why a cryptographic primitive refused its input. Thrown only for bad *input* (a key of the wrong
/// length, a point off the curve, a forged tag); libcrypto failing on valid input is fatal instead
/// (`fatalOpenSSLError`), since no caller can recover from it.
public enum CryptoError: Error, Equatable, Sendable {
    /// A symmetric key, nonce or PRK had the wrong length.
    case invalidLength(what: String, expected: Int, actual: Int)
    /// HKDF was asked for more than 255 · 32 bytes (RFC 5869 §2.3), or for info past OpenSSL's buffer.
    case hkdfLimitExceeded(what: String, limit: Int, actual: Int)
    /// AES-GCM `open`: the tag does not authenticate the ciphertext and associated data under the key
    /// (also for input shorter than a tag).
    case authenticationFailure
    /// Not a P-256 private key: a scalar that is not 32 bytes or not in 1..<n.
    case invalidPrivateKey
    /// Not a P-256 public key: not 65 bytes, not uncompressed (0x04 | x | y), or not a point of the curve.
    case invalidPublicKey
    /// PEM text that is not an unencrypted P-256 private key (PKCS#8 or SEC 1), or too long.
    case invalidPEM
    /// Not an acceptable RSA key: PEM that is not an unencrypted RSA key of the expected kind (private:
    /// PKCS#8 or PKCS#1; public: SubjectPublicKeyInfo), a modulus outside `RSA.allowedModulusBits`, or too long.
    case invalidRSAKey
    /// Not one whole DER X.509 certificate, or longer than `X509Certificate.maxDERByteCount`.
    case invalidCertificate
}
