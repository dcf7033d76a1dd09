import COpenSSL

/// HKDF with SHA-256 (RFC 5869) through OpenSSL's `EVP_KDF` "HKDF".
///
/// Contract: the whole function (`deriveKey`) and its two halves (`extract`, `expand`) take any salt
/// and input keying material, including empty; a request past a limit below is a thrown
/// `CryptoError.hkdfLimitExceeded`, never a trap.
public enum HKDF {
    /// RFC 5869 §2.3: L ≤ 255 · HashLen.
    public static let maxOutputByteCount = 255 * SHA256.byteCount
    /// Longest `info` accepted. OpenSSL 3 keeps info in a fixed buffer (1,024 bytes in 1.1.1 and
    /// early 3.x, larger later); the smallest is the limit, so behaviour does not depend on the build.
    public static let maxInfoByteCount = 1_024

    /// HKDF-Extract then HKDF-Expand (RFC 5869 §2): `outputByteCount` (1…8,160) bytes of keying material.
    public static func deriveKey(
        inputKeyMaterial: some Collection<UInt8>, salt: some Collection<UInt8>, info: some Collection<UInt8>,
        outputByteCount: Int
    ) throws(CryptoError) -> [UInt8] {
        try check(info: info.count, output: outputByteCount)
        return derive(mode: EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND, key: inputKeyMaterial, salt: salt, info: info, count: outputByteCount)
    }

    /// HKDF-Extract (RFC 5869 §2.2): the 32-byte pseudorandom key HMAC-SHA-256(salt, IKM).
    public static func extract(inputKeyMaterial: some Collection<UInt8>, salt: some Collection<UInt8>) -> [UInt8] {
        derive(mode: EVP_KDF_HKDF_MODE_EXTRACT_ONLY, key: inputKeyMaterial, salt: salt, info: [UInt8](), count: SHA256.byteCount)
    }

    /// HKDF-Expand (RFC 5869 §2.3) of a pseudorandom key of at least 32 bytes (HashLen).
    public static func expand(
        pseudoRandomKey: some Collection<UInt8>, info: some Collection<UInt8>, outputByteCount: Int
    ) throws(CryptoError) -> [UInt8] {
        guard pseudoRandomKey.count >= SHA256.byteCount else {
            throw .invalidLength(what: "HKDF PRK", expected: SHA256.byteCount, actual: pseudoRandomKey.count)
        }
        try check(info: info.count, output: outputByteCount)
        return derive(mode: EVP_KDF_HKDF_MODE_EXPAND_ONLY, key: pseudoRandomKey, salt: [UInt8](), info: info, count: outputByteCount)
    }

    /// Throws when `info` or the output length is past its limit (or the output is empty).
    private static func check(info: Int, output: Int) throws(CryptoError) {
        guard (1...maxOutputByteCount).contains(output) else {
            throw .hkdfLimitExceeded(what: "output length", limit: maxOutputByteCount, actual: output)
        }
        guard info <= maxInfoByteCount else {
            throw .hkdfLimitExceeded(what: "info length", limit: maxInfoByteCount, actual: info)
        }
    }

    /// One `EVP_KDF_derive` in `mode`; inputs are within limits, so a failure is libcrypto's.
    private static func derive(
        mode: Int32, key: some Collection<UInt8>, salt: some Collection<UInt8>, info: some Collection<UInt8>, count: Int
    ) -> [UInt8] {
        LibCrypto.prepare()
        guard let kdf = EVP_KDF_fetch(nil, "HKDF", nil) else { fatalOpenSSLError("EVP_KDF_fetch(HKDF)") }
        defer { EVP_KDF_free(kdf) }
        guard let context = EVP_KDF_CTX_new(kdf) else { fatalOpenSSLError("EVP_KDF_CTX_new(HKDF)") }
        defer { EVP_KDF_CTX_free(context) }
        var modeValue = mode
        return key.withContiguousBytes { keyBuffer in
            salt.withContiguousBytes { saltBuffer in
                info.withContiguousBytes { infoBuffer in
                    withUnsafeMutablePointer(to: &modeValue) { modePointer in
                        var params: [OSSL_PARAM] = [
                            OSSL_PARAM_construct_utf8_string(OSSLParam.cString("digest"), OSSLParam.cString("SHA256"), 0),
                            OSSL_PARAM_construct_int(OSSLParam.cString("mode"), modePointer),
                            OSSLParam.octets("key", keyBuffer),
                        ]
                        // Expand-only takes no salt; extract-only no info.
                        if mode != EVP_KDF_HKDF_MODE_EXPAND_ONLY { params.append(OSSLParam.octets("salt", saltBuffer)) }
                        if mode != EVP_KDF_HKDF_MODE_EXTRACT_ONLY { params.append(OSSLParam.octets("info", infoBuffer)) }
                        params.append(OSSL_PARAM_construct_end())
                        return [UInt8](unsafeUninitializedCapacity: count) { output, initialized in
                            let result = params.withUnsafeBufferPointer {
                                EVP_KDF_derive(context, output.baseAddress, count, $0.baseAddress)
                            }
                            guard result == 1 else { fatalOpenSSLError("EVP_KDF_derive(HKDF)") }
                            initialized = count
                        }
                    }
                }
            }
        }
    }
}
