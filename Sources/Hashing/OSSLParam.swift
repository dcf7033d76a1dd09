import COpenSSL

/// Helpers for building `OSSL_PARAM` arrays by hand.
enum OSSLParam {
    /// A NUL-terminated C string for a static OSSL_PARAM key or value; static strings live for the
    /// whole program, so the pointer stays valid inside an OSSL_PARAM.
    static func cString(_ key: StaticString) -> UnsafeMutablePointer<CChar> {
        precondition(key.hasPointerRepresentation)
        return UnsafeMutableRawPointer(mutating: key.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// An octet-string parameter over `buffer` (OpenSSL only reads it).
    static func octets(_ key: StaticString, _ buffer: UnsafeBufferPointer<UInt8>) -> OSSL_PARAM {
        OSSL_PARAM_construct_octet_string(cString(key), UnsafeMutableRawPointer(mutating: buffer.baseAddress), buffer.count)
    }
}
