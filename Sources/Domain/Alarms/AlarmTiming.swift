/// Everything next-fire computation needs from an alarm: its schedule, its wall-clock times and its
/// IANA zone (docs/design.md#shared-alarms: `schedule`, `times_of_day`, `timezone`).
public struct AlarmTiming: Sendable, Equatable {
    /// The recurrence and its date bounds.
    public var schedule: Schedule
    /// Wall-clock times the alarm fires on each scheduled day (1…5, see `ScheduleRules`).
    public var timesOfDay: [TimeOfDay]
    /// IANA zone name the dates and times are read in, e.g. `America/New_York`.
    public var timezone: String

    /// Timing from its parts.
    public init(schedule: Schedule, timesOfDay: [TimeOfDay], timezone: String) {
        self.schedule = schedule
        self.timesOfDay = timesOfDay
        self.timezone = timezone
    }
}
