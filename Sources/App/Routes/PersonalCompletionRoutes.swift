import Domain
import Storage
import Store
import Wire

/// Personal completions (docs/personal-sync.md#completions): `POST
/// /v1/me/alarms/{alarm_id}/completions` (201 new, 200 the occurrence's existing record), the
/// newest-first list of one alarm, and `GET /v1/me/completions` across all of them. Immutable: no
/// update or delete. Writes need plus or premium (403 TIER_REQUIRED), reads are open to every tier —
/// the personal alarms' rule (`PersonalAlarmRules.checkWrite`).
enum PersonalCompletionRoutes {
    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.post, "/v1/me/alarms/{alarm_id}/completions", .async { request in try await record(request, services) })
        router.add(.get, "/v1/me/alarms/{alarm_id}/completions", .async { request in try await list(request, services) })
        router.add(.get, "/v1/me/completions", .async { request in try await list(request, services) })
    }

    static func record(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let recorded = try await PersonalAlarmRoutes.syncWrite(request, services) { now in
            let body = try CompletionBody.decode(for: .personal, from: request)
            guard let scheduledAt = body.scheduledAt else {
                throw DomainError.invalidField(field: "scheduled_at", message: "scheduled_at (the occurrence answered) is required")
            }
            try PersonalCompletionRules.checkScheduledAt(scheduledAt, now: now)
            let note = try SharedAlarmRules.completionNote(body.note)
            let snoozes = body.snoozeCount ?? 0
            try SharedAlarmRules.checkSnoozeCount(snoozes)
            let snoozeMinutes = body.totalSnoozeMinutes ?? 0
            try PersonalCompletionRules.checkTotalSnoozeMinutes(snoozeMinutes)
            let id = try body.id.map { text throws(DomainError) in try PersonalCompletionRules.completionID(text) }
            return PersonalCompletionStore.Answer(
                id: id, scheduledAt: scheduledAt, status: body.status,
                method: body.completionMethod ?? (body.status == .skipped ? .skipped : .onTime), snoozeCount: snoozes,
                totalSnoozeMinutes: snoozeMinutes, note: note,
                completedAt: try PersonalCompletionRules.completionTime(body.completedAt, now: now))
        } write: { answer, userID, alarmID, now, db in
            try PersonalCompletionStore.record(userID: userID, alarmID: alarmID, answer: answer, at: now, on: db)
        }
        return JSONBody.response(recorded.completion, status: recorded.created ? .created : .ok)
    }

    /// `?status=&from=&to=` (as the shared lists: `CompletionRoutes.listFilter`), plus `alarm_id=` on
    /// `/v1/me/completions`, and `limit`/`cursor`. An alarm's list answers 404 ALARM_NOT_FOUND for an id
    /// the account never had (or whose tombstone was purged); a tombstone's history is still listed.
    static func list(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        let params = QueryParameters(request)
        let named = request.parameters["alarm_id"] ?? params["alarm_id"]
        let alarmID = try named.map { text throws(DomainError) in try PersonalAlarmRules.alarmID(text) }
        let query = try ListQuery(request)
        let window = try CompletionRoutes.listFilter(params)
        let filter = PersonalCompletionStore.Filter(status: window.status, from: window.from, to: window.to)
        let page = try await services.database.read { db in
            try PersonalCompletionStore.completions(
                userID: userID, alarmID: alarmID, filter: filter, after: query.after, limit: query.limit, on: db)
        }
        return JSONBody.response(ListPage("completions", page))
    }
}
