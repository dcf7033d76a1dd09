import Domain
import Testing

/// Builders shared by the schedule suites.
enum ScheduleFixture {
    static func ms(_ text: String) -> Int64 {
        guard let value = Timestamp.parse(text) else { preconditionFailure("bad timestamp \(text)") }
        return value
    }

    static func day(_ text: String) -> LocalDate {
        guard let value = LocalDate(parsing: text) else { preconditionFailure("bad date \(text)") }
        return value
    }

    static func time(_ hour: Int, _ minute: Int = 0) -> TimeOfDay {
        guard let value = TimeOfDay(hour: hour, minute: minute) else { preconditionFailure("bad time") }
        return value
    }

    static func timing(
        _ rule: Schedule.Rule, start: String, end: String? = nil, times: [TimeOfDay] = [time(9)],
        zone: String = "UTC"
    ) -> AlarmTiming {
        AlarmTiming(
            schedule: Schedule(rule, startDate: day(start), endDate: end.map(day)), timesOfDay: times, timezone: zone)
    }

    /// The next `count` fires strictly after `from`, each fed back in; stops early at nil.
    static func fires(_ timing: AlarmTiming, after from: String, count: Int) -> [String] {
        var out: [String] = []
        var cursor = ms(from)
        while out.count < count, let next = NextFire.after(cursor, timing: timing) {
            out.append(Timestamp.format(next))
            cursor = next
        }
        return out
    }
}

