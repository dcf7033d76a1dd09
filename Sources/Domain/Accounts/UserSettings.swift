import Foundation

/// A user's preferences, synced to every device of the account (docs/personal-sync.md#settings):
/// the API seed's `UserSettings` (§3.2) and the data schema's device defaults (§3.5) in one document.
/// The time zone is not here: it is the user document's `timezone`. Every field has a default, so an
/// account that never wrote its settings reads the defaults with `version` 0.
public struct UserSettings: Sendable, Codable, Equatable {
    public var defaultSnoozeMinutes = 60
    public var preAlarmWarningEnabled = true
    public var preAlarmWarningHours = 24
    public var use24HourFormat = false
    public var soundID = "default"
    public var vibrationEnabled = true
    public var defaultPersistence = PersistenceLevel.full
    public var defaultDismissMethod = DismissMethod.swipe
    public var themeMode = ThemeMode.system
    public var hapticFeedback = true
    public var showCompletionConfetti = true
    /// 0…1; nil: the system volume.
    @ExplicitNull public var alarmVolumeOverride: Double?
    public var graduallyIncreaseVolume = false
    /// 0 until the first write; bumped on every write (409 CA010 on a stale one).
    public var version: Int64 = 0
    @ExplicitNull public var updatedAt: Timestamp?

    public init() {}

    public enum ThemeMode: String, Sendable, Codable, CaseIterable {
        case light, dark, system
    }

    /// The fields a PATCH may name: every setting, not `version` or `updated_at` (the server keeps those).
    public static let patchableFields = Set(CodingKeys.allCases.map(\.stringValue)).subtracting(["version", "updated_at"])

    /// These settings with a PATCH body's fields laid over them — one coding for stored documents and
    /// PATCH bodies: a named field's JSON value replaces the stored one, `null` clears a nullable one,
    /// fields outside `patchableFields` are ignored (the caller refuses them first). A value of the
    /// wrong type throws the `DecodingError` that names its field.
    public func applying(patchJSON: [UInt8]) throws -> UserSettings {
        let patch = try JSONSerialization.jsonObject(with: Data(patchJSON)) as? [String: Any] ?? [:]
        var object = try JSONSerialization.jsonObject(with: Data(DocumentCoding.encode(self))) as? [String: Any] ?? [:]
        for (key, value) in patch where Self.patchableFields.contains(key) { object[key] = value }
        return try DocumentCoding.decode(UserSettings.self, from: Array(JSONSerialization.data(withJSONObject: object)))
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case version
        case defaultSnoozeMinutes = "default_snooze_minutes"
        case preAlarmWarningEnabled = "pre_alarm_warning_enabled"
        case preAlarmWarningHours = "pre_alarm_warning_hours"
        case use24HourFormat = "use_24_hour_format"
        case soundID = "sound_id"
        case vibrationEnabled = "vibration_enabled"
        case defaultPersistence = "default_persistence"
        case defaultDismissMethod = "default_dismiss_method"
        case themeMode = "theme_mode"
        case hapticFeedback = "haptic_feedback"
        case showCompletionConfetti = "show_completion_confetti"
        case alarmVolumeOverride = "alarm_volume_override"
        case graduallyIncreaseVolume = "gradually_increase_volume"
        case updatedAt = "updated_at"
    }
}

/// The settings' limits, checked after a PATCH is applied (422 naming the field).
public enum UserSettingsRules {
    /// `default_snooze_minutes`: as a snooze option, 1…a year.
    public static let snoozeMinutes = 1...SharedAlarmRules.maxSnoozeMinutes
    /// `pre_alarm_warning_hours`: 1…720 (30 days, the pre-alarm's own limit).
    public static let preAlarmWarningHours = 1...(SharedAlarmRules.maxPreAlarmOffset / 60)

    public static func validate(_ s: UserSettings) throws(DomainError) -> UserSettings {
        guard snoozeMinutes.contains(s.defaultSnoozeMinutes) else {
            throw .invalidField(field: "default_snooze_minutes", message: "default_snooze_minutes must be 1–\(snoozeMinutes.upperBound)")
        }
        guard preAlarmWarningHours.contains(s.preAlarmWarningHours) else {
            throw .invalidField(
                field: "pre_alarm_warning_hours", message: "pre_alarm_warning_hours must be 1–\(preAlarmWarningHours.upperBound)")
        }
        guard !s.soundID.isEmpty, s.soundID.utf8.count <= SharedAlarmRules.maxSoundIDBytes,
            FreeText.firstViolation(in: s.soundID, .name) == nil
        else {
            throw .invalidField(
                field: "sound_id", message: "sound_id must be 1–\(SharedAlarmRules.maxSoundIDBytes) bytes of text")
        }
        if let volume = s.alarmVolumeOverride, !(0...1).contains(volume) {
            throw .invalidField(field: "alarm_volume_override", message: "alarm_volume_override must be 0–1 or null")
        }
        return s
    }
}
