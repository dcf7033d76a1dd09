/// Shared-alarm field validation, limits and the completion checks (docs/design.md#shared-alarms,
/// docs/design.md#occurrences-and-completions, docs/design.md#rate-limits), as pure functions. Field errors name the JSON field; timing
/// errors
/// are `invalidSchedule` (422 SCHEDULE_INVALID).
///
/// | field               | rule                                                            |
/// | ------------------- | --------------------------------------------------------------- |
/// | `title`             | `FreeText` name, 1…200 characters                               |
/// | `note`              | `FreeText` note, ≤ 2000 characters; empty becomes null          |
/// | `sound_id`          | ≤ 100 bytes passing the `FreeText` name rules; empty becomes null |
/// | `pre_alarm_offsets` | 1…`maxPreAlarmOffsets` distinct, each 1…`maxPreAlarmOffset` minutes; stored largest first |
/// | `snooze_options`    | ≤ `maxSnoozeOptions` distinct durations, each 1…`maxSnoozeMinutes` |
/// | `color_tag`, `icon_name` | as for groups (`GroupRules`)                               |
/// | `assigned_to_uids`  | ≤ `maxAssignees`, distinct (membership: the Store)              |
/// | `grace_minutes`     | 1…`maxGraceMinutes`                                             |
/// | `answer_lead_minutes` | `answerLeadRange` (0…10,080)                                  |
/// | `paused_until`      | after now, at most `maxPauseMilliseconds` ahead (`pauseEnd`)    |
/// | completion `note`   | `FreeText` note, ≤ 500 characters                               |
/// | `snooze_count`      | 0…`maxSnoozeCount`                                              |
public enum SharedAlarmRules {
    /// `title`: 200 characters (docs/design.md#shared-alarms).
    public static let maxTitleCharacters = 200
    /// `note`: 2,000 characters (docs/design.md#shared-alarms).
    public static let maxNoteCharacters = 2000
    /// A completion's note.
    public static let maxCompletionNoteCharacters = 500
    /// `sound_id`: 100 bytes (docs/design.md#shared-alarms).
    public static let maxSoundIDBytes = 100
    /// A pre-alarm at most 30 days ahead.
    public static let maxPreAlarmOffset = 43_200
    /// Pre-warnings per alarm: the seeds' 7 days, 3 days and 24 hours (tech spec §7.2).
    public static let maxPreAlarmOffsets = 3
    /// Snooze choices a client can show.
    public static let maxSnoozeOptions = 10
    /// A snooze of at most a year.
    public static let maxSnoozeMinutes = 525_600
    /// Assignees: no more than a group can have members (server-wide upper bound).
    public static let maxAssignees = 1000
    /// Overdue grace when the alarm sets none: 24 hours.
    public static let defaultGraceMinutes = 1440
    /// Longest grace: a week.
    public static let maxGraceMinutes = 10_080
    /// How long before its time an occurrence may be answered when the alarm sets nothing: a day, so
    /// "done early this morning" counts for today's reminder but a March reminder cannot be closed in
    /// November (docs/design.md#occurrence-states).
    public static let defaultAnswerLeadMinutes = 1440
    /// `answer_lead_minutes`: 0 (only once due) to a week — the longest grace, so the window around an
    /// occurrence is at most a week on either side.
    public static let answerLeadRange = 0...10_080
    /// An answer that names no occurrence (`scheduled_at` absent), from a member whose last answer to
    /// the same alarm is younger than this, is that answer's retry — a double tap or a resend after a
    /// lost reply — and never an answer to the next occurrence: 2 minutes, longer than any client's
    /// retry loop, far shorter than any schedule's period (docs/design.md#answers-retries-and-undo).
    public static let unnamedAnswerRetryWindowMilliseconds: Int64 = 2 * 60_000
    /// How long after answering its author may withdraw the answer ("Undo"): 10 minutes — long enough
    /// to notice a wrong tap, short enough that the household can rely on what it sees
    /// (docs/design.md#answers-retries-and-undo).
    public static let answerWithdrawalWindowMilliseconds: Int64 = 10 * 60_000
    /// `paused_until` at most a year and a day ahead: one skipped annual occurrence; longer is
    /// `is_enabled: false`.
    public static let maxPauseMilliseconds: Int64 = 366 * 86_400_000
    /// Snoozes a completion may report.
    public static let maxSnoozeCount: Int64 = 1000
    /// Live (not deleted) shared alarms per group.
    public static let maxAlarmsPerGroup = 100
    /// Creations per user: 5 per minute (docs/design.md#rate-limits), counted over created alarms.
    public static let creationWindow = AttemptWindow(maxAttempts: 5, windowMilliseconds: 60_000)

