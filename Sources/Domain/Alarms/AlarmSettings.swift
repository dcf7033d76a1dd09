/// The editable fields of an alarm (POST/PUT and PATCH bodies), with the defaults of
/// docs/design.md#shared-alarms. Shared and personal alarms both have them, validated by one
/// `SharedAlarmRules.validate`; `assignedTo`, `completionRule` and `graceMinutes` are a shared
/// alarm's only (a personal alarm keeps their defaults and its document leaves them out).
public struct AlarmSettings: Sendable, Equatable {
    public var title: String
    public var note: String?
    public var timing: AlarmTiming
    public var persistenceLevel: PersistenceLevel
    public var soundID: String?
    public var preAlarmEnabled: Bool
    /// Minutes before each occurrence to send a pre-warning: 1…`SharedAlarmRules.maxPreAlarmOffsets`
    /// distinct values, largest first once validated (the seeds' 7 days, 3 days, 24 hours).
    public var preAlarmOffsets: [Int]
    public var snoozeEnabled: Bool
    /// Snooze durations, minutes.
    public var snoozeOptions: [Int]
    public var dismissMethod: DismissMethod
    public var colorTag: String?
    public var iconName: String?
    public var category: AlarmCategory?
    /// Members who receive the alarm; empty = every active member.
    public var assignedTo: [String]
    public var completionRule: CompletionRule
    /// An occurrence still open this long after its time is marked missed by the overdue sweep.
    public var graceMinutes: Int
    /// How long before its time an upcoming occurrence may be answered (shared alarms only;
    /// `SharedAlarmRules.answerLeadRange`, docs/design.md#occurrence-states).
    public var answerLeadMinutes: Int

    public init(
        title: String, note: String? = nil, timing: AlarmTiming, persistenceLevel: PersistenceLevel = .full,
        soundID: String? = nil, preAlarmEnabled: Bool = false, preAlarmOffsets: [Int] = [1440], snoozeEnabled: Bool = true,
        snoozeOptions: [Int] = [60, 1440, 10080], dismissMethod: DismissMethod = .swipe, colorTag: String? = nil,
        iconName: String? = nil, category: AlarmCategory? = nil, assignedTo: [String] = [],
        completionRule: CompletionRule = .any, graceMinutes: Int = SharedAlarmRules.defaultGraceMinutes,
        answerLeadMinutes: Int = SharedAlarmRules.defaultAnswerLeadMinutes
    ) {
        self.title = title
        self.note = note
        self.timing = timing
        self.persistenceLevel = persistenceLevel
        self.soundID = soundID
        self.preAlarmEnabled = preAlarmEnabled
        self.preAlarmOffsets = preAlarmOffsets
        self.snoozeEnabled = snoozeEnabled
        self.snoozeOptions = snoozeOptions
        self.dismissMethod = dismissMethod
        self.colorTag = colorTag
        self.iconName = iconName
        self.category = category
        self.assignedTo = assignedTo
        self.completionRule = completionRule
        self.graceMinutes = graceMinutes
        self.answerLeadMinutes = answerLeadMinutes
    }

    /// The legacy single `pre_alarm_offset`: the nearest pre-warning (the smallest offset). Setting it
    /// replaces every offset with this one, as an old client that knows one pre-alarm means.
    public var preAlarmOffset: Int {
        get { preAlarmOffsets.min() ?? 1440 }
        set { preAlarmOffsets = [newValue] }
    }
}

extension AlarmSettings {
    /// The keys of the fields every alarm document has (flat, beside the document's own keys); also
    /// the common half of an alarm write's body (`AlarmBody`).
    public enum FieldKeys: String, CodingKey, CaseIterable {
        case title, note, schedule, timezone, category
        case timesOfDay = "times_of_day"
        case persistenceLevel = "persistence_level"
        case soundID = "sound_id"
        case preAlarmEnabled = "pre_alarm_enabled"
        case preAlarmOffset = "pre_alarm_offset"
        case preAlarmOffsets = "pre_alarm_offsets"
        case snoozeEnabled = "snooze_enabled"
        case snoozeOptions = "snooze_options"
        case dismissMethod = "dismiss_method"
        case colorTag = "color_tag"
        case iconName = "icon_name"
    }

