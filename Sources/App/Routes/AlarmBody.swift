import Domain
import Foundation
import Store

/// The body of every alarm write — shared alarms' POST and PATCH, personal alarms' PUT and PATCH —
/// decoded once. Every field optional here; the route checks the required ones and `decode(for:from:)`
/// refuses the fields of the other kind of alarm as unknown. In a PATCH, an absent field stays and
/// `null` clears a nullable one (`note`, `sound_id`, `color_tag`, `icon_name`, `category`;
/// `assigned_to_uids: null` = `[]`).
struct AlarmBody: ScopedBody {

    var title: String?
    var note: String??
    var schedule: Schedule?
    var timesOfDay: [TimeOfDay]?
    /// The product's legacy single `time_of_day` ("HH:mm"), used when `times_of_day` is absent.
    var timeOfDay: TimeOfDay?
    var timezone: String?
    var persistenceLevel: PersistenceLevel?
    var soundID: String??
    var preAlarmEnabled: Bool?
    /// The legacy single offset; with `preAlarmOffsets` too it must be their smallest.
    var preAlarmOffset: Int?
    var preAlarmOffsets: [Int]?
    var snoozeEnabled: Bool?
    var snoozeOptions: [Int]?
    var dismissMethod: DismissMethod?
    var colorTag: String??
    var iconName: String??
    var category: String??
    var assignedTo: [String]??
    var completionRule: CompletionRule?
    var requireAny: Bool?
    var requireAll: Bool?
    var graceMinutes: Int?
    /// Shared alarms only: answering opens this many minutes before an occurrence.
    var answerLeadMinutes: Int?
    /// Shared alarms only: `paused_until` (null clears the pause).
    var pausedUntil: Timestamp??
    var version: Int64?
    /// Shared alarms' PATCH only: `true` archives a done alarm, `false` takes it out of the archive
    /// (docs/design.md#done-and-archived).
    var archived: Bool?
    /// Both kinds: the master switch.
    var isEnabled: Bool?
    // Personal alarms only.
    var vibrationEnabled: Bool?
    var sortOrder: Int?
    /// The client's time of the edit (last-write-wins).
    var updatedAt: Timestamp?

    /// The alarm fields every alarm has (`AlarmSettings.FieldKeys`, the stored document's keys).
    typealias FieldKeys = AlarmSettings.FieldKeys
    /// The shared alarm's own fields (`AlarmSettings.SharedKeys`, the stored document's keys too).
    typealias SharedKeys = AlarmSettings.SharedKeys

    /// The body's keys beyond `FieldKeys` and `SharedKeys`: the legacy `time_of_day`, `version`, and
    /// each kind's own.
    enum CodingKeys: String, CodingKey, CaseIterable {
        case version
        case timeOfDay = "time_of_day"
        case isEnabled = "is_enabled"
        case archived
        case vibrationEnabled = "vibration_enabled"
        case sortOrder = "sort_order"
        case updatedAt = "updated_at"

    }

    static let sharedOnly = SharedKeys.allCases.map(\.stringValue) + [CodingKeys.archived.stringValue]
    static let personalOnly = [CodingKeys.vibrationEnabled, .sortOrder, .updatedAt].map(\.stringValue)

    /// Every key a body may have: the union of the three sets.
    static let allowedKeys = Set(
        FieldKeys.allCases.map(\.stringValue) + SharedKeys.allCases.map(\.stringValue) + CodingKeys.allCases.map(\.stringValue))

    init(from decoder: any Decoder) throws {
        let f = try decoder.container(keyedBy: FieldKeys.self)
        title = try f.decodeIfPresent(String.self, forKey: .title)
        note = try StrictKeys.nullable(f, .note)
        schedule = try Self.timing(f, .schedule)
        timesOfDay = try Self.timing(f, .timesOfDay)
        timezone = try Self.timing(f, .timezone)
        persistenceLevel = try f.decodeIfPresent(PersistenceLevel.self, forKey: .persistenceLevel)
        soundID = try StrictKeys.nullable(f, .soundID)
        preAlarmEnabled = try f.decodeIfPresent(Bool.self, forKey: .preAlarmEnabled)
        preAlarmOffset = try f.decodeIfPresent(Int.self, forKey: .preAlarmOffset)
        preAlarmOffsets = try f.decodeIfPresent([Int].self, forKey: .preAlarmOffsets)
        snoozeEnabled = try f.decodeIfPresent(Bool.self, forKey: .snoozeEnabled)
        snoozeOptions = try f.decodeIfPresent([Int].self, forKey: .snoozeOptions)
        dismissMethod = try f.decodeIfPresent(DismissMethod.self, forKey: .dismissMethod)
        colorTag = try StrictKeys.nullable(f, .colorTag)
        iconName = try StrictKeys.nullable(f, .iconName)
        category = try StrictKeys.nullable(f, .category)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let text: String = try Self.timing(c, .timeOfDay) {
            guard let time = TimeOfDay(parsing: text) else {
                throw DomainError.invalidSchedule(field: "time_of_day", message: "time_of_day must be HH:mm")
            }
            timeOfDay = time
        }
        let s = try decoder.container(keyedBy: SharedKeys.self)
        assignedTo = try StrictKeys.nullable(s, .assignedTo)
        completionRule = try s.decodeIfPresent(CompletionRule.self, forKey: .completionRule)
        requireAny = try s.decodeIfPresent(Bool.self, forKey: .requireAny)
        requireAll = try s.decodeIfPresent(Bool.self, forKey: .requireAll)
        graceMinutes = try s.decodeIfPresent(Int.self, forKey: .graceMinutes)
        answerLeadMinutes = try s.decodeIfPresent(Int.self, forKey: .answerLeadMinutes)
        pausedUntil = try StrictKeys.nullable(s, .pausedUntil)
        version = try c.decodeIfPresent(Int64.self, forKey: .version)
        isEnabled = try c.decodeIfPresent(Bool.self, forKey: .isEnabled)
        archived = try c.decodeIfPresent(Bool.self, forKey: .archived)
        vibrationEnabled = try c.decodeIfPresent(Bool.self, forKey: .vibrationEnabled)
        sortOrder = try c.decodeIfPresent(Int.self, forKey: .sortOrder)
        updatedAt = try c.decodeIfPresent(Timestamp.self, forKey: .updatedAt)
        present = Set(s.allKeys.map(\.stringValue) + c.allKeys.map(\.stringValue))
    }

