import COpenSSL

/// Cryptographically secure random values from OpenSSL's CSPRNG (`RAND_bytes`).
public enum SecureRandom {
    /// Returns `count` random bytes. A CSPRNG failure is fatal: it never falls back to weaker randomness.
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "SecureRandom.bytes: negative count")
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            fill(buffer)
            initialized = count
        }
    }

    /// Returns a uniformly distributed value in `0..<upperBound` (`upperBound` > 0), by rejection
    /// sampling so there is no modulo bias.
    public static func uniform(upperBound: UInt32) -> UInt32 {
        precondition(upperBound > 0, "SecureRandom.uniform: upperBound must be positive")
        // Values below `threshold` = 2^32 mod upperBound would make the low residues more likely.
        let threshold = (0 &- upperBound) % upperBound
        while true {
            var value: UInt32 = 0
            withUnsafeMutableBytes(of: &value) { fill($0.bindMemory(to: UInt8.self)) }
            if value >= threshold { return value % upperBound }
        }
    }

    /// Fills `buffer` from `RAND_bytes`, aborting on failure.
    private static func fill(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        LibCrypto.prepare()
        var offset = 0
        while offset < buffer.count {
            let chunk = min(buffer.count - offset, Int(Int32.max))
            guard RAND_bytes(buffer.baseAddress! + offset, Int32(chunk)) == 1 else {
                fatalOpenSSLError("RAND_bytes")
            }
            offset += chunk
        }
    }
}
