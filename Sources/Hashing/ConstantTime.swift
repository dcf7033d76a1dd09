import COpenSSL

/// Comparisons whose running time does not depend on the bytes compared.
public enum ConstantTime {
    /// True when `a` and `b` hold the same bytes. Lengths are not secret: a length mismatch returns
    /// false at once; equal lengths are compared with `CRYPTO_memcmp`.
    public static func equals(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withContiguousBytes { left in
            b.withContiguousBytes { right in
                CRYPTO_memcmp(left.baseAddress, right.baseAddress, left.count) == 0
            }
        }
    }
}
