/// How a completion rule counts answers (docs/design.md#shared-alarms; the product's `require_any_completion` /
/// `require_all_completion`): `any` — the first answer closes the occurrence; `all` — every required
/// member must answer.
public enum CompletionRule: String, Sendable, Codable, CaseIterable {
    case any, all
}

/// A member's answer to an occurrence.
public enum CompletionStatus: String, Sendable, Codable, CaseIterable {
    case completed, skipped
}

/// How the member got there (docs/design.md#occurrences-and-completions).
public enum CompletionMethod: String, Sendable, Codable, CaseIterable {
    case onTime = "on_time"
    case snoozedThenDone = "snoozed_then_done"
    case manualBackfill = "manual_backfill"
    case skipped
}

/// One immutable shared completion (docs/design.md#occurrences-and-completions). `completed_by_uid` is null and
/// `completed_by_name` "Deleted User" once the account that answered is deleted.
public struct SharedCompletion: Sendable, Codable, Equatable {
    public var id: String
    public var groupID: String
    public var alarmID: String
    @ExplicitNull public var userID: String?
    public var userName: String
    /// The occurrence answered.
    public var scheduledAt: Timestamp
    public var status: CompletionStatus
    public var completionMethod: CompletionMethod
    public var snoozeCount: Int64
    @ExplicitNull public var note: String?
    public var completedAt: Timestamp
    /// When its author took the answer back (docs/design.md#answers-retries-and-undo); null while it
    /// counts. A withdrawn answer stays in the history: the log is an audit trail, not an edit.
    @ExplicitNull public var withdrawnAt: Timestamp?

    public init(
        id: String, groupID: String, alarmID: String, userID: String?, userName: String, scheduledAt: Timestamp,
        status: CompletionStatus, completionMethod: CompletionMethod, snoozeCount: Int64, note: String?,
        completedAt: Timestamp, withdrawnAt: Timestamp? = nil
    ) {
        self.id = id
        self.groupID = groupID
        self.alarmID = alarmID
        self.userID = userID
        self.userName = userName
        self.scheduledAt = scheduledAt
        self.status = status
        self.completionMethod = completionMethod
        self.snoozeCount = snoozeCount
        self.note = note
        self.completedAt = completedAt
        self.withdrawnAt = withdrawnAt
    }

    enum CodingKeys: String, CodingKey {
        case id, status, note
        case withdrawnAt = "withdrawn_at"
        case groupID = "group_id"
        case alarmID = "shared_alarm_id"
        case userID = "completed_by_uid"
        case userName = "completed_by_name"
        case scheduledAt = "scheduled_at"
        case completionMethod = "completion_method"
        case snoozeCount = "snooze_count"
        case completedAt = "completed_at"
    }
}