    /// The body's keys beyond `FieldKeys` it had (the kind-specific ones are all among them).
    private(set) var present: Set<String> = []

    /// The fields required to make an alarm: `title`, `schedule`, `times_of_day` (or `time_of_day`),
    /// `timezone`; the others start at their defaults and then take what the body gives.
    func newSettings() throws -> AlarmSettings {
        guard let title else { throw APIError(.validationFailed, "title is required", field: "title") }
        guard let schedule else { throw DomainError.invalidSchedule(field: "schedule", message: "schedule is required") }
        guard let times = timesOfDay ?? timeOfDay.map({ [$0] }) else {
            throw DomainError.invalidSchedule(field: "times_of_day", message: "times_of_day is required")
        }
        guard let timezone else { throw DomainError.invalidSchedule(field: "timezone", message: "timezone is required") }
        var settings = AlarmSettings(title: title, timing: AlarmTiming(schedule: schedule, timesOfDay: times, timezone: timezone))
        try apply(to: &settings)
        return settings
    }

    /// Decodes a timing field; a decoding error becomes SCHEDULE_INVALID naming the dotted field.
    static func timing<T: Decodable, Key: CodingKey>(_ c: KeyedDecodingContainer<Key>, _ key: Key) throws -> T? {
        do {
            return try c.decodeIfPresent(T.self, forKey: key)
        } catch let error as DecodingError {
            let api = JSONBody.apiError(for: error)
            throw DomainError.invalidSchedule(field: api.field ?? key.stringValue, message: api.message)
        }
    }

    /// Applies the present fields to `s` (validation is `SharedAlarmRules.validate`'s job).
    func apply(to s: inout AlarmSettings) throws(DomainError) {
        if let title { s.title = title }
        if let note { s.note = note }
        if let schedule { s.timing.schedule = schedule }
        if let times = timesOfDay ?? timeOfDay.map({ [$0] }) { s.timing.timesOfDay = times }
        if let timezone { s.timing.timezone = timezone }
        if let persistenceLevel { s.persistenceLevel = persistenceLevel }
        if let soundID { s.soundID = soundID }
        if let preAlarmEnabled { s.preAlarmEnabled = preAlarmEnabled }
        if let preAlarmOffsets {
            // A client that read a document echoes both keys: they must agree.
            if let preAlarmOffset, preAlarmOffset != preAlarmOffsets.min() {
                throw .invalidField(
                    field: "pre_alarm_offset", message: "pre_alarm_offset, when sent with pre_alarm_offsets, must be their smallest")
            }
            s.preAlarmOffsets = preAlarmOffsets
        } else if let preAlarmOffset {
            s.preAlarmOffset = preAlarmOffset
        }
        if let snoozeEnabled { s.snoozeEnabled = snoozeEnabled }
        if let snoozeOptions { s.snoozeOptions = snoozeOptions }
        if let dismissMethod { s.dismissMethod = dismissMethod }
        if let colorTag { s.colorTag = colorTag }
        if let iconName { s.iconName = iconName }
        if let category { s.category = try Self.category(category) }
        if let assignedTo { s.assignedTo = assignedTo ?? [] }
        if let rule = try SharedAlarmRules.completionRule(
            named: completionRule, requireAny: requireAny, requireAll: requireAll)
        {
            s.completionRule = rule
        }
        if let graceMinutes { s.graceMinutes = graceMinutes }
        if let answerLeadMinutes { s.answerLeadMinutes = answerLeadMinutes }
    }

    /// A shared alarm's `is_enabled` and `paused_until` as the store takes them.
    var controls: SharedAlarmStore.ControlsEdit {
        SharedAlarmStore.ControlsEdit(isEnabled: isEnabled, pausedUntil: pausedUntil)
    }

    /// `category`: one of the categories of docs/design.md#shared-alarms; null or empty clears it.
    static func category(_ raw: String?) throws(DomainError) -> AlarmCategory? {
        guard let raw, !raw.isEmpty else { return nil }
        guard let value = AlarmCategory(rawValue: raw) else {
            throw .invalidField(
                field: "category",
                message: "category must be one of \(AlarmCategory.allCases.map(\.rawValue).joined(separator: ", "))"
            )
        }
        return value
    }
}
