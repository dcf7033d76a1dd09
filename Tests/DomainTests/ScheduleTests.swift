import Domain
import Testing

@Suite("Schedule JSON (docs/design.md#schedules)")
struct ScheduleCodingTests {
    @Test(
        "every schedule type round-trips through its JSON shape",
        arguments: [
            #"{"days_of_week":[1,3,5],"end_date":null,"interval":2,"start_date":"2026-01-05","type":"weekly"}"#,
            #"{"days_of_month":[1,31],"end_date":"2027-01-01","interval":3,"start_date":"2026-01-01","type":"monthly_date"}"#,
            #"{"day_of_week":5,"end_date":null,"interval":1,"start_date":"2026-01-01","type":"monthly_relative","week_of_month":-1}"#,
            #"{"day_of_month":29,"end_date":null,"interval":1,"month":2,"start_date":"2024-01-01","type":"annual"}"#,
            #"{"end_date":null,"interval_days":90,"start_date":"2026-01-15","type":"custom_days"}"#,
            #"{"date":"2026-03-01","end_date":null,"start_date":"2026-02-01","type":"one_time"}"#,
        ])
    func roundTrip(json: String) throws {
        let schedule = try DocumentCoding.decode(Schedule.self, from: Array(json.utf8))
        #expect(String(decoding: DocumentCoding.encode(schedule), as: UTF8.self) == json)
    }

