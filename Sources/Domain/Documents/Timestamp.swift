/// An instant as epoch milliseconds that encodes in JSON as RFC 3339 UTC with milliseconds
/// (`2026-02-06T09:00:00.000Z`), per docs/design.md#api-conventions. Stored in SQLite as the integer `*_ms` value.
public struct Timestamp: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var milliseconds: Int64
    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.milliseconds < b.milliseconds }

    /// RFC 3339 text, e.g. `2026-02-06T09:00:00.000Z`.
    public var description: String { Self.format(milliseconds) }

    public init(from decoder: any Decoder) throws {
        milliseconds = try TextCoding.decode(decoder, expected: "an RFC 3339 timestamp", Self.parse)
    }

    public func encode(to encoder: any Encoder) throws { try TextCoding.encode(description, to: encoder) }

    /// UTC calendar fields of epoch milliseconds.
    public static func components(_ ms: Int64) -> (
        year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64, millisecond: Int64
    ) {
        let (secs, milli) = ms.quotientAndRemainderFloor(1000)
        let (days, secOfDay) = secs.quotientAndRemainderFloor(86_400)
        let (y, m, d) = CivilDate.fromDays(days)
        return (y, m, d, secOfDay / 3600, secOfDay / 60 % 60, secOfDay % 60, milli)
    }

    /// Formats epoch milliseconds as RFC 3339 UTC with exactly three fractional digits.
    public static func format(_ ms: Int64) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(24)
        append(ms, to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Appends the bytes of `format(ms)` to `out`, digit by digit (no intermediate strings: log lines
    /// write their time stamps through this too).
    public static func append(_ ms: Int64, to out: inout [UInt8]) {
        let (y, m, d, hour, minute, second, milli) = components(ms)
        appendPadded(y, width: 4, to: &out)
        // Field by field, not through an array of fields: every access-log line comes through here.
        out.append(0x2D)  // -
        appendPadded(m, width: 2, to: &out)
        out.append(0x2D)  // -
        appendPadded(d, width: 2, to: &out)
        out.append(0x54)  // T
        appendPadded(hour, width: 2, to: &out)
        out.append(0x3A)  // :
        appendPadded(minute, width: 2, to: &out)
        out.append(0x3A)  // :
        appendPadded(second, width: 2, to: &out)
        out.append(0x2E)  // .
        appendPadded(milli, width: 3, to: &out)
        out.append(0x5A)  // Z
    }

    /// `String(value)` left-padded with zeros to `width` characters (the sign, if any, after the zeros).
    private static func appendPadded(_ value: Int64, width: Int, to out: inout [UInt8]) {
        let magnitude = value.magnitude
        var divisor: UInt64 = 1
        var digits = 1
        while magnitude / divisor >= 10 {
            divisor *= 10
            digits += 1
        }
        let sign = value < 0 ? 1 : 0
        if width > digits + sign { out.append(contentsOf: repeatElement(0x30, count: width - digits - sign)) }
        if value < 0 { out.append(0x2D) }
        while divisor > 0 {
            out.append(0x30 + UInt8(magnitude / divisor % 10))
            divisor /= 10
        }
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)`; fractional digits beyond milliseconds are
    /// truncated. Returns nil for anything else.
    public static func parse(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        func num(_ from: Int, _ count: Int) -> Int64? {
            guard from + count <= b.count else { return nil }
            var v: Int64 = 0
            for i in from..<(from + count) {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                v = v * 10 + Int64(b[i] - 48)
            }
            return v
        }
        guard b.count >= 20, b[4] == 45, b[7] == 45, b[10] == 84 || b[10] == 116, b[13] == 58, b[16] == 58,
            let y = num(0, 4), let mo = num(5, 2), let d = num(8, 2),
            let h = num(11, 2), let mi = num(14, 2), let s = num(17, 2),
            (1...12).contains(mo), d >= 1, d <= CivilDate.daysInMonth(year: y, month: mo), h < 24, mi < 60, s < 60
        else { return nil }
        var i = 19
        var milli: Int64 = 0
        if i < b.count, b[i] == 46 {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if digits < 3 { milli = milli * 10 + Int64(b[i] - 48) }
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            if digits < 3 { for _ in digits..<3 { milli *= 10 } }
        }
        var offsetSeconds: Int64 = 0
        guard i < b.count else { return nil }
        if b[i] == 90 || b[i] == 122 {
            i += 1
        } else if b[i] == 43 || b[i] == 45, let oh = num(i + 1, 2), b.count > i + 3, b[i + 3] == 58,
            let om = num(i + 4, 2), oh < 24, om < 60
        {
            offsetSeconds = (oh * 3600 + om * 60) * (b[i] == 45 ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = CivilDate.toDays(year: y, month: mo, day: d)
        return ((days * 86_400 + h * 3600 + mi * 60 + s) - offsetSeconds) * 1000 + milli
    }
}

/// Proleptic Gregorian calendar arithmetic on day numbers (days since 1970-01-01), after
/// Howard Hinnant's `days_from_civil` / `civil_from_days`.
public enum CivilDate {
    /// Day number of the given civil date.
    public static func toDays(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Civil date of the given day number.
    public static func fromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    /// Whether `year` is a Gregorian leap year.
    public static func isLeap(_ year: Int64) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    /// Number of days in `month` (1–12) of `year`.
    public static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

extension Int64 {
    fileprivate func quotientAndRemainderFloor(_ d: Int64) -> (Int64, Int64) {
        var q = self / d
        var r = self % d
        if r < 0 {
            q -= 1
            r += d
        }
        return (q, r)
    }
}
