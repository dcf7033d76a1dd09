/// A calendar date with no zone (a wall-calendar day in the alarm's zone), encoded in JSON as
/// `"YYYY-MM-DD"` (RFC 3339 `full-date`). Proleptic Gregorian; years 0000–9999 (four digits).
public struct LocalDate: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// Calendar year, 0…9999.
    public let year: Int
    /// Month, 1…12.
    public let month: Int
    /// Day of month, 1…28/29/30/31.
    public let day: Int

    /// The date, or nil when the fields do not name a real day (e.g. 2026-02-30) or the year is
    /// outside 0…9999.
    public init?(year: Int, month: Int, day: Int) {
        guard (0...9999).contains(year), (1...12).contains(month), day >= 1,
            day <= Int(CivilDate.daysInMonth(year: Int64(year), month: Int64(month)))
        else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// The date `daysSinceEpoch` days after 1970-01-01 (negative before it). Not range-checked: day
    /// numbers past 9999-12-31 give five-digit years, which only arithmetic near the limit produces.
    public init(daysSinceEpoch: Int64) {
        let (y, m, d) = CivilDate.fromDays(daysSinceEpoch)
        year = Int(y)
        month = Int(m)
        day = Int(d)
    }

    /// Days since 1970-01-01 (CivilDate day number).
    public var daysSinceEpoch: Int64 { CivilDate.toDays(year: Int64(year), month: Int64(month), day: Int64(day)) }

    /// ISO 8601 weekday: 1 = Monday … 7 = Sunday.
    public var isoWeekday: Int { Self.isoWeekday(ofDay: daysSinceEpoch) }

    /// ISO 8601 weekday (1 = Monday … 7 = Sunday) of a CivilDate day number; 1970-01-01 was a Thursday.
    public static func isoWeekday(ofDay days: Int64) -> Int {
        var r = (days + 3) % 7
        if r < 0 { r += 7 }
        return Int(r) + 1
    }

    /// Number of days in this date's month.
    public var daysInMonth: Int { Int(CivilDate.daysInMonth(year: Int64(year), month: Int64(month))) }

    /// The date `count` days later (earlier when negative).
    public func adding(days count: Int64) -> LocalDate { LocalDate(daysSinceEpoch: daysSinceEpoch + count) }

    public static func < (a: LocalDate, b: LocalDate) -> Bool {
        (a.year, a.month, a.day) < (b.year, b.month, b.day)
    }

    /// `YYYY-MM-DD`.
    public var description: String {
        func pad(_ v: Int, _ width: Int) -> String {
            let s = String(v)
            return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    /// Parses exactly `YYYY-MM-DD` naming a real day; nil for anything else.
    public init?(parsing text: String) {
        let b = Array(text.utf8)
        guard b.count == 10, b[4] == 45, b[7] == 45 else { return nil }
        func num(_ range: Range<Int>) -> Int? {
            var v = 0
            for i in range {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                v = v * 10 + Int(b[i] - 48)
            }
            return v
        }
        guard let y = num(0..<4), let m = num(5..<7), let d = num(8..<10) else { return nil }
        self.init(year: y, month: m, day: d)
    }

    public init(from decoder: any Decoder) throws {
        self = try TextCoding.decode(decoder, expected: "a date YYYY-MM-DD") { LocalDate(parsing: $0) }
    }

    public func encode(to encoder: any Encoder) throws { try TextCoding.encode(description, to: encoder) }
}
