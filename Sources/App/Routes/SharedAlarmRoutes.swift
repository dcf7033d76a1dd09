import Domain
import Foundation
import SQLite
import Storage
import Store
import Wire

/// `/v1/groups/{id}/alarms…`: shared alarms (issue 4; docs/design.md#shared-alarms). Any active
/// member reads; owner/admin create and edit; the creator or the owner deletes. Non-members get 404
/// for the group, an unknown or deleted alarm 404 ALARM_NOT_FOUND. Errors in `schedule`,
/// `times_of_day` or `timezone` — decoding or rules — are 422 SCHEDULE_INVALID naming the field.
enum SharedAlarmRoutes {
    /// POST and PATCH bodies. Every field optional here; `create` checks the required ones. In a PATCH,
    /// an absent field stays and `null` clears a nullable one (`note`, `sound_id`, `color_tag`,
    /// `icon_name`, `category`; `assigned_to_uids: null` = `[]`).
    struct AlarmBody: StrictBody {
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
        var preAlarmOffset: Int?
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
        var version: Int64?

        enum CodingKeys: String, CodingKey, CaseIterable {
            case title, note, schedule, timezone, category, version
            case timesOfDay = "times_of_day"
            case timeOfDay = "time_of_day"
            case persistenceLevel = "persistence_level"
            case soundID = "sound_id"
            case preAlarmEnabled = "pre_alarm_enabled"
            case preAlarmOffset = "pre_alarm_offset"
            case snoozeEnabled = "snooze_enabled"
            case snoozeOptions = "snooze_options"
            case dismissMethod = "dismiss_method"
            case colorTag = "color_tag"
            case iconName = "icon_name"
            case assignedTo = "assigned_to_uids"
            case completionRule = "completion_rule"
            case requireAny = "require_any_completion"
            case requireAll = "require_all_completion"
            case graceMinutes = "grace_minutes"
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            title = try c.decodeIfPresent(String.self, forKey: .title)
            note = try StrictKeys.nullable(c, .note)
            schedule = try Self.timing(c, .schedule)
            timesOfDay = try Self.timing(c, .timesOfDay)
            timezone = try Self.timing(c, .timezone)
            if let text: String = try Self.timing(c, .timeOfDay) {
                guard let time = TimeOfDay(parsing: text) else {
                    throw DomainError.invalidSchedule(field: "time_of_day", message: "time_of_day must be HH:mm")
                }
                timeOfDay = time
            }
            persistenceLevel = try c.decodeIfPresent(PersistenceLevel.self, forKey: .persistenceLevel)
            soundID = try StrictKeys.nullable(c, .soundID)
            preAlarmEnabled = try c.decodeIfPresent(Bool.self, forKey: .preAlarmEnabled)
            preAlarmOffset = try c.decodeIfPresent(Int.self, forKey: .preAlarmOffset)
            snoozeEnabled = try c.decodeIfPresent(Bool.self, forKey: .snoozeEnabled)
            snoozeOptions = try c.decodeIfPresent([Int].self, forKey: .snoozeOptions)
            dismissMethod = try c.decodeIfPresent(DismissMethod.self, forKey: .dismissMethod)
            colorTag = try StrictKeys.nullable(c, .colorTag)
            iconName = try StrictKeys.nullable(c, .iconName)
            category = try StrictKeys.nullable(c, .category)
            assignedTo = try StrictKeys.nullable(c, .assignedTo)
            completionRule = try c.decodeIfPresent(CompletionRule.self, forKey: .completionRule)
            requireAny = try c.decodeIfPresent(Bool.self, forKey: .requireAny)
            requireAll = try c.decodeIfPresent(Bool.self, forKey: .requireAll)
            graceMinutes = try c.decodeIfPresent(Int.self, forKey: .graceMinutes)
            version = try c.decodeIfPresent(Int64.self, forKey: .version)
        }

        /// Decodes a timing field; a decoding error becomes SCHEDULE_INVALID naming the dotted field.
        static func timing<T: Decodable>(_ c: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) throws -> T? {
            do {
                return try c.decodeIfPresent(T.self, forKey: key)
            } catch let error as DecodingError {
                let api = JSONBody.apiError(for: error)
                throw DomainError.invalidSchedule(field: api.field ?? key.stringValue, message: api.message)
            }
        }

