import Domain
import Foundation
import Storage
import Store
import Wire

/// `/v1/groups/{id}/alarms…`: shared alarms (docs/design.md#shared-alarms). Any active
/// member reads; owner/admin create and edit; the creator or the owner deletes. Non-members get 404
/// for the group, an unknown or deleted alarm 404 ALARM_NOT_FOUND. Errors in `schedule`,
/// `times_of_day` or `timezone` — decoding or rules — are 422 SCHEDULE_INVALID naming the field.
enum SharedAlarmRoutes {
    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.post, "/v1/groups/{id}/alarms", .async { request in try await create(request, services) })
        router.add(.get, "/v1/groups/{id}/alarms", .async { request in try await list(request, services) })
        router.add(.get, "/v1/groups/{id}/alarms/{aid}", .async { request in try await show(request, services) })
        router.add(.patch, "/v1/groups/{id}/alarms/{aid}", .async { request in try await patch(request, services) })
        router.add(.delete, "/v1/groups/{id}/alarms/{aid}", .async { request in try await delete(request, services) })
        router.add(.get, "/v1/me/shared-alarms", .async { request in try await mine(request, services) })
        CompletionRoutes.register(in: &router, services: services)
    }

    static func create(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        // Concurrent: the store locks the creator's row and the group's before it counts
        // (`SharedAlarmStore.create`).
        let (alarm, now) = try await services.writeToGroup(request, .concurrent) { now in
            let body = try AlarmBody.decode(for: .shared, from: request)
            guard body.version == nil else {
                throw APIError(.validationFailed, "version is invalid: unknown field", field: "version")
            }
            guard body.archived == nil else {
                throw APIError(.validationFailed, "archived is invalid: a new alarm is not done", field: "archived")
            }
            // Validated at the write's `now` (a first fire must not lie in the past), before it.
            return (settings: try SharedAlarmRules.validate(try body.newSettings(), now: now), controls: body.controls)
        } write: { input, userID, groupID, now, db in
            let alarm = try SharedAlarmStore.create(
                groupID: groupID, actorID: userID, settings: input.settings, controls: input.controls, at: now, on: db)
            return (alarm, now)
        }
        return JSONBody.response(SharedAlarmView(alarm, attachments: [], at: now), status: .created)
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
        // `archived`: absent or false leaves archived alarms out, true lists only them, any lists both.
        guard let archived = SharedAlarmStore.ArchivedFilter(rawValue: params["archived"] ?? "false") else {
            throw DomainError.invalidField(field: "archived", message: "archived must be true, false or any")
        }
        let now = services.clock.nowMilliseconds()
        let page = try await services.database.read { db in
            try SharedAlarmView.page(
                try SharedAlarmStore.alarms(
                    groupID: groupID, userID: userID, includeDeleted: includeDeleted, archived: archived, after: query.after,
                    limit: query.limit, on: db), at: now, on: db)
        }
        return JSONBody.response(ListPage("alarms", page))
    }

    /// `GET /v1/me/shared-alarms?state=&assigned=me&limit=&cursor=`: "what do I have to do" across my
    /// groups (docs/api.md#my-shared-alarms). `state` upcoming|due|overdue (absent: all); `assigned`
    /// only `me`. Unknown values → 422 naming the parameter.
    static func mine(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        let query = try ListQuery(request)
        let params = QueryParameters(request)
        var state: SharedAlarmStore.MineState?
        if let raw = params["state"], !raw.isEmpty {
            guard let value = SharedAlarmStore.MineState(rawValue: raw) else {
                throw DomainError.invalidField(field: "state", message: "state must be upcoming, due or overdue")
            }
            state = value
        }
        let assigned: Bool
        switch params["assigned"] {
        case nil, "": assigned = false
        case "me": assigned = true
        default: throw DomainError.invalidField(field: "assigned", message: "assigned must be me")
        }
        let now = services.clock.nowMilliseconds()
        let chosen = state
        let page = try await services.database.read { db in
            try SharedAlarmView.page(
                try SharedAlarmStore.mine(
                    userID: userID, state: chosen, assignedToMe: assigned, at: now, after: query.after, limit: query.limit,
                    on: db), at: now, on: db)
        }
        return JSONBody.response(ListPage("alarms", page))
    }

    static func show(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let (userID, groupID) = try await services.groupCaller(request)
        let alarmID = try request.parameter("aid")
        let now = services.clock.nowMilliseconds()
        let view = try await services.database.read { db in
            try SharedAlarmView.reading(
                SharedAlarmStore.access(groupID: groupID, alarmID: alarmID, userID: userID, on: db).1, at: now, on: db)
        }
        return JSONBody.response(view)
    }

    static func patch(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        // `.concurrent`: the alarm row is locked first (`SharedAlarmStore.update`).
        let view = try await services.writeToGroup(request, .concurrent) { _ in
            (alarmID: try request.parameter("aid"), body: try AlarmBody.decode(for: .shared, from: request))
        } write: { input, userID, groupID, now, db in
            let body = input.body
            let edited = try SharedAlarmStore.update(
                groupID: groupID, alarmID: input.alarmID, actorID: userID, expectedVersion: body.version,
                controls: body.controls, archived: body.archived, at: now, on: db
            ) { settings in try body.apply(to: &settings) }
            return SharedAlarmView.encoded(edited, at: now)
        }
        return JSONBody.response(encoded: view)
    }

    static func delete(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        // `.concurrent`: the alarm row is locked first (`SharedAlarmStore.delete`).
        try await services.writeToGroup(request, .concurrent) { _ in
            try request.parameter("aid")
        } write: { alarmID, userID, groupID, now, db in
            try SharedAlarmStore.delete(groupID: groupID, alarmID: alarmID, actorID: userID, at: now, on: db)
        }
        return HTTPResponse(status: .noContent)
    }
}