    @Test("decodes the product's examples: legacy day_of_month, week 5 = last, default interval and start")
    func legacy() throws {
        func decode(_ json: String) throws -> Schedule {
            try DocumentCoding.decode(Schedule.self, from: Array(json.utf8))
        }
        let start = ScheduleFixture.day("2026-01-01")
        #expect(
            try decode(#"{"type":"monthly_date","day_of_month":15,"start_date":"2026-01-01"}"#)
                == Schedule(.monthlyDate(daysOfMonth: [15], interval: 1), startDate: start))
        #expect(
            try decode(
                #"{"type":"monthly_relative","week_of_month":5,"day_of_week":5,"interval":1,"start_date":"2026-01-01"}"#
            )
                == Schedule(.monthlyRelative(weekOfMonth: -1, dayOfWeek: 5, interval: 1), startDate: start))
        #expect(
            try decode(#"{"type":"one_time","date":"2026-03-01"}"#)
                == Schedule(
                    .oneTime(date: ScheduleFixture.day("2026-03-01")), startDate: ScheduleFixture.day("2026-03-01")))
        #expect(
            try decode(#"{"type":"weekly","days_of_week":[1],"start_date":"2026-01-01","end_date":null}"#)
                == Schedule(.weekly(daysOfWeek: [1], interval: 1), startDate: start))
    }

    @Test(
        "decoding errors name the key",
        arguments: [
            (#"{"type":"hourly","start_date":"2026-01-01"}"#, "type"),
            (#"{"days_of_week":[1],"start_date":"2026-01-01"}"#, "type"),
            (#"{"type":"weekly","start_date":"2026-01-01"}"#, "days_of_week"),
            (#"{"type":"weekly","days_of_week":"mon","start_date":"2026-01-01"}"#, "days_of_week"),
            (#"{"type":"monthly_date","start_date":"2026-01-01"}"#, "days_of_month"),
            (#"{"type":"custom_days","interval_days":90}"#, "start_date"),
            (#"{"type":"custom_days","interval_days":90,"start_date":"2026-02-30"}"#, "start_date"),
            (#"{"type":"custom_days","interval_days":90,"start_date":"2026-01-01","end_date":"soon"}"#, "end_date"),
            (#"{"type":"annual","month":2,"start_date":"2026-01-01"}"#, "day_of_month"),
        ])
    func namesKey(json: String, key: String) {
        do {
            _ = try DocumentCoding.decode(Schedule.self, from: Array(json.utf8))
            Issue.record("decoded \(json)")
        } catch let error as DecodingError {
            #expect(Self.key(error) == key)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    static func key(_ error: DecodingError) -> String? {
        switch error {
        case .keyNotFound(let key, _): key.stringValue
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            context.codingPath.last?.stringValue
        @unknown default: nil
        }
    }

    /// The part of an alarm body that carries its timing, as an App request type would declare it.
    struct AlarmBody: Decodable {
        var schedule: Schedule
        var timesOfDay: [TimeOfDay]
        enum CodingKeys: String, CodingKey {
            case schedule
            case timesOfDay = "times_of_day"
        }
    }

    @Test(
        "inside an alarm body the coding path spells the dotted field the App reports",
        arguments: [
            (
                #"{"schedule":{"type":"weekly","days_of_week":[1,"x"],"start_date":"2026-01-01"},"times_of_day":[]}"#,
                "schedule.days_of_week.1"
            ),
            (#"{"schedule":{"type":"nope","start_date":"2026-01-01"},"times_of_day":[]}"#, "schedule.type"),
            (#"{"schedule":{"type":"one_time","date":"2026-13-01"},"times_of_day":[]}"#, "schedule.date"),
            (
                #"{"schedule":{"type":"one_time","date":"2026-12-01"},"times_of_day":[{"hour":9,"minute":60}]}"#,
                "times_of_day.0.minute"
            ),
            (
                #"{"schedule":{"type":"one_time","date":"2026-12-01"},"times_of_day":[{"hour":9}]}"#,
                "times_of_day.0.minute"
            ),
        ])
    func nestedPath(json: String, path: String) {
        do {
            _ = try DocumentCoding.decode(AlarmBody.self, from: Array(json.utf8))
            Issue.record("decoded \(json)")
        } catch let error as DecodingError {
            var keys: [any CodingKey] = []
            switch error {
            case .keyNotFound(let key, let context): keys = context.codingPath + [key]
            case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
                keys = context.codingPath
            @unknown default: break
            }
            #expect(keys.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".") == path)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("times of day and dates have strict text forms")
    func valueForms() throws {
        #expect(
            String(decoding: DocumentCoding.encode(ScheduleFixture.time(7, 5)), as: UTF8.self)
                == #"{"hour":7,"minute":5}"#)
        #expect(
            try DocumentCoding.decode(TimeOfDay.self, from: Array(#"{"hour":23,"minute":59}"#.utf8))
                == ScheduleFixture.time(23, 59))
        #expect(throws: DecodingError.self) {
            try DocumentCoding.decode(TimeOfDay.self, from: Array(#"{"hour":24,"minute":0}"#.utf8))
        }
        #expect(TimeOfDay(parsing: "09:30") == ScheduleFixture.time(9, 30))
        for bad in ["9:30", "24:00", "09:60", "09-30", "0930 "] { #expect(TimeOfDay(parsing: bad) == nil) }
        #expect(LocalDate(parsing: "2024-02-29")?.isoWeekday == 4)
        for bad in ["2025-02-29", "2026-1-01", "2026-01-01T", "20260101", "2026-00-10", "2026-04-31"] {
            #expect(LocalDate(parsing: bad) == nil)
        }
        #expect(LocalDate(daysSinceEpoch: 0).description == "1970-01-01")
        #expect(ScheduleFixture.day("2026-12-31").adding(days: 1) == ScheduleFixture.day("2027-01-01"))
    }
}

@Suite("Schedule validation names the field")
struct ScheduleRulesTests {
    static let now = ScheduleFixture.ms("2026-06-01T12:00:00Z")

    static func failure(_ timing: AlarmTiming) -> String? {
        do {
            try ScheduleRules.validate(timing, now: now)
            return nil
        } catch {
            guard case .invalidSchedule(let field, _) = error else { return "unexpected \(error)" }
            return field
        }
    }

    @Test("valid timings of every type pass")
    func valid() {
        let rules: [Schedule.Rule] = [
            .weekly(daysOfWeek: [1, 7], interval: 99), .monthlyDate(daysOfMonth: [1, 31], interval: 1),
            .monthlyRelative(weekOfMonth: -1, dayOfWeek: 7, interval: 12),
            .monthlyRelative(weekOfMonth: 5, dayOfWeek: 1, interval: 1), .annual(month: 2, dayOfMonth: 29, interval: 1),
            .customDays(intervalDays: 3660), .oneTime(date: ScheduleFixture.day("2026-06-01")),
        ]
        for rule in rules {
            let timing = ScheduleFixture.timing(
                rule, start: "2026-06-01", end: "2026-12-31",
                times: [
                    ScheduleFixture.time(0), ScheduleFixture.time(6), ScheduleFixture.time(12),
                    ScheduleFixture.time(18), ScheduleFixture.time(23, 59),
                ],
                zone: "Europe/London")
            #expect(Self.failure(timing) == nil, "\(rule)")
        }
    }

    @Test(
        "each invalid case names its field",
        arguments: [
            (
                ScheduleFixture.timing(.customDays(intervalDays: 1), start: "2026-06-01", zone: "Mars/Olympus"),
                "timezone"
            ),
            (ScheduleFixture.timing(.customDays(intervalDays: 1), start: "2026-06-01", zone: ""), "timezone"),
            (ScheduleFixture.timing(.customDays(intervalDays: 1), start: "2026-06-01", times: []), "times_of_day"),
            (
                ScheduleFixture.timing(
                    .customDays(intervalDays: 1), start: "2026-06-01",
                    times: (0..<6).map { ScheduleFixture.time($0) }), "times_of_day"
            ),
            (
                ScheduleFixture.timing(
                    .customDays(intervalDays: 1), start: "2026-06-01",
                    times: [ScheduleFixture.time(9), ScheduleFixture.time(9)]), "times_of_day"
            ),
            (
                ScheduleFixture.timing(.weekly(daysOfWeek: [], interval: 1), start: "2026-06-01"),
                "schedule.days_of_week"
            ),
            (
                ScheduleFixture.timing(.weekly(daysOfWeek: [0], interval: 1), start: "2026-06-01"),
                "schedule.days_of_week"
            ),
            (
                ScheduleFixture.timing(.weekly(daysOfWeek: [8], interval: 1), start: "2026-06-01"),
                "schedule.days_of_week"
            ),
            (
                ScheduleFixture.timing(.weekly(daysOfWeek: [2, 2], interval: 1), start: "2026-06-01"),
                "schedule.days_of_week"
            ),
            (ScheduleFixture.timing(.weekly(daysOfWeek: [1], interval: 0), start: "2026-06-01"), "schedule.interval"),
            (ScheduleFixture.timing(.weekly(daysOfWeek: [1], interval: 100), start: "2026-06-01"), "schedule.interval"),
            (
                ScheduleFixture.timing(.monthlyDate(daysOfMonth: [32], interval: 1), start: "2026-06-01"),
                "schedule.days_of_month"
            ),
            (
                ScheduleFixture.timing(.monthlyDate(daysOfMonth: [0], interval: 1), start: "2026-06-01"),
                "schedule.days_of_month"
            ),
            (
                ScheduleFixture.timing(.monthlyDate(daysOfMonth: [], interval: 1), start: "2026-06-01"),
                "schedule.days_of_month"
            ),
            (
                ScheduleFixture.timing(.monthlyDate(daysOfMonth: [1], interval: -1), start: "2026-06-01"),
                "schedule.interval"
            ),
            (
                ScheduleFixture.timing(
                    .monthlyRelative(weekOfMonth: 0, dayOfWeek: 1, interval: 1), start: "2026-06-01"),
                "schedule.week_of_month"
            ),
            (
                ScheduleFixture.timing(
                    .monthlyRelative(weekOfMonth: 6, dayOfWeek: 1, interval: 1), start: "2026-06-01"),
                "schedule.week_of_month"
            ),
            (
                ScheduleFixture.timing(
                    .monthlyRelative(weekOfMonth: -2, dayOfWeek: 1, interval: 1), start: "2026-06-01"),
                "schedule.week_of_month"
            ),
            (
                ScheduleFixture.timing(
                    .monthlyRelative(weekOfMonth: 1, dayOfWeek: 0, interval: 1), start: "2026-06-01"),
                "schedule.day_of_week"
            ),
            (
                ScheduleFixture.timing(
                    .monthlyRelative(weekOfMonth: 1, dayOfWeek: 1, interval: 0), start: "2026-06-01"),
                "schedule.interval"
            ),
            (
                ScheduleFixture.timing(.annual(month: 13, dayOfMonth: 1, interval: 1), start: "2026-06-01"),
                "schedule.month"
            ),
            (
                ScheduleFixture.timing(.annual(month: 2, dayOfMonth: 30, interval: 1), start: "2026-06-01"),
                "schedule.day_of_month"
            ),
            (
                ScheduleFixture.timing(.annual(month: 4, dayOfMonth: 31, interval: 1), start: "2026-06-01"),
                "schedule.day_of_month"
            ),
            (
                ScheduleFixture.timing(.annual(month: 1, dayOfMonth: 1, interval: 0), start: "2026-06-01"),
                "schedule.interval"
            ),
            (ScheduleFixture.timing(.customDays(intervalDays: 0), start: "2026-06-01"), "schedule.interval_days"),
            (ScheduleFixture.timing(.customDays(intervalDays: 3661), start: "2026-06-01"), "schedule.interval_days"),
            (
                ScheduleFixture.timing(.customDays(intervalDays: 1), start: "2026-06-01", end: "2026-05-31"),
                "schedule.end_date"
            ),
            (ScheduleFixture.timing(.customDays(intervalDays: 1), start: "1899-12-31"), "schedule.start_date"),
            (
                ScheduleFixture.timing(.customDays(intervalDays: 1), start: "2026-06-01", end: "3000-01-01"),
                "schedule.end_date"
            ),
            (
                ScheduleFixture.timing(.oneTime(date: ScheduleFixture.day("2026-05-31")), start: "2026-05-31"),
                "schedule.date"
            ),
            (
                ScheduleFixture.timing(
                    .oneTime(date: ScheduleFixture.day("2026-06-01")), start: "2026-06-01",
                    times: [ScheduleFixture.time(12)]),
                "schedule.date"
            ),
            (
                ScheduleFixture.timing(.oneTime(date: ScheduleFixture.day("2026-06-05")), start: "2026-06-06"),
                "schedule.date"
            ),
        ])
    func namesField(timing: AlarmTiming, field: String) {
        #expect(Self.failure(timing) == field)
    }

    @Test("a one-time alarm later today is not in the past; the zone decides what today is")
    func oneTimeToday() {
        let date = ScheduleFixture.day("2026-06-01")
        #expect(
            Self.failure(
                ScheduleFixture.timing(.oneTime(date: date), start: "2026-06-01", times: [ScheduleFixture.time(12, 1)]))
                == nil)
        // 12:00Z is 08:00 in New York: 09:00 there is still ahead; in Kathmandu (17:45) it is gone.
        #expect(
            Self.failure(ScheduleFixture.timing(.oneTime(date: date), start: "2026-06-01", zone: "America/New_York"))
                == nil)
        #expect(
            Self.failure(ScheduleFixture.timing(.oneTime(date: date), start: "2026-06-01", zone: "Asia/Kathmandu"))
                == "schedule.date")
    }
}
