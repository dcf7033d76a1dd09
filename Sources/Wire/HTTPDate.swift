/// The HTTP date format (RFC 9110 §5.6.7).
public enum HTTPDate {
    /// IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT", from seconds since the epoch (UTC).
    /// Pure: no clock. The shell caches the result per second.
    public static func format(epochSeconds: Int) -> String {
        let days = epochSeconds >= 0 ? epochSeconds / 86_400 : (epochSeconds - 86_399) / 86_400
        let secondOfDay = epochSeconds - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        let weekday = ((days + 4) % 7 + 7) % 7  // 1970-01-01 was a Thursday; 0 = Sunday

        var out: [UInt8] = []
        out.reserveCapacity(29)
        out.append(contentsOf: dayNames[weekday].utf8)
        out.append(contentsOf: ", ".utf8)
        appendDigits(day, width: 2, to: &out)
        out.append(ASCII.sp)
        out.append(contentsOf: monthNames[month - 1].utf8)
        out.append(ASCII.sp)
        appendDigits(year, width: 4, to: &out)
        out.append(ASCII.sp)
        appendDigits(secondOfDay / 3600, width: 2, to: &out)
        out.append(ASCII.colon)
        appendDigits(secondOfDay / 60 % 60, width: 2, to: &out)
        out.append(ASCII.colon)
        appendDigits(secondOfDay % 60, width: 2, to: &out)
        out.append(contentsOf: " GMT".utf8)
        return String(decoding: out, as: UTF8.self)
    }

    private static let dayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Proleptic Gregorian (year, month 1–12, day 1–31) of a day count since 1970-01-01
    /// (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms", civil_from_days).
    static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func appendDigits(_ value: Int, width: Int, to out: inout [UInt8]) {
        let first = out.count
        var rest = max(value, 0)
        repeat {
            out.append(0x30 + UInt8(rest % 10))
            rest /= 10
        } while rest > 0 || out.count - first < width
        out[first...].reverse()
    }
}
