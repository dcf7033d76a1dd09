/// Validation of an alarm's timing (docs/design.md#schedules, docs/design.md#shared-alarms). Every failure is
/// `DomainError.invalidSchedule` naming the JSON field:
///
/// | field                     | rule                                                              |
/// | ------------------------- | ----------------------------------------------------------------- |
/// | `timezone`                | a known IANA zone (`AccountRules.validateTimezone`)               |
/// | `times_of_day`            | 1…5 distinct times, hour 0–23, minute 0–59                        |
/// | `schedule.days_of_week`   | non-empty, distinct, each 1–7                                     |
/// | `schedule.days_of_month`  | non-empty, distinct, each 1–31                                    |
/// | `schedule.week_of_month`  | 1–4, -1 (last) or 5 (last)                                        |
/// | `schedule.day_of_week`    | 1–7                                                               |
/// | `schedule.month`          | 1–12                                                              |
/// | `schedule.day_of_month`   | exists in that month in a leap year (Feb 29 yes, Feb 30 no)       |
/// | `schedule.interval`       | 1…`maxInterval`                                                   |
/// | `schedule.interval_days`  | 1…`maxIntervalDays`                                               |
/// | `schedule.start_date`     | year in `years`                                                   |
/// | `schedule.end_date`       | year in `years`, not before `start_date`                          |
/// | `schedule.date`           | year in `years`, not before `start_date`, some time still ahead   |
///
/// An `end_date` already past is not an error: the alarm is simply inactive (`NextFire` gives nil).
public enum ScheduleRules {
    /// At most this many `times_of_day` (docs/design.md#shared-alarms: at most 5).
    public static let maxTimesOfDay = 5
    /// Largest `interval` of weekly, monthly and annual rules: far past any real reminder cycle
    /// (99 weeks ≈ 2 years, 99 months ≈ 8 years, 99 years), and it keeps date arithmetic small.
    public static let maxInterval = 99
    /// Largest `interval_days` of `custom_days`: ten years.
    public static let maxIntervalDays = 3_660
    /// Dates (`start_date`, `end_date`, `date`) must lie in these years: zone data is meaningful and
    /// epoch milliseconds stay far from overflow.
    public static let years = 1900...2999

    /// Checks `timing`; `now` (epoch ms) is used only to reject a one-time alarm with no fire after it,
    /// unless `pastAllowed`. Checks run in field order (timezone, times_of_day, schedule) and the first
    /// failure is thrown.
    public static func validate(_ timing: AlarmTiming, now: Int64, pastAllowed: Bool = false) throws(DomainError) {
        do {
            _ = try AccountRules.validateTimezone(timing.timezone)
        } catch {
            throw .invalidSchedule(field: "timezone", message: "timezone is not a known IANA zone")
        }
        try validateTimes(timing.timesOfDay)
        try validate(timing.schedule)
        if !pastAllowed, case .oneTime = timing.schedule.rule, NextFire.after(now, timing: timing) == nil {
            throw .invalidSchedule(field: "schedule.date", message: "schedule.date is in the past")
        }
    }

    /// Checks `times_of_day`: 1…5 distinct times, each hour 0–23 and minute 0–59.
    public static func validateTimes(_ times: [TimeOfDay]) throws(DomainError) {
        guard !times.isEmpty, times.count <= maxTimesOfDay else {
            throw .invalidSchedule(field: "times_of_day", message: "times_of_day needs 1 to \(maxTimesOfDay) times")
        }
        guard times.allSatisfy({ (0...23).contains($0.hour) && (0...59).contains($0.minute) }) else {
            throw .invalidSchedule(field: "times_of_day", message: "times_of_day needs hour 0–23 and minute 0–59")
        }
        guard Set(times).count == times.count else {
            throw .invalidSchedule(field: "times_of_day", message: "times_of_day must not repeat a time")
        }
    }

    /// Checks a schedule's rule fields and date bounds (no clock needed).
    public static func validate(_ schedule: Schedule) throws(DomainError) {
        try checkYear(schedule.startDate, "start_date")
        switch schedule.rule {
        case .weekly(let days, let interval):
            try checkDays(days, 1...7, "days_of_week")
            try checkInterval(interval)
        case .monthlyDate(let days, let interval):
            try checkDays(days, 1...31, "days_of_month")
            try checkInterval(interval)
        case .monthlyRelative(let week, let weekday, let interval):
            guard [1, 2, 3, 4, 5, -1].contains(week) else {
                throw .invalidSchedule(
                    field: "schedule.week_of_month",
                    message: "schedule.week_of_month must be 1–4, or -1 (or 5) for last")
            }
            guard (1...7).contains(weekday) else {
                throw .invalidSchedule(
                    field: "schedule.day_of_week", message: "schedule.day_of_week must be 1 (Monday) to 7 (Sunday)")
            }
            try checkInterval(interval)
        case .annual(let month, let day, let interval):
            guard (1...12).contains(month) else {
                throw .invalidSchedule(field: "schedule.month", message: "schedule.month must be 1–12")
            }
            // Feb 29 is allowed (fires Feb 28 in common years); Feb 30 or Apr 31 never exist.
            guard day >= 1, day <= CivilDate.daysInMonth(year: 2000, month: Int64(month)) else {
                throw .invalidSchedule(
                    field: "schedule.day_of_month", message: "schedule.day_of_month does not exist in that month")
            }
            try checkInterval(interval)
        case .customDays(let days):
            guard (1...maxIntervalDays).contains(days) else {
                throw .invalidSchedule(
                    field: "schedule.interval_days", message: "schedule.interval_days must be 1–\(maxIntervalDays)")
            }
        case .oneTime(let date):
            try checkYear(date, "date")
            guard date >= schedule.startDate else {
                throw .invalidSchedule(field: "schedule.date", message: "schedule.date is before schedule.start_date")
            }
        }
        if let end = schedule.endDate {
            try checkYear(end, "end_date")
            guard end >= schedule.startDate else {
                throw .invalidSchedule(
                    field: "schedule.end_date", message: "schedule.end_date is before schedule.start_date")
            }
        }
    }

    private static func checkYear(_ date: LocalDate, _ key: String) throws(DomainError) {
        guard years.contains(date.year) else {
            throw .invalidSchedule(
                field: "schedule." + key,
                message: "schedule.\(key) must be in the years \(years.lowerBound)–\(years.upperBound)")
        }
    }

    private static func checkDays(_ days: [Int], _ range: ClosedRange<Int>, _ key: String) throws(DomainError) {
        let field = "schedule." + key
        guard !days.isEmpty else { throw .invalidSchedule(field: field, message: "\(field) must not be empty") }
        guard days.allSatisfy(range.contains) else {
            throw .invalidSchedule(
                field: field, message: "\(field) entries must be \(range.lowerBound)–\(range.upperBound)")
        }
        guard Set(days).count == days.count else {
            throw .invalidSchedule(field: field, message: "\(field) must not repeat a day")
        }
    }

    private static func checkInterval(_ interval: Int) throws(DomainError) {
        guard (1...maxInterval).contains(interval) else {
            throw .invalidSchedule(field: "schedule.interval", message: "schedule.interval must be 1–\(maxInterval)")
        }
    }
}
