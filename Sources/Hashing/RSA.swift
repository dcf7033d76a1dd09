import COpenSSL

/// RSA through OpenSSL 3's `EVP_PKEY` interface, for RS256 (RFC 7518 §3.3: RSASSA-PKCS1-v1_5 with
/// SHA-256, RFC 8017 §8.2) — what Google's OAuth2 JWT-bearer grant wants from a service account.
/// Keys come from PEM: a private key as unencrypted PKCS#8 "PRIVATE KEY" (a service-account JSON's
/// `private_key`) or PKCS#1 "RSA PRIVATE KEY", a public key as SubjectPublicKeyInfo "PUBLIC KEY".
///
/// Contract: every key value is an RSA key whose modulus has `allowedModulusBits` bits, else the
/// initialiser throws `.invalidRSAKey`. Keys are immutable and safe to share between threads.
public enum RSA {
    /// Modulus sizes accepted: 2048 bits at least (NIST SP 800-57 past 2030 wants more, Google issues
    /// 2048), 8192 at most (signing cost grows with the cube; nothing real uses more).
    public static let allowedModulusBits = 2048...8192
    /// Longest PEM text a key import reads (an 8192-bit private key is about 6.4 KB of PEM).
    public static let maxPEMByteCount = 16_384

    /// An RSA private key with its public key.
    public struct PrivateKey: Sendable {
        let key: EVPKey
        /// The public half (its own `EVP_PKEY`, holding no private parts).
        public let publicKey: PublicKey

        /// Generates a fresh key pair of `bits` (in `allowedModulusBits`; tests and tools — a server
        /// gets its keys from its operator). Takes ~0.1–1 s for 2048 bits.
        public init(bits: Int = 2048) throws(CryptoError) {
            guard RSA.allowedModulusBits.contains(bits) else { throw .invalidRSAKey }
            LibCrypto.prepare()
            guard let context = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else { fatalOpenSSLError("EVP_PKEY_CTX_new_from_name(RSA)") }
            defer { EVP_PKEY_CTX_free(context) }
            var generated: OpaquePointer?
            guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) == 1,
                EVP_PKEY_generate(context, &generated) == 1, let generated
            else { fatalOpenSSLError("EVP_PKEY_generate(RSA)") }
            key = EVPKey(generated)
            publicKey = PublicKey(publicHalfOf: key)
        }

