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

    /// Seconds since the epoch of an HTTP-date (RFC 9110 §5.6.7), or nil. Accepts the three formats
    /// a recipient MUST: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), obsolete RFC 850
    /// (`Sunday, 06-Nov-94 08:49:37 GMT`; a two-digit year below 70 is 20xx, else 19xx — fixed
    /// instead of RFC 9110's "within 50 years of now", so the function needs no clock) and asctime
    /// (`Sun Nov  6 08:49:37 1994`). The weekday name must be valid but is not checked against the
    /// date; a leap second (:60) counts as :59.
    public static func parse(_ text: String) -> Int? {
        let words = text.split(separator: " ", omittingEmptySubsequences: true)
        let day: Int
        let month: Int
        let year: Int
        let time: Substring
        if words.count == 6, words[0].hasSuffix(","), words[5] == "GMT" {
            // IMF-fixdate: day-name "," SP DD SP Mon SP YYYY SP hh:mm:ss SP GMT
            guard dayNames.contains(String(words[0].dropLast())), words[1].count == 2, let d = number(words[1]),
                let m = monthNames.firstIndex(of: String(words[2])), words[3].count == 4, let y = number(words[3])
            else { return nil }
            (day, month, year, time) = (d, m + 1, y, words[4])
        } else if words.count == 4, words[0].hasSuffix(","), words[3] == "GMT" {
            // RFC 850: long-day-name "," SP DD-Mon-YY SP hh:mm:ss SP GMT
            let parts = words[1].split(separator: "-", omittingEmptySubsequences: false)
            guard longDayNames.contains(String(words[0].dropLast())), parts.count == 3, parts[0].count == 2,
                let d = number(parts[0]), let m = monthNames.firstIndex(of: String(parts[1])), parts[2].count == 2,
                let yy = number(parts[2])
            else { return nil }
            (day, month, year, time) = (d, m + 1, yy < 70 ? 2000 + yy : 1900 + yy, words[2])
        } else if words.count == 5 {
            // asctime: day-name SP Mon SP ( 2DIGIT / SP 1DIGIT ) SP hh:mm:ss SP YYYY
            guard dayNames.contains(String(words[0])), let m = monthNames.firstIndex(of: String(words[1])),
                (1...2).contains(words[2].count), let d = number(words[2]), words[4].count == 4, let y = number(words[4])
            else { return nil }
            (day, month, year, time) = (d, m + 1, y, words[3])
        } else {
            return nil
        }
        let clock = time.split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 }),
            let hour = number(clock[0]), let minute = number(clock[1]), let second = number(clock[2]),
            hour < 24, minute < 60, second <= 60,
            (1...31).contains(day), day <= daysIn(month: month, year: year)
        else { return nil }
        return days(fromCivil: year, month, day) * 86_400 + hour * 3_600 + minute * 60 + min(second, 59)
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

    private static let longDayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant, days_from_civil).
    static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// A run of ASCII digits as a number (no sign, no spaces), or nil.
    private static func number(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.count <= 4, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
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
