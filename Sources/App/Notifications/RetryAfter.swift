import Wire

/// A provider's `Retry-After` (RFC 9110 §10.2.3: `HTTP-date / delay-seconds`) as a delay in
/// milliseconds from `now`. Pure: the caller passes `now`.
enum RetryAfter {
    /// Longest delay read from the header: a year, so that arithmetic on it cannot overflow (the
    /// dispatcher caps it far lower, `RetryPolicy.maxRetryAfterMilliseconds`).
    static let maxSeconds: Int64 = 365 * 86_400

    /// The delay `value` asks for, or nil when it is absent or neither form. Delay-seconds is digits
    /// only (no sign, no fraction) and is clamped to `maxSeconds`; a date in the past means "now" (0).
    /// Every sender parses the header here.
    static func milliseconds(_ value: String?, now: Int64) -> Int64? {
        guard let value else { return nil }
        let text = value.trimmingASCIISpaces
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            // Digits only: a value too long for Int64 is past the clamp anyway.
            let seconds = text.utf8.count > 12 ? maxSeconds : min(Int64(text) ?? maxSeconds, maxSeconds)
            return seconds * 1_000
        }
        guard let date = HTTPDate.parse(text) else { return nil }
        let delay = Int64(date) * 1_000 - now
        return min(max(delay, 0), maxSeconds * 1_000)
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (RFC 9110 §5.5 OWS).
    fileprivate var trimmingASCIISpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
