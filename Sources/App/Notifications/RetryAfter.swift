import Domain

/// `Retry-After` (RFC 9110 §10.2.3) as a delay: delta-seconds, or an HTTP-date in the IMF-fixdate
/// form (`Sun, 06 Nov 1994 08:49:37 GMT`, the only form a sender must generate) taken relative to
/// `now`. Pure; every sender parses the header here.
public enum RetryAfter {
    /// The delay in milliseconds the header asks for (≥ 0), or nil when absent or unparsable.
    public static func milliseconds(_ value: String?, now: Int64) -> Int64? {
        guard let value else { return nil }
        let text = value.split(separator: " ", omittingEmptySubsequences: true)
        if text.count == 1, let digits = text.first, digits.utf8.count <= 9, digits.utf8.allSatisfy(isDigit) {
            return Int64(digits).map { $0 * 1000 }
        }
        guard let instant = imfFixdate(text) else { return nil }
        return max(0, instant - now)
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Epoch ms of `[wkday,, DD, Mon, YYYY, hh:mm:ss, GMT]`; the weekday is not checked.
    private static func imfFixdate(_ parts: [Substring]) -> Int64? {
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT",
            parts[1].utf8.count == 2, let day = Int(parts[1]),
            let month = months.firstIndex(of: String(parts[2])),
            parts[3].utf8.count == 4, let year = Int(parts[3])
        else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, clock.allSatisfy({ $0.utf8.count == 2 && $0.utf8.allSatisfy(isDigit) }),
            let h = Int(clock[0]), let m = Int(clock[1]), let s = Int(clock[2]), h < 24, m < 60, s < 61,
            let date = LocalDate(year: year, month: month + 1, day: day)
        else { return nil }
        return (date.daysSinceEpoch * 86_400 + Int64(h * 3600 + m * 60 + s)) * 1000
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
}
