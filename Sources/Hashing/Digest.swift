import COpenSSL

/// SHA-256 (FIPS 180-4) through OpenSSL's EVP interface.
public enum SHA256 {
    /// Length of a SHA-256 digest in bytes.
    public static let byteCount = 32

    /// Returns the 32-byte SHA-256 digest of `bytes`.
    public static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        evpDigest(bytes, algorithm: EVP_sha256(), byteCount: byteCount, name: "EVP_Digest(SHA-256)")
    }

    /// An incremental SHA-256: `update` with the input piece by piece (a file read in chunks), then
    /// `finalize` once. Not thread-safe; one owner.
    public final class Hasher {
        private let context: OpaquePointer

        /// A hasher with no input yet.
        public init() {
            LibCrypto.prepare()
            guard let context = EVP_MD_CTX_new() else { fatalOpenSSLError("EVP_MD_CTX_new") }
            guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else { fatalOpenSSLError("EVP_DigestInit_ex(SHA-256)") }
            self.context = context
        }

        deinit { EVP_MD_CTX_free(context) }

        /// Adds `bytes` to the input.
        public func update(_ bytes: UnsafeRawBufferPointer) {
            guard !bytes.isEmpty else { return }
            guard EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) == 1 else { fatalOpenSSLError("EVP_DigestUpdate") }
        }

        /// The 32-byte digest of everything added. Call once.
        public func finalize() -> [UInt8] {
            [UInt8](unsafeUninitializedCapacity: byteCount) { output, initialized in
                var length: UInt32 = 0
                guard EVP_DigestFinal_ex(context, output.baseAddress, &length) == 1, Int(length) == byteCount else {
                    fatalOpenSSLError("EVP_DigestFinal_ex")
                }
                initialized = byteCount
            }
        }
    }
}

/// SHA-1 (FIPS 180-4). Broken for collision resistance: use only where a protocol demands it
/// (RFC 6455 §4.2.2 `Sec-WebSocket-Accept`).
public enum SHA1 {
    /// Length of a SHA-1 digest in bytes.
    public static let byteCount = 20

    /// Returns the 20-byte SHA-1 digest of `bytes`.
    public static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        evpDigest(bytes, algorithm: EVP_sha1(), byteCount: byteCount, name: "EVP_Digest(SHA-1)")
    }
}

/// HMAC-SHA-256 (RFC 2104, RFC 4231).
public enum HMACSHA256 {
    /// Length of an HMAC-SHA-256 tag in bytes.
    public static let byteCount = 32

    /// Returns the 32-byte HMAC-SHA-256 of `message` under `key` (any key length, including empty).
    public static func authenticationCode(key: [UInt8], message: some Collection<UInt8>) -> [UInt8] {
        guard key.count <= Int(Int32.max) else { preconditionFailure("HMAC key too long") }
        LibCrypto.prepare()
        return key.withContiguousBytes { keyBuffer in
            message.withContiguousBytes { messageBuffer in
                [UInt8](unsafeUninitializedCapacity: byteCount) { output, initialized in
                    var length: UInt32 = 0
                    let result = HMAC(
                        EVP_sha256(), keyBuffer.baseAddress, Int32(keyBuffer.count),
                        messageBuffer.baseAddress, messageBuffer.count, output.baseAddress, &length)
                    guard result != nil, Int(length) == byteCount else { fatalOpenSSLError("HMAC(SHA-256)") }
                    initialized = byteCount
                }
            }
        }
    }
}

/// One-shot EVP digest of `bytes`; aborts if libcrypto fails.
private func evpDigest(
    _ bytes: some Collection<UInt8>, algorithm: OpaquePointer?, byteCount: Int, name: String
) -> [UInt8] {
    LibCrypto.prepare()
    return bytes.withContiguousBytes { input in
        [UInt8](unsafeUninitializedCapacity: byteCount) { output, initialized in
            var length: UInt32 = 0
            guard EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, algorithm, nil) == 1,
                Int(length) == byteCount
            else { fatalOpenSSLError(name) }
            initialized = byteCount
        }
    }
}
