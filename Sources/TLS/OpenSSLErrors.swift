import COpenSSL

/// The thread's OpenSSL error queue. libssl reports why a call failed there; the queue is per
/// thread and event loops share Dispatch's threads, so every engine call starts with `clear()` and
/// a failure is read (and cleared) at once.
enum OpenSSLErrors {
    /// Empties the calling thread's queue.
    static func clear() { ERR_clear_error() }

    /// The reason of the most recent error (e.g. `"wrong version number"`, `"http request"`), or
    /// `fallback` if the queue is empty; empties the queue.
    static func take(_ fallback: String) -> String {
        defer { ERR_clear_error() }
        let code = ERR_peek_last_error()
        guard code != 0 else { return fallback }
        if let reason = ERR_reason_error_string(code) { return String(cString: reason) }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// libssl failing where only an allocation can fail: no caller can recover.
func fatalTLSError(_ call: String) -> Never {
    fatalError("\(call) failed: \(OpenSSLErrors.take("no OpenSSL error recorded"))")
}
