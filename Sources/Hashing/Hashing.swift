// Hashing module: digests, HMAC, CSPRNG, scrypt, constant-time compare and base64/hex encodings;
// HKDF, AES-128-GCM and P-256 (ECDH, ECDSA, PEM) for Web Push, VAPID and APNs tokens.
// The only user of COpenSSL (libcrypto). See docs/architecture.md.

import COpenSSL

extension Collection<UInt8> {
    /// Calls `body` with the collection's bytes in contiguous memory, copying only when needed.
    /// The buffer's base address is never nil (an empty collection gets a one-byte dummy buffer
    /// with count 0), so it can be handed to C functions that reject NULL.
    func withContiguousBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if isEmpty {
            var dummy: UInt8 = 0
            return try withUnsafePointer(to: &dummy) { try body(UnsafeBufferPointer(start: $0, count: 0)) }
        }
        if let result = try withContiguousStorageIfAvailable({ buffer in try body(buffer) }) {
            return result
        }
        return try Array(self).withUnsafeBufferPointer { try body($0) }
    }
}

/// Aborts with the OpenSSL error queue's latest message; libcrypto failing on valid input means
/// the process cannot do cryptography safely, so there is nothing sensible to continue with.
func fatalOpenSSLError(_ call: String) -> Never {
    let code = ERR_get_error()
    var text = [CChar](repeating: 0, count: 256)
    ERR_error_string_n(code, &text, text.count)
    let message = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    fatalError("OpenSSL \(call) failed: \(message)")
}