    /// The keys only a shared alarm has, in its document and in the body that writes it (`AlarmBody`),
    /// in the order a personal alarm's body that sends one names the first.
    public enum SharedKeys: String, CodingKey, CaseIterable {
        case assignedTo = "assigned_to_uids"
        case completionRule = "completion_rule"
        case requireAny = "require_any_completion"
        case requireAll = "require_all_completion"
        case graceMinutes = "grace_minutes"
        case answerLeadMinutes = "answer_lead_minutes"
        case pausedUntil = "paused_until"
    }

    /// The keys both alarm documents have besides the fields and their kind's own: the record's id,
    /// version, master switch, next fire and timestamps.
    enum RecordKeys: String, CodingKey, CaseIterable {
        case id, version
        case isEnabled = "is_enabled"
        case nextFireAt = "next_fire_at"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case deletedAt = "deleted_at"
    }

    /// Reads the common fields of a stored document; the shared-only ones come from the caller.
    init(
        from decoder: any Decoder, assignedTo: [String], completionRule: CompletionRule, graceMinutes: Int,
        answerLeadMinutes: Int = SharedAlarmRules.defaultAnswerLeadMinutes
    ) throws {
        let c = try decoder.container(keyedBy: FieldKeys.self)
        self.init(
            title: try c.decode(String.self, forKey: .title),
            note: try c.decodeIfPresent(String.self, forKey: .note),
            timing: AlarmTiming(
                schedule: try c.decode(Schedule.self, forKey: .schedule),
                timesOfDay: try c.decode([TimeOfDay].self, forKey: .timesOfDay),
                timezone: try c.decode(String.self, forKey: .timezone)),
            persistenceLevel: try c.decode(PersistenceLevel.self, forKey: .persistenceLevel),
            soundID: try c.decodeIfPresent(String.self, forKey: .soundID),
            preAlarmEnabled: try c.decode(Bool.self, forKey: .preAlarmEnabled),
            preAlarmOffsets: try c.decodeIfPresent([Int].self, forKey: .preAlarmOffsets)
                ?? [try c.decode(Int.self, forKey: .preAlarmOffset)],
            snoozeEnabled: try c.decode(Bool.self, forKey: .snoozeEnabled),
            snoozeOptions: try c.decode([Int].self, forKey: .snoozeOptions),
            dismissMethod: try c.decode(DismissMethod.self, forKey: .dismissMethod),
            colorTag: try c.decodeIfPresent(String.self, forKey: .colorTag),
            iconName: try c.decodeIfPresent(String.self, forKey: .iconName),
            category: try c.decodeIfPresent(AlarmCategory.self, forKey: .category),
            assignedTo: assignedTo, completionRule: completionRule, graceMinutes: graceMinutes,
            answerLeadMinutes: answerLeadMinutes)
    }

    /// Writes the common fields into the document `encoder` is writing (explicit nulls: every field
    /// always exists).
    func encodeFields(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: FieldKeys.self)
        try c.encode(title, forKey: .title)
        try c.encode(note, forKey: .note)
        try c.encode(timing.schedule, forKey: .schedule)
        try c.encode(timing.timesOfDay, forKey: .timesOfDay)
        try c.encode(timing.timezone, forKey: .timezone)
        try c.encode(persistenceLevel, forKey: .persistenceLevel)
        try c.encode(soundID, forKey: .soundID)
        try c.encode(preAlarmEnabled, forKey: .preAlarmEnabled)
        try c.encode(preAlarmOffset, forKey: .preAlarmOffset)
        try c.encode(preAlarmOffsets, forKey: .preAlarmOffsets)
        try c.encode(snoozeEnabled, forKey: .snoozeEnabled)
        try c.encode(snoozeOptions, forKey: .snoozeOptions)
        try c.encode(dismissMethod, forKey: .dismissMethod)
        try c.encode(colorTag, forKey: .colorTag)
        try c.encode(iconName, forKey: .iconName)
        try c.encode(category, forKey: .category)
    }
}
