import Domain
import Storage
import Store
import Wire

/// Shared completions (docs/design.md#occurrences-and-completions): `POST …/alarms/{aid}/completions`
/// by a member of the open occurrence's required set (201 new, 200 a retry's existing record, 409
/// OCCURRENCE_CLOSED with the alarm), and the newest-first lists of one alarm or the whole group.
/// Completions are immutable: there is no update; `DELETE …/completions/{completion_id}` takes an answer back
/// (its author, within the withdrawal window; docs/design.md#answers-retries-and-undo) and leaves it in
/// the history marked `withdrawn_at`.
enum CompletionRoutes {
    struct Recorded: Encodable {
        var completion: WithAttachments<SharedCompletion>
        var alarm: SharedAlarmView
    }

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(
            .post, "/v1/groups/{id}/alarms/{aid}/completions", .async { request in try await record(request, services) }
        )
        router.add(
            .get, "/v1/groups/{id}/alarms/{aid}/completions", .async { request in try await list(request, services) })
        router.add(.get, "/v1/groups/{id}/completions", .async { request in try await list(request, services) })
        router.add(
            .delete, "/v1/groups/{id}/alarms/{aid}/completions/{completion_id}",
            .async { request in try await withdraw(request, services) })
    }

    /// `DELETE …/completions/{completion_id}`: 200 `{completion, alarm}` (also when it was already withdrawn);
    /// someone else's 403 CA007, unknown 404, too late or moved on 409 CA051.
    static func withdraw(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        // The session is read with the write (`Services.writeAsUser`). Concurrent: `withdraw` locks the
        // alarm's row first, as `record` does.
        let withdrawn = try await services.writeAsUser(request, .concurrent) { _ in
            (
                groupID: try request.parameter("id"), alarmID: try request.parameter("aid"),
                completionID: try request.parameter("completion_id")
            )
        } write: { path, caller, now, db in
            let done = try CompletionStore.withdraw(
                groupID: path.groupID, alarmID: path.alarmID, completionID: path.completionID, userID: caller.userID, at: now, on: db)
            let completion = try AttachmentStore.attaching(
                done.completion, to: .sharedCompletion(groupID: path.groupID, completionID: path.completionID), on: db)
            return Recorded(completion: completion, alarm: try SharedAlarmView.reading(done.alarm, at: now, on: db))
        }
        return JSONBody.response(withdrawn, status: .ok)
    }

    static func record(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        // The session is read with the write (`Services.writeAsUser`). Concurrent: `record` locks the
        // alarm row first (answers to different alarms run together).
        let (answered, created) = try await services.writeAsUser(request, .concurrent) { _ in
            let body = try CompletionBody.decode(for: .shared, from: request)
            let note = try SharedAlarmRules.completionNote(body.note)
            let snoozes = body.snoozeCount ?? 0
            try SharedAlarmRules.checkSnoozeCount(snoozes)
            let answer = CompletionStore.Answer(
                status: body.status, method: body.completionMethod ?? (body.status == .skipped ? .skipped : .onTime),
                snoozeCount: snoozes, note: note, scheduledAt: body.scheduledAt?.milliseconds)
            return (groupID: try request.parameter("id"), alarmID: try request.parameter("aid"), answer: answer)
        } write: { input, caller, now, db in
            let recorded = try CompletionStore.record(
                groupID: input.groupID, alarmID: input.alarmID, userID: caller.userID, answer: input.answer, at: now, on: db)
            return (
                Recorded(
                    completion: WithAttachments(recorded.completion, attachments: recorded.completionAttachments),
                    alarm: SharedAlarmView(recorded.alarm, attachments: recorded.alarmAttachments, at: now)),
                recorded.created
            )
        }
        return JSONBody.response(answered, status: created ? .created : .ok)
    }

    /// The filters every completion list shares (shared and personal): `status` (`completed|skipped`)
    /// and `from`/`to` (RFC 3339; `completed_at` in `[from, to)`); 422 naming the parameter.
    static func listFilter(_ params: QueryParameters) throws(DomainError) -> (status: CompletionStatus?, from: Int64?, to: Int64?) {
        var status: CompletionStatus?
        if let text = params["status"] {
            guard let value = CompletionStatus(rawValue: text) else {
                throw .invalidField(field: "status", message: "status must be completed or skipped")
            }
            status = value
        }
        var bounds: [String: Int64] = [:]
        for name in ["from", "to"] {
            guard let text = params[name] else { continue }
            guard let ms = Timestamp.parse(text) else { throw .invalidField(field: name, message: "\(name) must be an RFC 3339 timestamp") }
            bounds[name] = ms
        }
        return (status, bounds["from"], bounds["to"])
    }

    /// `?user_id=&status=&from=&to=` (RFC 3339; `completed_at` in `[from, to)`) plus `limit`/`cursor`.
    static func list(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let (userID, groupID) = try await services.groupCaller(request)
        let alarmID = request.parameters["aid"]
        let query = try ListQuery(request)
        let params = QueryParameters(request)
        let window = try listFilter(params)
        let chosen = CompletionStore.Filter(userID: params["user_id"], status: window.status, from: window.from, to: window.to)
        let page = try await services.database.read { db in
            let page = try CompletionStore.completions(
                groupID: groupID, alarmID: alarmID, userID: userID, filter: chosen, after: query.after,
                limit: query.limit, on: db)
            return GroupStore.Page(
                items: try AttachmentStore.attaching(page.items, kind: .sharedCompletion, scope: groupID, id: \.id, on: db),
                next: page.next)
        }
        return JSONBody.response(ListPage("completions", page))
    }
}
