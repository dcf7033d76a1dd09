import COpenSSL

/// AES-128 in Galois/Counter Mode (NIST SP 800-38D) with a 96-bit nonce and a 128-bit tag, through
/// OpenSSL's EVP cipher interface.
///
/// Contract: `seal` returns ciphertext ‖ tag (plaintext length + 16 bytes); `open` takes that form
/// back and returns the plaintext only when the tag authenticates it, else throws
/// `.authenticationFailure` and returns nothing. A key or nonce of the wrong length is a thrown
/// `.invalidLength`. The caller must never reuse a (key, nonce) pair for two messages.
public enum AES128GCM {
    /// Key length in bytes.
    public static let keyByteCount = 16
    /// Nonce (IV) length in bytes, GCM's recommended 96 bits.
    public static let nonceByteCount = 12
    /// Authentication tag length in bytes.
    public static let tagByteCount = 16
    /// Bytes handed to one `EVP_*Update` call (its length is an `int`).
    private static let chunkByteCount = 1 << 30

    /// Encrypts and authenticates `plaintext` and authenticates `authenticatedData`: ciphertext ‖ tag.
    public static func seal(
        _ plaintext: some Collection<UInt8>, key: [UInt8], nonce: [UInt8], authenticatedData: some Collection<UInt8> = [UInt8]()
    ) throws(CryptoError) -> [UInt8] {
        try checkLengths(key: key, nonce: nonce)
        return withContext(key: key, nonce: nonce, encrypt: true) { context in
            update(context, aad: authenticatedData, encrypt: true)
            var out = cipher(context, plaintext, encrypt: true)
            var length: Int32 = 0
            var dummy = [UInt8](repeating: 0, count: 16)
            guard EVP_EncryptFinal_ex(context, &dummy, &length) == 1, length == 0 else { fatalOpenSSLError("EVP_EncryptFinal_ex") }
            var tag = [UInt8](repeating: 0, count: tagByteCount)
            guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(tagByteCount), &tag) == 1 else {
                fatalOpenSSLError("EVP_CTRL_GCM_GET_TAG")
            }
            out.append(contentsOf: tag)
            return out
        }
    }

    /// Checks the tag at the end of `sealed` and returns the plaintext it authenticates.
    public static func open(
        _ sealed: some Collection<UInt8>, key: [UInt8], nonce: [UInt8], authenticatedData: some Collection<UInt8> = [UInt8]()
    ) throws(CryptoError) -> [UInt8] {
        try checkLengths(key: key, nonce: nonce)
        let sealed = Array(sealed)
        guard sealed.count >= tagByteCount else { throw .authenticationFailure }
        var tag = Array(sealed.suffix(tagByteCount))
        let ciphertext = sealed.dropLast(tagByteCount)
        let plaintext: [UInt8]? = withContext(key: key, nonce: nonce, encrypt: false) { context in
            update(context, aad: authenticatedData, encrypt: false)
            let out = cipher(context, ciphertext, encrypt: false)
            guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagByteCount), &tag) == 1 else {
                fatalOpenSSLError("EVP_CTRL_GCM_SET_TAG")
            }
            var length: Int32 = 0
            var dummy = [UInt8](repeating: 0, count: 16)
            guard EVP_DecryptFinal_ex(context, &dummy, &length) == 1 else {
                ERR_clear_error()
                return nil
            }
            return out
        }
        guard let plaintext else { throw .authenticationFailure }
        return plaintext
    }

    private static func checkLengths(key: [UInt8], nonce: [UInt8]) throws(CryptoError) {
        guard key.count == keyByteCount else { throw .invalidLength(what: "AES-128 key", expected: keyByteCount, actual: key.count) }
        guard nonce.count == nonceByteCount else {
            throw .invalidLength(what: "GCM nonce", expected: nonceByteCount, actual: nonce.count)
        }
    }

    /// Runs `body` with a cipher context initialised for AES-128-GCM under `key` and `nonce`.
    private static func withContext<R>(key: [UInt8], nonce: [UInt8], encrypt: Bool, _ body: (OpaquePointer) -> R) -> R {
        LibCrypto.prepare()
        guard let context = EVP_CIPHER_CTX_new() else { fatalOpenSSLError("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(context) }
        // GCM's default IV length is 12 bytes, the length checked above.
        let result =
            encrypt
            ? EVP_EncryptInit_ex(context, EVP_aes_128_gcm(), nil, key, nonce)
            : EVP_DecryptInit_ex(context, EVP_aes_128_gcm(), nil, key, nonce)
        guard result == 1 else { fatalOpenSSLError("EVP_CipherInit_ex(AES-128-GCM)") }
        return body(context)
    }

    /// Feeds associated data (no output).
    private static func update(_ context: OpaquePointer, aad: some Collection<UInt8>, encrypt: Bool) {
        aad.withContiguousBytes { buffer in update(context, buffer, into: nil, encrypt: encrypt) }
    }

    /// Encrypts or decrypts `input` (GCM is a stream mode: output length = input length).
    private static func cipher(_ context: OpaquePointer, _ input: some Collection<UInt8>, encrypt: Bool) -> [UInt8] {
        input.withContiguousBytes { buffer in
            [UInt8](unsafeUninitializedCapacity: buffer.count) { output, initialized in
                update(context, buffer, into: output.baseAddress, encrypt: encrypt)
                initialized = buffer.count
            }
        }
    }

    /// One `EVP_*Update` per `chunkByteCount` bytes of `input` (the length is an Int32): into
    /// `output` (as many bytes as `input`), or as associated data when `output` is nil.
    private static func update(
        _ context: OpaquePointer, _ input: UnsafeBufferPointer<UInt8>, into output: UnsafeMutablePointer<UInt8>?,
        encrypt: Bool
    ) {
        var offset = 0
        while offset < input.count {
            let count = min(chunkByteCount, input.count - offset)
            var length: Int32 = 0
            let source = input.baseAddress! + offset
            let target = output.map { $0 + offset }
            let result =
                encrypt
                ? EVP_EncryptUpdate(context, target, &length, source, Int32(count))
                : EVP_DecryptUpdate(context, target, &length, source, Int32(count))
            guard result == 1, output == nil || Int(length) == count else { fatalOpenSSLError("EVP_CipherUpdate") }
            offset += count
        }
    }
}
