import Domain
import Wire

/// The body of every completion write — shared completions' POST and personal completions' POST —
/// decoded once (as `AlarmBody` is for alarms). `completion_method` defaults to `on_time` (`skipped`
/// for a skip), `snooze_count` to 0; `scheduled_at` names the occurrence (`scheduled_date`, the
/// product's name, is accepted too): optional for a shared alarm (default: the open occurrence — send
/// it so that a retry after the occurrence closed returns the first answer instead of answering the
/// next one), required by the personal route (the server keeps no occurrence of a personal alarm).
/// Personal completions also take the seeds' `total_snooze_minutes`, the device's `completed_at`
/// (default: now) and its own `id` (default: the server picks one); `decode(for:from:)` refuses those
/// in a shared completion as unknown fields (422), as for any other unknown key.
struct CompletionBody: ScopedBody {

    var status: CompletionStatus
    var note: String?
    var completionMethod: CompletionMethod?
    var snoozeCount: Int64?
    var scheduledAt: Timestamp?
    // Personal completions only.
    var id: String?
    var totalSnoozeMinutes: Int64?
    var completedAt: Timestamp?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case status, note, id
        case completionMethod = "completion_method"
        case snoozeCount = "snooze_count"
        case scheduledAt = "scheduled_at"
        /// The product's name for the same field (docs/design.md#occurrences-and-completions).
        case scheduledDate = "scheduled_date"
        case totalSnoozeMinutes = "total_snooze_minutes"
        case completedAt = "completed_at"
    }

    static let sharedOnly: [String] = []
    static let personalOnly = [CodingKeys.id, .totalSnoozeMinutes, .completedAt].map(\.stringValue)

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        status = try c.decode(CompletionStatus.self, forKey: .status)
        note = try c.decodeIfPresent(String.self, forKey: .note)
        completionMethod = try c.decodeIfPresent(CompletionMethod.self, forKey: .completionMethod)
        snoozeCount = try c.decodeIfPresent(Int64.self, forKey: .snoozeCount)
        scheduledAt =
            try c.decodeIfPresent(Timestamp.self, forKey: .scheduledAt)
            ?? c.decodeIfPresent(Timestamp.self, forKey: .scheduledDate)
        id = try c.decodeIfPresent(String.self, forKey: .id)
        totalSnoozeMinutes = try c.decodeIfPresent(Int64.self, forKey: .totalSnoozeMinutes)
        completedAt = try c.decodeIfPresent(Timestamp.self, forKey: .completedAt)
        present = Set(c.allKeys.map(\.stringValue))
    }

    private(set) var present: Set<String> = []
}
