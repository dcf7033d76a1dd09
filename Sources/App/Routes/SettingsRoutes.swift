import Domain
import Storage
import Store
import Wire

/// `/v1/me/settings`: the caller's synced preferences (issue 19; docs/personal-sync.md#settings).
/// Every tier: they are the account's, not cloud storage of alarms.
enum SettingsRoutes {
    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.get, "/v1/me/settings", .async { request in try await show(request, services) })
        router.add(.patch, "/v1/me/settings", .async { request in try await patch(request, services) })
    }

    /// A PATCH: absent fields stay; `alarm_volume_override: null` clears it.
    struct SettingsBody: StrictBody {
        var defaultSnoozeMinutes: Int?
        var preAlarmWarningEnabled: Bool?
        var preAlarmWarningHours: Int?
        var use24HourFormat: Bool?
        var soundID: String?
        var vibrationEnabled: Bool?
        var defaultPersistence: PersistenceLevel?
        var defaultDismissMethod: DismissMethod?
        var themeMode: UserSettings.ThemeMode?
        var hapticFeedback: Bool?
        var showCompletionConfetti: Bool?
        var alarmVolumeOverride: Double??
        var graduallyIncreaseVolume: Bool?
        var version: Int64?

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
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            defaultSnoozeMinutes = try c.decodeIfPresent(Int.self, forKey: .defaultSnoozeMinutes)
            preAlarmWarningEnabled = try c.decodeIfPresent(Bool.self, forKey: .preAlarmWarningEnabled)
            preAlarmWarningHours = try c.decodeIfPresent(Int.self, forKey: .preAlarmWarningHours)
            use24HourFormat = try c.decodeIfPresent(Bool.self, forKey: .use24HourFormat)
            soundID = try c.decodeIfPresent(String.self, forKey: .soundID)
            vibrationEnabled = try c.decodeIfPresent(Bool.self, forKey: .vibrationEnabled)
            defaultPersistence = try c.decodeIfPresent(PersistenceLevel.self, forKey: .defaultPersistence)
            defaultDismissMethod = try c.decodeIfPresent(DismissMethod.self, forKey: .defaultDismissMethod)
            themeMode = try c.decodeIfPresent(UserSettings.ThemeMode.self, forKey: .themeMode)
            hapticFeedback = try c.decodeIfPresent(Bool.self, forKey: .hapticFeedback)
            showCompletionConfetti = try c.decodeIfPresent(Bool.self, forKey: .showCompletionConfetti)
            alarmVolumeOverride = try StrictKeys.nullable(c, .alarmVolumeOverride)
            graduallyIncreaseVolume = try c.decodeIfPresent(Bool.self, forKey: .graduallyIncreaseVolume)
            version = try c.decodeIfPresent(Int64.self, forKey: .version)
        }

        func apply(to s: inout UserSettings) {
            if let defaultSnoozeMinutes { s.defaultSnoozeMinutes = defaultSnoozeMinutes }
            if let preAlarmWarningEnabled { s.preAlarmWarningEnabled = preAlarmWarningEnabled }
            if let preAlarmWarningHours { s.preAlarmWarningHours = preAlarmWarningHours }
            if let use24HourFormat { s.use24HourFormat = use24HourFormat }
            if let soundID { s.soundID = soundID }
            if let vibrationEnabled { s.vibrationEnabled = vibrationEnabled }
            if let defaultPersistence { s.defaultPersistence = defaultPersistence }
            if let defaultDismissMethod { s.defaultDismissMethod = defaultDismissMethod }
            if let themeMode { s.themeMode = themeMode }
            if let hapticFeedback { s.hapticFeedback = hapticFeedback }
            if let showCompletionConfetti { s.showCompletionConfetti = showCompletionConfetti }
            if let alarmVolumeOverride { s.alarmVolumeOverride = alarmVolumeOverride }
            if let graduallyIncreaseVolume { s.graduallyIncreaseVolume = graduallyIncreaseVolume }
        }
    }

    static func show(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        return JSONBody.response(try await services.database.read { db in try UserSettingsStore.settings(userID: userID, on: db) })
    }

    /// → the settings; stale `version` → 409 CA010 with the current document.
    static func patch(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        let body = try JSONBody.decode(SettingsBody.self, from: request)
        return try await services.writeJSON { now, db in
            try UserSettingsStore.update(userID: userID, expectedVersion: body.version, at: now, on: db) { settings in
                body.apply(to: &settings)
                settings = try UserSettingsRules.validate(settings)
            }
        }
    }
}
