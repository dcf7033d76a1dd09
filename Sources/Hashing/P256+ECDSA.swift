import COpenSSL

/// ECDSA with SHA-256 on P-256 (FIPS 186-4), signatures in the raw form JOSE uses (RFC 7518 §3.4):
/// r ‖ s, each a 32-byte big-endian integer left-padded with zeros — 64 bytes, not DER.
extension P256 {
    /// Length of a raw r ‖ s signature in bytes.
    public static let signatureByteCount = 64
}

extension P256.PrivateKey {
    /// Signs SHA-256(`message`) with a fresh random nonce: a 64-byte raw r ‖ s.
    public func signature(for message: some Collection<UInt8>) -> [UInt8] {
        LibCrypto.prepare()
        guard let context = EVP_MD_CTX_new() else { fatalOpenSSLError("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key.pointer) == 1 else { fatalOpenSSLError("EVP_DigestSignInit") }
        var der = [UInt8](repeating: 0, count: 80)  // DER of two 33-byte INTEGERs is at most 72 bytes
        var length = der.count
        let signed = message.withContiguousBytes { buffer in
            EVP_DigestSign(context, &der, &length, buffer.baseAddress, buffer.count)
        }
        guard signed == 1 else { fatalOpenSSLError("EVP_DigestSign") }
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, length)
        }
        guard let parsed else { fatalOpenSSLError("d2i_ECDSA_SIG") }
        defer { ECDSA_SIG_free(parsed) }
        let half = P256.scalarByteCount
        var raw = [UInt8](repeating: 0, count: P256.signatureByteCount)
        let written = raw.withUnsafeMutableBufferPointer { buffer in
            BN_bn2binpad(ECDSA_SIG_get0_r(parsed), buffer.baseAddress, Int32(half)) == Int32(half)
                && BN_bn2binpad(ECDSA_SIG_get0_s(parsed), buffer.baseAddress! + half, Int32(half)) == Int32(half)
        }
        guard written else { fatalOpenSSLError("BN_bn2binpad(ECDSA r, s)") }
        return raw
    }
}

extension P256.PublicKey {
    /// True when `signature` is a valid raw r ‖ s ECDSA-SHA-256 signature of `message` under this key.
    /// Any other length, r or s out of 1..<n, or a wrong signature is simply false.
    public func isValidSignature(_ signature: some Collection<UInt8>, for message: some Collection<UInt8>) -> Bool {
        let raw = Array(signature)
        guard raw.count == P256.signatureByteCount else { return false }
        LibCrypto.prepare()
        guard let parsed = ECDSA_SIG_new() else { fatalOpenSSLError("ECDSA_SIG_new") }
        defer { ECDSA_SIG_free(parsed) }
        let half = P256.scalarByteCount
        guard let r = BN_bin2bn(raw, Int32(half), nil) else { fatalOpenSSLError("BN_bin2bn") }
        guard let s = raw.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress! + half, Int32(half), nil) }) else {
            BN_free(r)
            fatalOpenSSLError("BN_bin2bn")
        }
        guard ECDSA_SIG_set0(parsed, r, s) == 1 else { fatalOpenSSLError("ECDSA_SIG_set0") }  // owns r and s now
        var der = [UInt8](repeating: 0, count: 80)
        let derLength = der.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_ECDSA_SIG(parsed, &cursor)
        }
        guard derLength > 0, derLength <= der.count else { fatalOpenSSLError("i2d_ECDSA_SIG") }
        guard let context = EVP_MD_CTX_new() else { fatalOpenSSLError("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key.pointer) == 1 else { fatalOpenSSLError("EVP_DigestVerifyInit") }
        let verified = message.withContiguousBytes { buffer in
            EVP_DigestVerify(context, der, Int(derLength), buffer.baseAddress, buffer.count)
        }
        if verified != 1 { ERR_clear_error() }
        return verified == 1
    }
}