@Suite("Next fire (docs/design.md#next-fire) — month ends, relative weekdays, leap years, intervals")
struct NextFireCalendarTests {
    @Test("monthly on the 31st fires on the last day of Feb, Apr, Jun, Sep, Nov (common and leap year)")
    func thirtyFirst() {
        let timing = ScheduleFixture.timing(.monthlyDate(daysOfMonth: [31], interval: 1), start: "2026-01-01")
        #expect(
            ScheduleFixture.fires(timing, after: "2026-01-01T00:00:00Z", count: 12)
                == [
                    "2026-01-31", "2026-02-28", "2026-03-31", "2026-04-30", "2026-05-31", "2026-06-30",
                    "2026-07-31", "2026-08-31", "2026-09-30", "2026-10-31", "2026-11-30", "2026-12-31",
                ].map { $0 + "T09:00:00.000Z" })
        let leap = ScheduleFixture.timing(.monthlyDate(daysOfMonth: [30, 31], interval: 1), start: "2028-01-01")
        #expect(
            ScheduleFixture.fires(leap, after: "2028-01-31T00:00:00Z", count: 4) == [
                "2028-01-31T09:00:00.000Z", "2028-02-29T09:00:00.000Z", "2028-03-30T09:00:00.000Z",
                "2028-03-31T09:00:00.000Z",
            ])
    }

    @Test("last Friday is right for every month of 2026; week 5 means last too")
    func lastFriday() {
        let expected = [
            "2026-01-30", "2026-02-27", "2026-03-27", "2026-04-24", "2026-05-29", "2026-06-26",
            "2026-07-31", "2026-08-28", "2026-09-25", "2026-10-30", "2026-11-27", "2026-12-25",
        ].map { $0 + "T09:00:00.000Z" }
        for week in [-1, 5] {
            let timing = ScheduleFixture.timing(
                .monthlyRelative(weekOfMonth: week, dayOfWeek: 5, interval: 1), start: "2026-01-01")
            #expect(ScheduleFixture.fires(timing, after: "2025-12-31T00:00:00Z", count: 12) == expected)
        }
    }

    @Test("first, second, third and fourth weekday of a month")
    func nthWeekday() {
        // March 2026 starts on a Sunday.
        let expected = ["2026-03-02", "2026-03-09", "2026-03-16", "2026-03-23"]
        for (week, day) in zip(1...4, expected) {
            let timing = ScheduleFixture.timing(
                .monthlyRelative(weekOfMonth: week, dayOfWeek: 1, interval: 1), start: "2026-03-01")
            #expect(ScheduleFixture.fires(timing, after: "2026-03-01T00:00:00Z", count: 1) == [day + "T09:00:00.000Z"])
        }
        let firstSunday = ScheduleFixture.timing(
            .monthlyRelative(weekOfMonth: 1, dayOfWeek: 7, interval: 1), start: "2026-03-01")
        #expect(
            ScheduleFixture.fires(firstSunday, after: "2026-02-01T00:00:00Z", count: 2) == [
                "2026-03-01T09:00:00.000Z", "2026-04-05T09:00:00.000Z",
            ])
    }

    @Test("annual Feb 29 fires Feb 28 in common years and Feb 29 in leap years (2100 is common)")
    func leapDay() {
        let timing = ScheduleFixture.timing(.annual(month: 2, dayOfMonth: 29, interval: 1), start: "2024-01-01")
        #expect(
            ScheduleFixture.fires(timing, after: "2024-01-01T00:00:00Z", count: 5)
                == [
                    "2024-02-29", "2025-02-28", "2026-02-28", "2027-02-28", "2028-02-29",
                ].map { $0 + "T09:00:00.000Z" })
        let century = ScheduleFixture.timing(.annual(month: 2, dayOfMonth: 29, interval: 1), start: "2099-03-01")
        #expect(
            ScheduleFixture.fires(century, after: "2099-03-01T00:00:00Z", count: 2) == [
                "2100-02-28T09:00:00.000Z", "2101-02-28T09:00:00.000Z",
            ])
    }

    @Test("annual every 2 years counts from the start year; a date before start waits for the next period")
    func annualInterval() {
        let timing = ScheduleFixture.timing(.annual(month: 3, dayOfMonth: 15, interval: 2), start: "2026-06-01")
        #expect(
            ScheduleFixture.fires(timing, after: "2026-01-01T00:00:00Z", count: 2) == [
                "2028-03-15T09:00:00.000Z", "2030-03-15T09:00:00.000Z",
            ])
    }

    @Test("every 90 days crosses the year boundary from the start date")
    func ninetyDays() {
        let timing = ScheduleFixture.timing(.customDays(intervalDays: 90), start: "2025-11-01")
        #expect(
            ScheduleFixture.fires(timing, after: "2025-10-01T00:00:00Z", count: 6)
                == [
                    "2025-11-01", "2026-01-30", "2026-04-30", "2026-07-29", "2026-10-27", "2027-01-25",
                ].map { $0 + "T09:00:00.000Z" })
        // Asked mid-cycle, it stays on the start date's grid.
        #expect(ScheduleFixture.fires(timing, after: "2026-02-15T00:00:00Z", count: 1) == ["2026-04-30T09:00:00.000Z"])
    }

    @Test("biweekly counts ISO weeks (Monday first) from the week containing start_date")
    func biweekly() {
        // 2026-01-07 is a Wednesday: its week (Mon Jan 5) is active; Monday Jan 5 is before start.
        let timing = ScheduleFixture.timing(.weekly(daysOfWeek: [1, 3], interval: 2), start: "2026-01-07")
        #expect(
            ScheduleFixture.fires(timing, after: "2026-01-01T00:00:00Z", count: 5)
                == [
                    "2026-01-07", "2026-01-19", "2026-01-21", "2026-02-02", "2026-02-04",
                ].map { $0 + "T09:00:00.000Z" })
        // A Sunday start anchors to the Monday six days earlier.
        let sunday = ScheduleFixture.timing(.weekly(daysOfWeek: [7], interval: 3), start: "2026-01-11")
        #expect(
            ScheduleFixture.fires(sunday, after: "2026-01-11T10:00:00Z", count: 2) == [
                "2026-02-01T09:00:00.000Z", "2026-02-22T09:00:00.000Z",
            ])
    }

    @Test("interval months count from start_date's month; days before start wait a whole interval")
    func intervalMonths() {
        let quarterly = ScheduleFixture.timing(.monthlyDate(daysOfMonth: [15], interval: 3), start: "2026-01-20")
        #expect(
            ScheduleFixture.fires(quarterly, after: "2026-01-01T00:00:00Z", count: 3) == [
                "2026-04-15T09:00:00.000Z", "2026-07-15T09:00:00.000Z", "2026-10-15T09:00:00.000Z",
            ])
        let relative = ScheduleFixture.timing(
            .monthlyRelative(weekOfMonth: 2, dayOfWeek: 2, interval: 6), start: "2026-11-01")
        #expect(
            ScheduleFixture.fires(relative, after: "2026-11-01T00:00:00Z", count: 2) == [
                "2026-11-10T09:00:00.000Z", "2027-05-11T09:00:00.000Z",
            ])
    }

    @Test("several times a day fire in order; the instant itself is excluded")
    func timesOfDay() {
        let timing = ScheduleFixture.timing(
            .weekly(daysOfWeek: [1], interval: 1), start: "2026-01-05",
            times: [ScheduleFixture.time(18, 30), ScheduleFixture.time(7, 5)])
        #expect(
            ScheduleFixture.fires(timing, after: "2026-01-05T07:05:00Z", count: 3) == [
                "2026-01-05T18:30:00.000Z", "2026-01-12T07:05:00.000Z", "2026-01-12T18:30:00.000Z",
            ])
        #expect(
            NextFire.after(ScheduleFixture.ms("2026-01-05T07:04:59.999Z"), timing: timing)
                == ScheduleFixture.ms("2026-01-05T07:05:00Z"))
    }

    @Test("end_date is inclusive; past it there is no next fire")
    func endDate() {
        let timing = ScheduleFixture.timing(
            .weekly(daysOfWeek: [1, 5], interval: 1), start: "2026-01-01", end: "2026-01-12")
        #expect(
            ScheduleFixture.fires(timing, after: "2026-01-01T00:00:00Z", count: 10)
                == [
                    "2026-01-02", "2026-01-05", "2026-01-09", "2026-01-12",
                ].map { $0 + "T09:00:00.000Z" })
        #expect(NextFire.after(ScheduleFixture.ms("2030-01-01T00:00:00Z"), timing: timing) == nil)
    }

    @Test("one_time fires once, never before start, then has no next fire")
    func oneTime() {
        let timing = ScheduleFixture.timing(
            .oneTime(date: ScheduleFixture.day("2026-03-01")), start: "2026-03-01",
            times: [ScheduleFixture.time(8), ScheduleFixture.time(20)])
        #expect(
            ScheduleFixture.fires(timing, after: "2020-01-01T00:00:00Z", count: 5) == [
                "2026-03-01T08:00:00.000Z", "2026-03-01T20:00:00.000Z",
            ])
    }

    @Test("nothing fires before start_date, whatever the instant asked about")
    func beforeStart() {
        let timing = ScheduleFixture.timing(.customDays(intervalDays: 1), start: "2026-05-10")
        #expect(ScheduleFixture.fires(timing, after: "1999-01-01T00:00:00Z", count: 1) == ["2026-05-10T09:00:00.000Z"])
    }

    @Test("far from start_date the answer is found by interval arithmetic, not a day walk")
    func farFromStart() {
        let weekly = ScheduleFixture.timing(.weekly(daysOfWeek: [3], interval: 99), start: "1900-01-03")
        #expect(
            ScheduleFixture.fires(weekly, after: "2990-01-01T00:00:00Z", count: 2) == [
                "2990-12-29T09:00:00.000Z", "2992-11-21T09:00:00.000Z",
            ])
        let custom = ScheduleFixture.timing(.customDays(intervalDays: 3660), start: "1900-01-01")
        #expect(ScheduleFixture.fires(custom, after: "2990-01-01T00:00:00Z", count: 1) == ["2992-04-05T09:00:00.000Z"])
    }

    @Test("instants at the ends of Int64 are safe")
    func extremes() {
        let daily = ScheduleFixture.timing(.customDays(intervalDays: 1), start: "2026-01-01", zone: "America/New_York")
        #expect(NextFire.after(.min, timing: daily) == ScheduleFixture.ms("2026-01-01T14:00:00Z"))
        #expect(NextFire.after(.max, timing: daily) == nil)
        #expect(NextFire.after(NextFire.latestInstant + 1, timing: daily) == nil)
    }

    @Test("an unknown zone or no times of day yields no fire")
    func unusable() {
        #expect(
            NextFire.after(
                0,
                timing: ScheduleFixture.timing(
                    .customDays(intervalDays: 1), start: "2026-01-01",
                    zone: "Mars/Olympus")) == nil)
        #expect(
            NextFire.after(
                0,
                timing: ScheduleFixture.timing(
                    .customDays(intervalDays: 1), start: "2026-01-01",
                    times: [])) == nil)
    }
}