    /// Normalises and checks every field; `now` only matters for a one-time schedule in the past, which
    /// is refused unless `keptTiming` (an edit that leaves the stored timing as it is: a finished
    /// one-time alarm may still be renamed or archived).
    public static func validate(_ s: AlarmSettings, now: Int64, keptTiming: Bool = false) throws(DomainError) -> AlarmSettings {
        var s = s
        s.title = try FreeText.normalize(s.title, .name, field: "title")
        guard !s.title.isEmpty else { throw .invalidField(field: "title", message: "title is required") }
        guard s.title.count <= maxTitleCharacters else {
            throw .invalidField(field: "title", message: "title is longer than \(maxTitleCharacters) characters")
        }
        s.note = try text(s.note, field: "note", max: maxNoteCharacters)
        try ScheduleRules.validate(s.timing, now: now, pastAllowed: keptTiming)
        if let sound = s.soundID, sound.isEmpty { s.soundID = nil }
        if let sound = s.soundID {
            guard sound.utf8.count <= maxSoundIDBytes, FreeText.firstViolation(in: sound, .name) == nil else {
                throw .invalidField(
                    field: "sound_id", message: "sound_id must be at most \(maxSoundIDBytes) bytes of text")
            }
        }
        guard (1...maxPreAlarmOffsets).contains(s.preAlarmOffsets.count), Set(s.preAlarmOffsets).count == s.preAlarmOffsets.count,
            s.preAlarmOffsets.allSatisfy({ (1...maxPreAlarmOffset).contains($0) })
        else {
            let message =
                s.preAlarmOffsets.count == 1
                ? "pre_alarm_offset must be 1–\(maxPreAlarmOffset) minutes"
                : "pre_alarm_offsets needs 1–\(maxPreAlarmOffsets) distinct offsets of 1–\(maxPreAlarmOffset) minutes"
            throw .invalidField(field: s.preAlarmOffsets.count == 1 ? "pre_alarm_offset" : "pre_alarm_offsets", message: message)
        }
        s.preAlarmOffsets.sort(by: >)
        guard s.snoozeOptions.count <= maxSnoozeOptions, Set(s.snoozeOptions).count == s.snoozeOptions.count,
            s.snoozeOptions.allSatisfy({ (1...maxSnoozeMinutes).contains($0) })
        else {
            throw .invalidField(
                field: "snooze_options",
                message:
                    "snooze_options needs at most \(maxSnoozeOptions) distinct durations of 1–\(maxSnoozeMinutes) minutes"
            )
        }
        s.colorTag = try GroupRules.validateColorTag(s.colorTag)
        s.iconName = try GroupRules.validateIconName(s.iconName)
        guard s.assignedTo.count <= maxAssignees, Set(s.assignedTo).count == s.assignedTo.count else {
            throw .invalidField(field: "assigned_to_uids", message: "assigned_to_uids must not repeat a member")
        }
        guard (1...maxGraceMinutes).contains(s.graceMinutes) else {
            throw .invalidField(field: "grace_minutes", message: "grace_minutes must be 1–\(maxGraceMinutes)")
        }
        guard answerLeadRange.contains(s.answerLeadMinutes) else {
            throw .invalidField(
                field: "answer_lead_minutes",
                message: "answer_lead_minutes must be \(answerLeadRange.lowerBound)–\(answerLeadRange.upperBound)")
        }
        return s
    }

    /// A requested `paused_until` as stored: nil (no pause) for nil or an instant not after `now` — a
    /// pause already over pauses nothing; refused (422 naming the field) more than
    /// `maxPauseMilliseconds` ahead.
    public static func pauseEnd(_ requested: Timestamp?, now: Int64) throws(DomainError) -> Timestamp? {
        guard let requested, requested.milliseconds > now else { return nil }
        guard requested.milliseconds - now <= maxPauseMilliseconds else {
            throw .invalidField(field: "paused_until", message: "paused_until must be at most 366 days ahead")
        }
        return requested
    }

    /// The rule named by `completion_rule` and/or the product's booleans (docs/design.md#shared-alarms). Absent everything → `any`.
    /// Both booleans true, or a boolean contradicting `completion_rule`, is an error.
    public static func completionRule(
        named rule: CompletionRule?, requireAny: Bool?, requireAll: Bool?
    ) throws(DomainError) -> CompletionRule? {
        if requireAny == true, requireAll == true {
            throw .invalidField(
                field: "require_all_completion",
                message: "require_any_completion and require_all_completion cannot both be true")
        }
        var fromBooleans: CompletionRule?
        if requireAll == true || requireAny == false { fromBooleans = .all }
        if requireAny == true || requireAll == false { fromBooleans = .any }
        if let rule, let fromBooleans, rule != fromBooleans {
            throw .invalidField(field: "completion_rule", message: "completion_rule contradicts require_*_completion")
        }
        return rule ?? fromBooleans
    }

    /// A completion note: ≤ 500 characters; empty becomes nil.
    public static func completionNote(_ note: String?) throws(DomainError) -> String? {
        try text(note, field: "note", max: maxCompletionNoteCharacters)
    }

    /// `snooze_count` 0…`maxSnoozeCount`.
    public static func checkSnoozeCount(_ count: Int64) throws(DomainError) {
        guard (0...maxSnoozeCount).contains(count) else {
            throw .invalidField(field: "snooze_count", message: "snooze_count must be 0–\(maxSnoozeCount)")
        }
    }

    private static func text(_ raw: String?, field: String, max: Int) throws(DomainError) -> String? {
        guard let raw else { return nil }
        let text = try FreeText.normalize(raw, .note, field: field)
        guard !text.isEmpty else { return nil }
        guard text.count <= max else {
            throw .invalidField(field: field, message: "\(field) is longer than \(max) characters")
        }
        return text
    }
}