        /// Applies the present fields to `s` (validation is `SharedAlarmRules.validate`'s job).
        func apply(to s: inout SharedAlarmSettings) throws(DomainError) {
            if let title { s.title = title }
            if let note { s.note = note }
            if let schedule { s.timing.schedule = schedule }
            if let times = timesOfDay ?? timeOfDay.map({ [$0] }) { s.timing.timesOfDay = times }
            if let timezone { s.timing.timezone = timezone }
            if let persistenceLevel { s.persistenceLevel = persistenceLevel }
            if let soundID { s.soundID = soundID }
            if let preAlarmEnabled { s.preAlarmEnabled = preAlarmEnabled }
            if let preAlarmOffset { s.preAlarmOffset = preAlarmOffset }
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

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.post, "/v1/groups/{id}/alarms", .async { request in try await create(request, services) })
        router.add(.get, "/v1/groups/{id}/alarms", .async { request in try await list(request, services) })
        router.add(.get, "/v1/groups/{id}/alarms/{aid}", .async { request in try await show(request, services) })
        router.add(.patch, "/v1/groups/{id}/alarms/{aid}", .async { request in try await patch(request, services) })
        router.add(.delete, "/v1/groups/{id}/alarms/{aid}", .async { request in try await delete(request, services) })
        CompletionRoutes.register(in: &router, services: services)
    }

    static func create(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let (userID, groupID) = try await services.groupCaller(request)
        let body = try JSONBody.decode(AlarmBody.self, from: request)
        guard body.version == nil else {
            throw APIError(.validationFailed, "version is invalid: unknown field", field: "version")
        }
        guard let title = body.title else { throw APIError(.validationFailed, "title is required", field: "title") }
        guard let schedule = body.schedule else {
            throw DomainError.invalidSchedule(field: "schedule", message: "schedule is required")
        }
        guard let times = body.timesOfDay ?? body.timeOfDay.map({ [$0] }) else {
            throw DomainError.invalidSchedule(field: "times_of_day", message: "times_of_day is required")
        }
        guard let zone = body.timezone else {
            throw DomainError.invalidSchedule(field: "timezone", message: "timezone is required")
        }
        let now = services.clock.nowMilliseconds()
        var settings = SharedAlarmSettings(
            title: title, timing: AlarmTiming(schedule: schedule, timesOfDay: times, timezone: zone))
        try body.apply(to: &settings)
        let valid = try SharedAlarmRules.validate(settings, now: now)
        let alarm = try await services.database.write { db in
            try SharedAlarmStore.create(groupID: groupID, actorID: userID, settings: valid, at: now, on: db)
        }
        return JSONBody.response(alarm, status: .created)
    }

    static func list(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let (userID, groupID) = try await services.groupCaller(request)
        let query = try ListQuery(request)
        let params = QueryParameters(request)
        let includeDeleted: Bool
        switch params["include_deleted"] {
        case nil, "false", "0": includeDeleted = false
        case "true", "1", "": includeDeleted = true
        default:
            throw DomainError.invalidField(field: "include_deleted", message: "include_deleted must be true or false")
        }
        let page = try await services.database.read { db in
            try SharedAlarmStore.alarms(
                groupID: groupID, userID: userID, includeDeleted: includeDeleted, after: query.after,
                limit: query.limit,
                on: db)
        }
        return JSONBody.response(ListPage("alarms", page))
    }

    static func show(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let (userID, groupID) = try await services.groupCaller(request)
        let alarmID = try request.parameter("aid")
        let alarm = try await services.database.read { db in
            try SharedAlarmStore.access(groupID: groupID, alarmID: alarmID, userID: userID, on: db).1
        }
        return JSONBody.response(alarm)
    }

    static func patch(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let (userID, groupID) = try await services.groupCaller(request)
        let alarmID = try request.parameter("aid")
        let body = try JSONBody.decode(AlarmBody.self, from: request)
        return try await services.writeJSON { now, db in
            try SharedAlarmStore.update(
                groupID: groupID, alarmID: alarmID, actorID: userID, expectedVersion: body.version, at: now, on: db
            ) { settings in try body.apply(to: &settings) }
        }
    }

    static func delete(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let (userID, groupID) = try await services.groupCaller(request)
        let alarmID = try request.parameter("aid")
        return try await services.writeNoContent { now, db in
            try SharedAlarmStore.delete(groupID: groupID, alarmID: alarmID, actorID: userID, at: now, on: db)
        }
    }
}

/// The query string's `name=value` pairs, percent-decoded (`+` is a space only in forms, so it stays).
struct QueryParameters {
    private var values: [String: String] = [:]

    init(_ request: Request) {
        guard let query = request.http.head.query else { return }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            let value = parts.count == 2 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : ""
            if values[name] == nil { values[name] = value }
        }
    }

    subscript(_ name: String) -> String? { values[name] }
}
