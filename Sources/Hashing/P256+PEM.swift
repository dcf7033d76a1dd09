import COpenSSL

extension P256.PrivateKey {
    /// Longest PEM text `init(pemRepresentation:)` reads (a P-256 key is about 240 bytes; room for
    /// comments and CRLF line ends).
    public static let maxPEMByteCount = 16_384

    /// Imports an unencrypted P-256 private key from PEM: PKCS#8 "PRIVATE KEY" (RFC 5958 / RFC 7468
    /// §10; what `.p8` APNs keys and `pemRepresentation` hold) or SEC 1 "EC PRIVATE KEY". Throws
    /// `.invalidPEM` for anything else — other curves or algorithms, encrypted keys (never prompts for
    /// a passphrase), text past `maxPEMByteCount` — and `.invalidPrivateKey` for a scalar out of range.
    public init(pemRepresentation: String) throws(CryptoError) {
        let text = Array(pemRepresentation.utf8)
        guard !text.isEmpty, text.count <= Self.maxPEMByteCount else { throw .invalidPEM }
        LibCrypto.prepare()
        let decoded: OpaquePointer? = text.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { fatalOpenSSLError("BIO_new_mem_buf") }
            defer { BIO_free(bio) }
            // A callback that supplies no passphrase: encrypted keys fail instead of prompting on a terminal.
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        // OpenSSL 3's decoders try several formats and may queue errors even when one succeeds.
        ERR_clear_error()
        guard let decoded else { throw .invalidPEM }
        let parsed = EVPKey(decoded)
        var group = [CChar](repeating: 0, count: 64)
        var groupLength = 0
        guard EVP_PKEY_is_a(parsed.pointer, "EC") == 1,
            EVP_PKEY_get_utf8_string_param(parsed.pointer, "group", &group, group.count, &groupLength) == 1,
            String(decoding: group.prefix(groupLength).map { UInt8(bitPattern: $0) }, as: UTF8.self) == P256.groupName
        else {
            ERR_clear_error()
            throw .invalidPEM
        }
        // Re-import from the scalar, which checks its range and recomputes the public key (a PKCS#8
        // EC key may omit it, and one that carries a wrong public key must not be trusted).
        let scalar = PrivateScalar(parsed)
        try self.init(rawRepresentation: scalar.bytes)
    }

    /// The key as unencrypted PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----", RFC 7468 §10), for a 0600 file.
    public var pemRepresentation: String {
        LibCrypto.prepare()
        guard let bio = BIO_new(BIO_s_mem()) else { fatalOpenSSLError("BIO_new") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PKCS8PrivateKey(bio, key.pointer, nil, nil, 0, nil, nil) == 1 else {
            fatalOpenSSLError("PEM_write_bio_PKCS8PrivateKey")
        }
        let pending = Int(BIO_ctrl_pending(bio))
        var out = [UInt8](repeating: 0, count: pending)
        guard BIO_read(bio, &out, Int32(pending)) == Int32(pending) else { fatalOpenSSLError("BIO_read") }
        return String(decoding: out, as: UTF8.self)
    }
}

/// The private scalar of a decoded EC key, as 32 bytes (empty when it has none or it is too large,
/// which the raw import then refuses).
private struct PrivateScalar {
    /// The big-endian scalar.
    let bytes: [UInt8]

    init(_ key: EVPKey) {
        var d: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key.pointer, "priv", &d) == 1, let d else {
            ERR_clear_error()
            bytes = []
            return
        }
        defer { BN_clear_free(d) }
        var out = [UInt8](repeating: 0, count: P256.scalarByteCount)
        bytes = BN_bn2binpad(d, &out, Int32(P256.scalarByteCount)) == Int32(P256.scalarByteCount) ? out : []
    }
}
