import Domain
import Storage
import Store
import Wire

/// Personal completions (issue 19; docs/personal-sync.md#completions): `POST
/// /v1/me/alarms/{alarm_id}/completions` (201 new, 200 the occurrence's existing record), the
/// newest-first list of one alarm, and `GET /v1/me/completions` across all of them. Immutable: no
/// update or delete. Writes need plus or premium (403 TIER_REQUIRED), reads are open to every tier —
/// the personal alarms' rule (`PersonalAlarmRules.checkWrite`).
enum PersonalCompletionRoutes {
    /// The shared completion body's fields (`CompletionRoutes.CompletionBody`: `status`, `note`,
    /// `completion_method`, `snooze_count`, `scheduled_at` or `scheduled_date`), with `scheduled_at`
    /// required — the server keeps no occurrence of a personal alarm, so the device names the one it
    /// answered — plus the seeds' `total_snooze_minutes`, the device's `completed_at` (default: now)
    /// and its own `id` (default: the server picks one). Unknown fields → 422.
    struct Body: StrictBody {
        var id: String?
        var status: CompletionStatus
        var note: String?
        var completionMethod: CompletionMethod?
        var snoozeCount: Int64?
        var totalSnoozeMinutes: Int64?
        var scheduledAt: Timestamp?
        var completedAt: Timestamp?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case id, status, note
            case completionMethod = "completion_method"
            case snoozeCount = "snooze_count"
            case totalSnoozeMinutes = "total_snooze_minutes"
            case scheduledAt = "scheduled_at"
            case scheduledDate = "scheduled_date"
            case completedAt = "completed_at"
        }
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            id = try c.decodeIfPresent(String.self, forKey: .id)
            status = try c.decode(CompletionStatus.self, forKey: .status)
            note = try c.decodeIfPresent(String.self, forKey: .note)
            completionMethod = try c.decodeIfPresent(CompletionMethod.self, forKey: .completionMethod)
            snoozeCount = try c.decodeIfPresent(Int64.self, forKey: .snoozeCount)
            totalSnoozeMinutes = try c.decodeIfPresent(Int64.self, forKey: .totalSnoozeMinutes)
            scheduledAt =
                try c.decodeIfPresent(Timestamp.self, forKey: .scheduledAt)
                ?? c.decodeIfPresent(Timestamp.self, forKey: .scheduledDate)
            completedAt = try c.decodeIfPresent(Timestamp.self, forKey: .completedAt)
        }
    }

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.post, "/v1/me/alarms/{alarm_id}/completions", .async { request in try await record(request, services) })
        router.add(.get, "/v1/me/alarms/{alarm_id}/completions", .async { request in try await list(request, services) })
        router.add(.get, "/v1/me/completions", .async { request in try await list(request, services) })
    }

    static func record(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let user = try await services.authenticate(request).user
        try PersonalAlarmRules.checkWrite(tier: user.tier)
        let alarmID = try PersonalAlarmRules.alarmID(try request.parameter("alarm_id"))
        let body = try JSONBody.decode(Body.self, from: request)
        guard let scheduledAt = body.scheduledAt else {
            throw DomainError.invalidField(field: "scheduled_at", message: "scheduled_at (the occurrence answered) is required")
        }
        let now = services.clock.nowMilliseconds()
        try PersonalCompletionRules.checkScheduledAt(scheduledAt, now: now)
        let note = try SharedAlarmRules.completionNote(body.note)
        let snoozes = body.snoozeCount ?? 0
        try SharedAlarmRules.checkSnoozeCount(snoozes)
        let snoozeMinutes = body.totalSnoozeMinutes ?? 0
        try PersonalCompletionRules.checkTotalSnoozeMinutes(snoozeMinutes)
        let id = try body.id.map { text throws(DomainError) in try PersonalCompletionRules.completionID(text) }
        let answer = PersonalCompletionStore.Answer(
            id: id, scheduledAt: scheduledAt, status: body.status,
            method: body.completionMethod ?? (body.status == .skipped ? .skipped : .onTime), snoozeCount: snoozes,
            totalSnoozeMinutes: snoozeMinutes, note: note,
            completedAt: try PersonalCompletionRules.completionTime(body.completedAt, now: now))
        let userID = user.id
        let recorded = try await services.database.write { db in
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