@Suite("Next fire (docs/design.md#next-fire) — DST and zone edge cases (gap: offset before applies; overlap: first instant)")
struct NextFireZoneTests {
    static let daily = Schedule.Rule.customDays(intervalDays: 1)

    @Test("America/New_York: 02:30 in the spring gap fires 03:30 EDT; 01:30 in the fall overlap fires once, EDT")
    func newYork() {
        let spring = ScheduleFixture.timing(
            Self.daily, start: "2026-03-07", times: [ScheduleFixture.time(2, 30)],
            zone: "America/New_York")
        #expect(
            ScheduleFixture.fires(spring, after: "2026-03-07T00:00:00Z", count: 3) == [
                "2026-03-07T07:30:00.000Z", "2026-03-08T07:30:00.000Z", "2026-03-09T06:30:00.000Z",
            ])
        let fall = ScheduleFixture.timing(
            Self.daily, start: "2026-10-31", times: [ScheduleFixture.time(1, 30)],
            zone: "America/New_York")
        #expect(
            ScheduleFixture.fires(fall, after: "2026-10-31T00:00:00Z", count: 3) == [
                "2026-10-31T05:30:00.000Z", "2026-11-01T05:30:00.000Z", "2026-11-02T06:30:00.000Z",
            ])
        // Asked between the two 01:30s, the next fire is the next day's, not the repeated wall time.
        #expect(
            NextFire.after(ScheduleFixture.ms("2026-11-01T05:45:00Z"), timing: fall)
                == ScheduleFixture.ms("2026-11-02T06:30:00Z"))
        // Times around the gap keep their order: 01:59, 02:00 → 03:00, 03:00 collapse into one fire.
        let edges = ScheduleFixture.timing(
            Self.daily, start: "2026-03-08",
            times: [ScheduleFixture.time(1, 59), ScheduleFixture.time(2, 0), ScheduleFixture.time(3, 0)],
            zone: "America/New_York")
        #expect(
            ScheduleFixture.fires(edges, after: "2026-03-08T00:00:00Z", count: 3) == [
                "2026-03-08T06:59:00.000Z", "2026-03-08T07:00:00.000Z", "2026-03-09T05:59:00.000Z",
            ])
    }

    @Test("Europe/London: 01:30 in the March gap fires 02:30 BST; 01:30 in the October overlap fires BST")
    func london() {
        let timing = ScheduleFixture.timing(
            .weekly(daysOfWeek: [7], interval: 1), start: "2026-03-01",
            times: [ScheduleFixture.time(1, 30)], zone: "Europe/London")
        #expect(
            ScheduleFixture.fires(timing, after: "2026-03-28T00:00:00Z", count: 2) == [
                "2026-03-29T01:30:00.000Z", "2026-04-05T00:30:00.000Z",
            ])
        #expect(
            ScheduleFixture.fires(timing, after: "2026-10-24T00:00:00Z", count: 2) == [
                "2026-10-25T00:30:00.000Z", "2026-11-01T01:30:00.000Z",
            ])
    }

    @Test("Australia/Lord_Howe: 30-minute DST — 02:15 in the gap fires 02:45 (+11); 01:45 in the overlap fires +11")
    func lordHowe() {
        let spring = ScheduleFixture.timing(
            Self.daily, start: "2026-10-03", times: [ScheduleFixture.time(2, 15)],
            zone: "Australia/Lord_Howe")
        #expect(
            ScheduleFixture.fires(spring, after: "2026-10-02T00:00:00Z", count: 3) == [
                "2026-10-02T15:45:00.000Z", "2026-10-03T15:45:00.000Z", "2026-10-04T15:15:00.000Z",
            ])
        let fall = ScheduleFixture.timing(
            Self.daily, start: "2026-04-04", times: [ScheduleFixture.time(1, 45)],
            zone: "Australia/Lord_Howe")
        #expect(
            ScheduleFixture.fires(fall, after: "2026-04-03T00:00:00Z", count: 3) == [
                "2026-04-03T14:45:00.000Z", "2026-04-04T14:45:00.000Z", "2026-04-05T15:15:00.000Z",
            ])
    }

    @Test("Asia/Kathmandu (+05:45): wall times convert with the quarter-hour offset; days follow local midnight")
    func kathmandu() {
        let timing = ScheduleFixture.timing(
            .weekly(daysOfWeek: [1], interval: 1), start: "2026-06-01",
            times: [ScheduleFixture.time(0, 10), ScheduleFixture.time(9)], zone: "Asia/Kathmandu")
        // Monday 00:10 +05:45 is Sunday 18:25Z.
        #expect(
            ScheduleFixture.fires(timing, after: "2026-06-07T18:00:00Z", count: 3) == [
                "2026-06-07T18:25:00.000Z", "2026-06-08T03:15:00.000Z", "2026-06-14T18:25:00.000Z",
            ])
    }

    @Test("Pacific/Apia skipped 2011-12-30: that day's 09:00 fires at 09:00 on the 31st, once")
    func apia() {
        let timing = ScheduleFixture.timing(Self.daily, start: "2011-12-28", zone: "Pacific/Apia")
        #expect(
            ScheduleFixture.fires(timing, after: "2011-12-28T00:00:00Z", count: 4) == [
                "2011-12-28T19:00:00.000Z", "2011-12-29T19:00:00.000Z", "2011-12-30T19:00:00.000Z",
                "2011-12-31T19:00:00.000Z",
            ])
        let onlySkippedDay = ScheduleFixture.timing(
            .oneTime(date: ScheduleFixture.day("2011-12-30")), start: "2011-12-30",
            zone: "Pacific/Apia")
        #expect(
            ScheduleFixture.fires(onlySkippedDay, after: "2011-12-01T00:00:00Z", count: 2) == [
                "2011-12-30T19:00:00.000Z"
            ])
    }

    @Test("America/Santiago changes at midnight: 00:30 in the gap fires 01:30 -03; 23:30 in the overlap fires -03")
    func santiago() {
        let spring = ScheduleFixture.timing(
            Self.daily, start: "2026-09-05", times: [ScheduleFixture.time(0, 30)],
            zone: "America/Santiago")
        #expect(
            ScheduleFixture.fires(spring, after: "2026-09-05T00:00:00Z", count: 3) == [
                "2026-09-05T04:30:00.000Z", "2026-09-06T04:30:00.000Z", "2026-09-07T03:30:00.000Z",
            ])
        let fall = ScheduleFixture.timing(
            Self.daily, start: "2026-04-04", times: [ScheduleFixture.time(23, 30)],
            zone: "America/Santiago")
        #expect(
            ScheduleFixture.fires(fall, after: "2026-04-04T00:00:00Z", count: 2) == [
                "2026-04-05T02:30:00.000Z", "2026-04-06T03:30:00.000Z",
            ])
    }

    @Test("changing an alarm's zone mid-cycle moves the next fire to the same wall time in the new zone")
    func zoneChange() {
        var timing = ScheduleFixture.timing(
            .monthlyDate(daysOfMonth: [1], interval: 1), start: "2026-01-01",
            zone: "America/New_York")
        let now = ScheduleFixture.ms("2026-02-10T00:00:00Z")
        #expect(NextFire.after(now, timing: timing) == ScheduleFixture.ms("2026-03-01T14:00:00Z"))
        timing.timezone = "Europe/London"
        #expect(NextFire.after(now, timing: timing) == ScheduleFixture.ms("2026-03-01T09:00:00Z"))
        timing.timezone = "Australia/Lord_Howe"
        #expect(NextFire.after(now, timing: timing) == ScheduleFixture.ms("2026-02-28T22:00:00Z"))
    }
}
