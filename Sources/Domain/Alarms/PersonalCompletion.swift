/// One immutable completion of a personal alarm's occurrence, backed up for the user's other devices
/// (docs/personal-sync.md#completions; data-schema §3.3 and §4.3). The occurrence is named by
/// `scheduled_at` (the seeds' `scheduled_date`): one completion per (alarm, occurrence), so a device
/// that sends its log again after a lost answer gets the first record back instead of a second one.
///
/// `completed_at` is the device's time of the answer (logged offline, sent later); `created_at` is the
/// server's time of recording. `alarm_title` is the alarm's title when the completion was recorded
/// (data-schema §4.3 denormalises it so a history reads without the alarm, which may be gone).
public struct PersonalCompletion: Sendable, Codable, Equatable {
    public var id: String
    public var userID: String
    public var alarmID: String
    public var alarmTitle: String
    /// The occurrence answered.
    public var scheduledAt: Timestamp
    public var status: CompletionStatus
    public var completionMethod: CompletionMethod
    public var snoozeCount: Int64
    public var totalSnoozeMinutes: Int64
    @ExplicitNull public var note: String?
    public var completedAt: Timestamp
    public var createdAt: Timestamp

    public init(
        id: String, userID: String, alarmID: String, alarmTitle: String, scheduledAt: Timestamp, status: CompletionStatus,
        completionMethod: CompletionMethod, snoozeCount: Int64, totalSnoozeMinutes: Int64, note: String?,
        completedAt: Timestamp, createdAt: Timestamp
    ) {
        self.id = id
        self.userID = userID
        self.alarmID = alarmID
        self.alarmTitle = alarmTitle
        self.scheduledAt = scheduledAt
        self.status = status
        self.completionMethod = completionMethod
        self.snoozeCount = snoozeCount
        self.totalSnoozeMinutes = totalSnoozeMinutes
        self.note = note
        self.completedAt = completedAt
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case id, status, note
        case userID = "user_id"
        case alarmID = "alarm_id"
        case alarmTitle = "alarm_title"
        case scheduledAt = "scheduled_at"
        case completionMethod = "completion_method"
        case snoozeCount = "snooze_count"
        case totalSnoozeMinutes = "total_snooze_minutes"
        case completedAt = "completed_at"
        case createdAt = "created_at"
    }
}

/// Personal-completion rules beyond the ones shared completions already have (`CompletionStatus`,
/// `CompletionMethod`, `SharedAlarmRules.completionNote`, `SharedAlarmRules.checkSnoozeCount`, which
/// both kinds use): the snooze total, the client's clock, the id and the retention.
public enum PersonalCompletionRules {
    /// `total_snooze_minutes`: 0…a year (data-schema §3.3; one occurrence snoozed longer than a year
    /// is a client bug, not a history worth keeping).
    public static let maxTotalSnoozeMinutes: Int64 = 525_600
    /// Kept 3 years from `completed_at` (data-schema §8: "Completion logs (Plus+): 3 years"), like
    /// shared completions.
    public static let retentionMilliseconds: Int64 = 3 * 365 * 86_400_000

    /// How far ahead of the server's clock `scheduled_at` may be: 366 days — a device may mark an
    /// occurrence done early (the next one of a yearly alarm included), but a record for a fire years
    /// away is a client bug, and each distinct `scheduled_at` is another row.
    public static let maxScheduledAheadMilliseconds: Int64 = 366 * 86_400_000

    /// `scheduled_at` within [now − retention, now + `maxScheduledAheadMilliseconds`]: older would be
    /// purged by the next sweep. 422 naming the field otherwise.
    public static func checkScheduledAt(_ scheduledAt: Timestamp, now: Int64) throws(DomainError) {
        guard scheduledAt.milliseconds <= now + maxScheduledAheadMilliseconds else {
            throw .invalidField(field: "scheduled_at", message: "scheduled_at is more than 366 days ahead")
        }
        guard scheduledAt.milliseconds >= now - retentionMilliseconds else {
            throw .invalidField(field: "scheduled_at", message: "scheduled_at is older than the 3 years completions are kept")
        }
    }

    /// `total_snooze_minutes` in range; 422 naming the field otherwise.
    public static func checkTotalSnoozeMinutes(_ minutes: Int64) throws(DomainError) {
        guard (0...maxTotalSnoozeMinutes).contains(minutes) else {
            throw .invalidField(field: "total_snooze_minutes", message: "total_snooze_minutes must be 0–\(maxTotalSnoozeMinutes)")
        }
    }

    /// The device's `completed_at`, or `now` when absent; more than 5 minutes ahead of the server's
    /// clock is refused (the rule and bound of `PersonalAlarmRules.editTime`), and so is one older than
    /// the retention (the next sweep would delete it); 422 naming the field.
    public static func completionTime(_ clientTime: Timestamp?, now: Int64) throws(DomainError) -> Timestamp {
        guard let clientTime else { return Timestamp(milliseconds: now) }
        guard clientTime.milliseconds <= now + PersonalAlarmRules.maxClockAheadMilliseconds else {
            throw .invalidField(field: "completed_at", message: "completed_at is ahead of the server's clock by more than 5 minutes")
        }
        guard clientTime.milliseconds >= now - retentionMilliseconds else {
            throw .invalidField(field: "completed_at", message: "completed_at is older than the 3 years completions are kept")
        }
        return clientTime
    }

    /// A client-chosen completion id (the device's local UUID, data-schema §4.3 "matches local UUID"):
    /// the alarm ids' UUID form, lowercased; 422 naming `id` otherwise.
    public static func completionID(_ text: String) throws(DomainError) -> String {
        do {
            return try PersonalAlarmRules.alarmID(text)
        } catch {
            throw .invalidField(field: "id", message: "a completion id is a UUID (8-4-4-4-12 hexadecimal digits)")
        }
    }
}
