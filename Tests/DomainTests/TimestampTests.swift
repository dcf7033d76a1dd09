import Domain
import Testing

@Suite("Timestamp — RFC 3339 with milliseconds (docs/design.md#api-conventions)")
struct TimestampTests {
    @Test(
        "formats epoch milliseconds as UTC with three fractional digits",
        arguments: [
            (Int64(0), "1970-01-01T00:00:00.000Z"),
            (1_770_368_400_000, "2026-02-06T09:00:00.000Z"),
            (951_782_400_123, "2000-02-29T00:00:00.123Z"),
            (-1, "1969-12-31T23:59:59.999Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
        ])
    func format(ms: Int64, text: String) {
        #expect(Timestamp.format(ms) == text)
        #expect(Timestamp.parse(text) == ms)
    }

    @Test("parses offsets, lowercase separators and short or long fractions")
    func parseVariants() {
        #expect(Timestamp.parse("2026-02-06T10:00:00+01:00") == 1_770_368_400_000)
        #expect(Timestamp.parse("2026-02-06t09:00:00z") == 1_770_368_400_000)
        #expect(Timestamp.parse("2026-02-06T09:00:00.5Z") == 1_770_368_400_500)
        #expect(Timestamp.parse("2026-02-06T09:00:00.123456Z") == 1_770_368_400_123)
        #expect(Timestamp.parse("2026-02-06T03:15:00-05:45") == 1_770_368_400_000)
    }

    @Test(
        "rejects malformed text",
        arguments: [
            "", "2026-02-06", "2026-02-06T09:00:00", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
            "2025-02-29T00:00:00Z", "2026-02-06T24:00:00Z", "2026-02-06T09:00:00.Z", "2026-02-06T09:00:00Zjunk",
            "2026-02-06 09:00:00Z", "2026-02-06T09:00:00+0100",
        ])
    func rejects(text: String) {
        #expect(Timestamp.parse(text) == nil)
    }

    @Test("round-trips every day boundary across four centuries")
    func civilRoundTrip() {
        var days = CivilDate.toDays(year: 1900, month: 1, day: 1)
        let end = CivilDate.toDays(year: 2300, month: 1, day: 1)
        var expected = (year: Int64(1900), month: Int64(1), day: Int64(1))
        while days < end {
            let civil = CivilDate.fromDays(days)
            #expect(civil == expected)
            if civil != expected { return }
            expected.day += 1
            if expected.day > CivilDate.daysInMonth(year: expected.year, month: expected.month) {
                expected.day = 1
                expected.month += 1
                if expected.month > 12 {
                    expected.month = 1
                    expected.year += 1
                }
            }
            days += 1
        }
    }
}