        /// Imports an unencrypted RSA private key from PEM (PKCS#8 "PRIVATE KEY" or PKCS#1 "RSA PRIVATE
        /// KEY"). Throws `.invalidRSAKey` for anything else — another algorithm, an encrypted key (never
        /// prompts for a passphrase), a modulus outside `allowedModulusBits`, text past `maxPEMByteCount`.
        public init(pemRepresentation: String) throws(CryptoError) {
            guard let parsed = RSA.read(pemRepresentation, reader: { bio in PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil) })
            else { throw .invalidRSAKey }
            key = parsed
            publicKey = PublicKey(publicHalfOf: parsed)
        }

        /// The key as unencrypted PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----", RFC 7468 §10).
        public var pemRepresentation: String {
            RSA.write(key) { bio, key in PEM_write_bio_PKCS8PrivateKey(bio, key, nil, nil, 0, nil, nil) }
        }

        /// Modulus length in bits.
        public var modulusBits: Int { Int(EVP_PKEY_get_bits(key.pointer)) }

        /// RSASSA-PKCS1-v1_5 signature with SHA-256 of `message` (RFC 8017 §8.2.1): deterministic, as
        /// long as the modulus.
        public func signatureSHA256(for message: some Collection<UInt8>) -> [UInt8] {
            LibCrypto.prepare()
            guard let context = EVP_MD_CTX_new() else { fatalOpenSSLError("EVP_MD_CTX_new") }
            defer { EVP_MD_CTX_free(context) }
            // PKCS#1 v1.5 is the default padding of an RSA EVP_PKEY signature.
            guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key.pointer) == 1 else { fatalOpenSSLError("EVP_DigestSignInit") }
            var signature = [UInt8](repeating: 0, count: Int(EVP_PKEY_get_size(key.pointer)))
            var length = signature.count
            let signed = message.withContiguousBytes { buffer in
                EVP_DigestSign(context, &signature, &length, buffer.baseAddress, buffer.count)
            }
            guard signed == 1 else { fatalOpenSSLError("EVP_DigestSign(RSA)") }
            return Array(signature.prefix(length))
        }
    }

    /// An RSA public key.
    public struct PublicKey: Sendable {
        let key: EVPKey

        /// Wraps an RSA public key made here (`RSA+Components.swift`).
        init(key: EVPKey) { self.key = key }

        /// Imports a SubjectPublicKeyInfo "PUBLIC KEY" PEM (RFC 7468 §13); throws `.invalidRSAKey` for
        /// another algorithm, a modulus outside `allowedModulusBits` or text past `maxPEMByteCount`.
        public init(pemRepresentation: String) throws(CryptoError) {
            guard let parsed = RSA.read(pemRepresentation, reader: { PEM_read_bio_PUBKEY($0, nil, nil, nil) }) else {
                throw .invalidRSAKey
            }
            key = parsed
        }

        /// The public key of `pair`, re-encoded as SubjectPublicKeyInfo DER and decoded alone.
        init(publicHalfOf pair: EVPKey) {
            var der: UnsafeMutablePointer<UInt8>?
            let length = i2d_PUBKEY(pair.pointer, &der)
            guard length > 0, let der else { fatalOpenSSLError("i2d_PUBKEY") }
            defer { CRYPTO_free(der, #fileID, #line) }
            var cursor: UnsafePointer<UInt8>? = UnsafePointer(der)
            guard let decoded = d2i_PUBKEY(nil, &cursor, Int(length)) else { fatalOpenSSLError("d2i_PUBKEY") }
            key = EVPKey(decoded)
        }

        /// The key as "-----BEGIN PUBLIC KEY-----" PEM.
        public var pemRepresentation: String { RSA.write(key, PEM_write_bio_PUBKEY) }

        /// True when `signature` is a valid RSASSA-PKCS1-v1_5 SHA-256 signature of `message` under this
        /// key; any bad signature (wrong length, wrong padding, another message) is simply false.
        public func isValidSignatureSHA256(_ signature: some Collection<UInt8>, for message: some Collection<UInt8>) -> Bool {
            let raw = Array(signature)
            guard raw.count == Int(EVP_PKEY_get_size(key.pointer)) else { return false }
            LibCrypto.prepare()
            guard let context = EVP_MD_CTX_new() else { fatalOpenSSLError("EVP_MD_CTX_new") }
            defer { EVP_MD_CTX_free(context) }
            guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key.pointer) == 1 else { fatalOpenSSLError("EVP_DigestVerifyInit") }
            let verified = message.withContiguousBytes { buffer in
                EVP_DigestVerify(context, raw, raw.count, buffer.baseAddress, buffer.count)
            }
            if verified != 1 { ERR_clear_error() }
            return verified == 1
        }
    }

    /// Decodes PEM text with `reader`; nil unless it is an RSA key with an allowed modulus.
    private static func read(_ text: String, reader: (OpaquePointer) -> OpaquePointer?) -> EVPKey? {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= maxPEMByteCount else { return nil }
        LibCrypto.prepare()
        let decoded: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { fatalOpenSSLError("BIO_new_mem_buf") }
            defer { BIO_free(bio) }
            return reader(bio)
        }
        // OpenSSL 3's decoders try several formats and may queue errors even when one succeeds.
        ERR_clear_error()
        guard let decoded else { return nil }
        let key = EVPKey(decoded)
        guard EVP_PKEY_is_a(key.pointer, "RSA") == 1, allowedModulusBits.contains(Int(EVP_PKEY_get_bits(key.pointer))) else {
            return nil
        }
        return key
    }

    /// PEM text `writer` produces for `key`.
    private static func write(_ key: EVPKey, _ writer: (OpaquePointer, OpaquePointer) -> Int32) -> String {
        LibCrypto.prepare()
        guard let bio = BIO_new(BIO_s_mem()) else { fatalOpenSSLError("BIO_new") }
        defer { BIO_free(bio) }
        guard writer(bio, key.pointer) == 1 else { fatalOpenSSLError("PEM_write_bio(RSA)") }
        let pending = Int(BIO_ctrl_pending(bio))
        var out = [UInt8](repeating: 0, count: pending)
        guard BIO_read(bio, &out, Int32(pending)) == Int32(pending) else { fatalOpenSSLError("BIO_read") }
        return String(decoding: out, as: UTF8.self)
    }
}