/// A shared alarm as an HTTP answer shows it: the document plus `occurrence_state` at the time of the
/// answer (docs/design.md#occurrence-states). Only here: the stored and change-log documents hold no
/// time-dependent field (a realtime client derives the state from `next_fire_at`, `answerable_from`,
/// `grace_minutes` and the occurrence's `status`).
struct SharedAlarmView: Encodable, Sendable {
    var alarm: SharedAlarm
    /// Its live attachments, oldest first (docs/attachments.md#in-the-documents).
    var attachments: [Attachment]
    var now: Int64

    init(_ alarm: SharedAlarm, attachments: [Attachment], at now: Int64) {
        self.alarm = alarm
        self.attachments = attachments
        self.now = now
    }

    /// The alarms as seen at `now`, each with its attachments read in the caller's transaction.
    static func reading(_ alarms: [SharedAlarm], at now: Int64, on db: any SQLConnection) throws -> [SharedAlarmView] {
        var byAlarm: [String: [Attachment]] = [:]
        for (groupID, inGroup) in Dictionary(grouping: alarms, by: \.groupID) {
            let found = try AttachmentStore.live(.sharedAlarm, scope: groupID, ownerIDs: inGroup.map(\.id), on: db)
            byAlarm.merge(found) { first, _ in first }
        }
        return alarms.map { SharedAlarmView($0, attachments: byAlarm[$0.id] ?? [], at: now) }
    }

    /// One alarm as seen at `now`, with its attachments.
    static func reading(_ alarm: SharedAlarm, at now: Int64, on db: any SQLConnection) throws -> SharedAlarmView {
        try reading([alarm], at: now, on: db)[0]
    }

    /// Every alarm of a page as seen at `now`, with their attachments.
    static func page(_ page: GroupStore.Page<SharedAlarm>, at now: Int64, on db: any SQLConnection) throws
        -> GroupStore.Page<SharedAlarmView>
    {
        GroupStore.Page(items: try reading(page.items, at: now, on: db), next: page.next)
    }

    /// The key of the time-dependent member the view adds to the document.
    static let occurrenceStateKey = "occurrence_state"

    /// The edited alarm as seen at `now`, encoded: its change-log document with `occurrence_state`
    /// put in (`DocumentMembers.inserting`), the bytes `encode(to:)` writes, not encoded again.
    static func encoded(_ edited: SharedAlarmStore.Edited, at now: Int64) -> [UInt8] {
        DocumentMembers.inserting(
            occurrenceStateKey, DocumentCoding.encode(edited.alarm.occurrenceState(at: now)), into: edited.document)
            ?? DocumentCoding.encode(SharedAlarmView(edited.alarm, attachments: edited.attachments, at: now))
    }

    func encode(to encoder: any Encoder) throws {
        try alarm.encode(to: encoder)
        var c = encoder.container(keyedBy: StrictKeys.AnyKey.self)
        try c.encode(alarm.occurrenceState(at: now), forKey: StrictKeys.AnyKey(stringValue: Self.occurrenceStateKey))
        try c.encode(attachments, forKey: StrictKeys.AnyKey(stringValue: WithAttachments<SharedAlarm>.attachmentsKey))
    }
}
