/// When an alarm repeats: a recurrence rule anchored at `startDate`, optionally ending at `endDate`
/// (docs/design.md#schedules). Dates are wall-calendar days in the alarm's
/// zone; the times of day and the zone live beside the schedule (`AlarmTiming`).
///
/// JSON (snake_case; `type` selects the shape; `start_date` is required except for `one_time`, where it
/// defaults to `date`; `end_date` is optional, inclusive, and always encoded, as `null` when absent;
/// `interval` defaults to 1 when absent):
///
/// ```json
/// {"type": "weekly",           "days_of_week": [1, 3, 5], "interval": 2, "start_date": "2026-01-05", "end_date": null}
/// {"type": "monthly_date",     "days_of_month": [1, 31],  "interval": 3, "start_date": "2026-01-01", "end_date": null}
/// {"type": "monthly_relative", "week_of_month": -1, "day_of_week": 5, "interval": 1, "start_date": "2026-01-01", "end_date": null}
/// {"type": "annual",           "month": 2, "day_of_month": 29, "interval": 1, "start_date": "2024-01-01", "end_date": null}
/// {"type": "custom_days",      "interval_days": 90, "start_date": "2026-01-15", "end_date": null}
/// {"type": "one_time",         "date": "2026-03-01", "start_date": "2026-03-01", "end_date": null}
/// ```
///
/// Decoding also reads the legacy `"day_of_month": 15` of `monthly_date` as `days_of_month: [15]`, and
/// `week_of_month: 5` ("5 = last" in one product document, docs/design.md#schedules) as `-1`. Decoding checks JSON types and date syntax
/// only; value ranges are `ScheduleRules.validate`'s job, so each range error names its field.
public struct Schedule: Sendable, Equatable {
    /// The recurrence rule.
    public var rule: Rule
    /// First local day that may fire; the anchor every interval is counted from.
    public var startDate: LocalDate
    /// Last local day that may fire (inclusive); nil = no end. Past it the alarm has no next fire.
    public var endDate: LocalDate?

    /// A schedule with the given rule and bounds.
    public init(_ rule: Rule, startDate: LocalDate, endDate: LocalDate? = nil) {
        self.rule = rule
        self.startDate = startDate
        self.endDate = endDate
    }

    /// The recurrence rules of docs/design.md#schedules. Weekdays are ISO 8601 (1 = Monday … 7 = Sunday).
    public enum Rule: Sendable, Equatable {
        /// On the given weekdays of every `interval`-th ISO week (Monday-first), counted from the week
        /// containing `startDate`.
        case weekly(daysOfWeek: [Int], interval: Int)
        /// On the given days of every `interval`-th month counted from `startDate`'s month; a day the
        /// month lacks fires on its last day (days that clamp to the same last day fire once).
        case monthlyDate(daysOfMonth: [Int], interval: Int)
        /// On the `weekOfMonth`-th (1…4, or -1 = last) `dayOfWeek` of every `interval`-th month counted
        /// from `startDate`'s month.
        case monthlyRelative(weekOfMonth: Int, dayOfWeek: Int, interval: Int)
        /// On `month`/`dayOfMonth` of every `interval`-th year counted from `startDate`'s year; a day the
        /// month lacks that year (Feb 29 in a common year) fires on the month's last day.
        case annual(month: Int, dayOfMonth: Int, interval: Int)
        /// Every `intervalDays` days from `startDate` (startDate itself fires).
        case customDays(intervalDays: Int)
        /// Once, on `date`.
        case oneTime(date: LocalDate)

        /// The `type` string of the JSON form (docs/design.md#schedules).
        public var type: String {
            switch self {
            case .weekly: "weekly"
            case .monthlyDate: "monthly_date"
            case .monthlyRelative: "monthly_relative"
            case .annual: "annual"
            case .customDays: "custom_days"
            case .oneTime: "one_time"
            }
        }
    }
}
