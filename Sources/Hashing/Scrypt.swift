import COpenSSL

/// Cost parameters of scrypt (RFC 7914 §2). Memory use is about 128 · r · N bytes.
public struct ScryptParameters: Sendable, Equatable {
    /// CPU/memory cost N: a power of two greater than 1.
    public var n: UInt64
    /// Block size r (≥ 1).
    public var r: UInt64
    /// Parallelisation p (≥ 1).
    public var p: UInt64
    /// Length of the derived key in bytes (≥ 1).
    public var keyLength: Int

    /// Creates a parameter set; `derive` checks the values when it runs.
    public init(n: UInt64, r: UInt64, p: UInt64, keyLength: Int) {
        self.n = n
        self.r = r
        self.p = p
        self.keyLength = keyLength
    }

    /// Password storage default: N = 2^15, r = 8, p = 1, 32-byte key (~32 MiB; measured 0.1–0.2 s per
    /// hash on the 2-core dev VM, so hashing must run off the event loops).
    public static let interactive = ScryptParameters(n: 1 << 15, r: 8, p: 1, keyLength: 32)

    /// Cheap parameters (N = 2^10) so tests run fast. Never use for real passwords.
    public static let testing = ScryptParameters(n: 1 << 10, r: 8, p: 1, keyLength: 32)

    /// log2(N) when N is a power of two greater than 1, else nil.
    var log2N: Int? {
        guard n > 1, n & (n - 1) == 0 else { return nil }
        return n.trailingZeroBitCount
    }

    /// Bytes OpenSSL allocates for these parameters (128·r·p for B plus 128·r·(N+2) for V and XY),
    /// or nil on overflow.
    var memoryBytes: UInt64? {
        let (sum, overflow1) = n.addingReportingOverflow(p)
        let (terms, overflow2) = sum.addingReportingOverflow(2)
        let (perBlock, overflow3) = r.multipliedReportingOverflow(by: 128)
        let (total, overflow4) = perBlock.multipliedReportingOverflow(by: terms)
        guard !(overflow1 || overflow2 || overflow3 || overflow4) else { return nil }
        return total
    }
}

/// The scrypt key-derivation function (RFC 7914) through OpenSSL's `EVP_KDF` "SCRYPT".
public enum Scrypt {
    /// Derives `parameters.keyLength` bytes from `password` and `salt`. Invalid parameters (N not a
    /// power of two > 1, r or p zero, keyLength < 1) are a programming error and trap; so does a
    /// libcrypto failure (e.g. out of memory), since no weaker fallback is acceptable.
    public static func derive(
        password: some Collection<UInt8>, salt: [UInt8], parameters: ScryptParameters
    ) -> [UInt8] {
        precondition(parameters.log2N != nil, "scrypt: N must be a power of two greater than 1")
        precondition(parameters.r >= 1 && parameters.p >= 1, "scrypt: r and p must be at least 1")
        precondition(parameters.keyLength >= 1, "scrypt: keyLength must be at least 1")
        guard let needed = parameters.memoryBytes else { preconditionFailure("scrypt: parameters overflow") }
        // OpenSSL refuses to allocate more than `maxmem` (default 32 MiB, just under what
        // N = 2^15, r = 8 needs): allow exactly what these parameters use, plus slack.
        let (maxmem, overflow) = needed.addingReportingOverflow(1 << 20)
        precondition(!overflow, "scrypt: parameters overflow")

        LibCrypto.prepare()
        guard let kdf = EVP_KDF_fetch(nil, "SCRYPT", nil) else { fatalOpenSSLError("EVP_KDF_fetch(SCRYPT)") }
        defer { EVP_KDF_free(kdf) }
        guard let context = EVP_KDF_CTX_new(kdf) else { fatalOpenSSLError("EVP_KDF_CTX_new") }
        defer { EVP_KDF_CTX_free(context) }

        // OSSL_PARAM keeps pointers to its key and value until the derive call, so both must
        // outlive the array: keys are static strings, numbers live in this allocation.
        let numbers = UnsafeMutablePointer<UInt64>.allocate(capacity: 4)
        defer { numbers.deallocate() }
        numbers.initialize(repeating: 0, count: 4)
        numbers[0] = parameters.n
        numbers[1] = parameters.r
        numbers[2] = parameters.p
        numbers[3] = maxmem

        return password.withContiguousBytes { passwordBuffer in
            salt.withContiguousBytes { saltBuffer in
                let params: [OSSL_PARAM] = [
                    OSSL_PARAM_construct_octet_string(
                        OSSLParam.cString("pass"), UnsafeMutableRawPointer(mutating: passwordBuffer.baseAddress),
                        passwordBuffer.count),
                    OSSL_PARAM_construct_octet_string(
                        OSSLParam.cString("salt"), UnsafeMutableRawPointer(mutating: saltBuffer.baseAddress),
                        saltBuffer.count),
                    OSSL_PARAM_construct_uint64(OSSLParam.cString("n"), numbers),
                    OSSL_PARAM_construct_uint64(OSSLParam.cString("r"), numbers + 1),
                    OSSL_PARAM_construct_uint64(OSSLParam.cString("p"), numbers + 2),
                    OSSL_PARAM_construct_uint64(OSSLParam.cString("maxmem_bytes"), numbers + 3),
                    OSSL_PARAM_construct_end(),
                ]
                return [UInt8](unsafeUninitializedCapacity: parameters.keyLength) { output, initialized in
                    let result = params.withUnsafeBufferPointer { paramBuffer in
                        EVP_KDF_derive(context, output.baseAddress, parameters.keyLength, paramBuffer.baseAddress)
                    }
                    guard result == 1 else { fatalOpenSSLError("EVP_KDF_derive(SCRYPT)") }
                    initialized = parameters.keyLength
                }
            }
        }
    }
}
