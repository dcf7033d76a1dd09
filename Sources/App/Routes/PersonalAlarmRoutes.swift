import Domain
import Storage
import Store
import Wire

/// `/v1/me/alarms…`: the caller's personal alarms, backed up and synced across their devices
/// (docs/personal-sync.md). Writes need the plus or premium tier (403 TIER_REQUIRED);
/// reads are open to every tier, so an account that went back to free still sees what it stored.
/// Ids are client-chosen UUIDs; another account's id is simply not found (404 ALARM_NOT_FOUND).
enum PersonalAlarmRoutes {
    /// Changes one sync read returns at most (`?limit=`, 1…`maxSyncLimit`).
    static let defaultSyncLimit = 200
    static let maxSyncLimit = 1_000

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.get, "/v1/me/alarms", .async { request in try await list(request, services) })
        router.add(.get, "/v1/me/alarms/{alarm_id}", .async { request in try await show(request, services) })
        router.add(.put, "/v1/me/alarms/{alarm_id}", .async { request in try await put(request, services) })
        router.add(.patch, "/v1/me/alarms/{alarm_id}", .async { request in try await patch(request, services) })
        router.add(.delete, "/v1/me/alarms/{alarm_id}", .async { request in try await delete(request, services) })
        router.add(.get, "/v1/me/alarms/{alarm_id}/conflicts", .async { request in try await conflicts(request, services) })
    }

    /// The full list: every live alarm and the seq a later `?since=` (or a realtime resume) continues
    /// from, read in one transaction.
    struct FullList: Encodable, Sendable {
        var alarms: [WithAttachments<PersonalAlarm>]
        var seq: Int64
    }

    /// A sync answer: the changes after `since` (alarms and completions), or every live alarm with
    /// `reset: true`.
    struct SyncAnswer: Encodable, Sendable {
        struct Entry: Encodable, Sendable {
            var seq: Int64
            var op: Change.Op
            /// `personal_alarm` or `personal_completion`.
            var kind: String
            var id: String
            /// An alarm's document for `added`/`modified`, with the alarm's attachments as they are now;
            /// absent for `removed`.
            var alarm: WithAttachments<PersonalAlarm>?
            /// A completion's document (op `added`; completions are immutable).
            var completion: PersonalCompletion?
        }
        var changes: [Entry]
        var reset: Bool
        var nextSince: Int64
        var more: Bool
        enum CodingKeys: String, CodingKey {
            case changes, reset, more
            case nextSince = "next_since"
        }
    }

    static func list(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        let params = QueryParameters(request)
        guard let sinceText = params["since"] else {
            let full = try await services.database.read { db in
                FullList(
                    alarms: try AttachmentStore.attaching(
                        try PersonalAlarmStore.live(userID: userID, on: db), kind: .personalAlarm, scope: userID, id: \.id, on: db),
                    seq: try ChangeLog.latestSeq(on: db))
            }
            return JSONBody.response(full)
        }
        guard let since = Int64(sinceText), since >= 0 else {
            throw DomainError.invalidField(field: "since", message: "since must be a seq (a non-negative integer)")
        }
        var limit = defaultSyncLimit
        if let text = params["limit"] {
            guard let n = Int(text), (1...maxSyncLimit).contains(n) else {
                throw DomainError.invalidField(field: "limit", message: "limit must be an integer from 1 to \(maxSyncLimit)")
            }
            limit = n
        }
        let pageSize = limit
        let answer = try await services.database.read { db in
            let sync = try PersonalAlarmStore.sync(userID: userID, since: since, limit: pageSize, on: db)
            let alarms = try sync.changes.filter { $0.kind == .personalAlarm }.compactMap { change in
                try change.document.map { try DocumentCoding.decode(PersonalAlarm.self, from: $0) }
            }
            // Each document with the attachments of now (the log's copy holds those of its write).
            let attached = try AttachmentStore.live(.personalAlarm, scope: userID, ownerIDs: alarms.map(\.id), on: db)
            return SyncAnswer(
                changes: try sync.changes.map { change in
                    if change.kind == .personalCompletion {
                        return SyncAnswer.Entry(
                            seq: change.seq, op: change.op, kind: change.kind.rawValue, id: change.entityID,
                            completion: try change.document.map { try DocumentCoding.decode(PersonalCompletion.self, from: $0) })
                    }
                    return SyncAnswer.Entry(
                        seq: change.seq, op: change.op, kind: change.kind.rawValue, id: change.entityID,
                        alarm: try change.document.map {
                            let alarm = try DocumentCoding.decode(PersonalAlarm.self, from: $0)
                            return WithAttachments(alarm, attachments: attached[alarm.id] ?? [])
                        })
                },
                reset: sync.reset, nextSince: sync.next, more: sync.more)
        }
        return JSONBody.response(answer)
    }

    static func show(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        let alarmID = try PersonalAlarmRules.alarmID(try request.parameter("alarm_id"))
        let alarm = try await services.database.read { db in
            guard let alarm = try PersonalAlarmStore.find(userID: userID, alarmID: alarmID, on: db), alarm.deletedAt == nil else {
                throw DomainError.alarmNotFound
            }
            return try attaching(alarm, on: db)
        }
        return JSONBody.response(alarm)
    }

    /// Create or replace: 201 created, 200 replaced; 200 with the stored document when last-write-wins
    /// kept it (the body's version is then in the conflict archive).
    static func put(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let (stored, created) = try await syncWrite(request, services) { now in
            let body = try AlarmBody.decode(for: .personal, from: request)
            let settings = try SharedAlarmRules.validate(try body.newSettings(), now: now)
            let sortOrder = body.sortOrder ?? 0
            try PersonalAlarmRules.checkSortOrder(sortOrder)
            let edit = PersonalAlarmStore.Edit(
                settings: settings, isEnabled: body.isEnabled ?? true, vibrationEnabled: body.vibrationEnabled ?? true,
                sortOrder: sortOrder, editedAt: try PersonalAlarmRules.editTime(body.updatedAt, now: now))
            return (edit: edit, version: body.version)
        } write: { input, userID, alarmID, now, db in
            switch try PersonalAlarmStore.put(
                userID: userID, alarmID: alarmID, edit: input.edit, expectedVersion: input.version, at: now, on: db)
            {
            case .created(_, let document): (document, true)
            case .replaced(_, _, let document): (document, false)
            case .lost(_, let document): (document, false)
            }
        }
        return JSONBody.response(encoded: stored, status: created ? .created : .ok)
    }

    static func patch(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let patched = try await syncWrite(request, services) { _ in
            let body = try AlarmBody.decode(for: .personal, from: request)
            if let sortOrder = body.sortOrder { try PersonalAlarmRules.checkSortOrder(sortOrder) }
            return body
        } write: { body, userID, alarmID, now, db in
            let editedAt = try PersonalAlarmRules.editTime(body.updatedAt, now: now)
            return try PersonalAlarmStore.patch(
                userID: userID, alarmID: alarmID, expectedVersion: body.version, editedAt: editedAt, at: now, on: db
            ) { alarm in
                var settings = alarm.settings
                try body.apply(to: &settings)
                alarm.settings = try SharedAlarmRules.validate(settings, now: now)
                if let isEnabled = body.isEnabled { alarm.isEnabled = isEnabled }
                if let vibrationEnabled = body.vibrationEnabled { alarm.vibrationEnabled = vibrationEnabled }
                if let sortOrder = body.sortOrder { alarm.sortOrder = sortOrder }
            }.document
        }
        return JSONBody.response(encoded: patched)
    }

    /// A sync write by the signed-in user to the alarm `alarm_id` the path names: a `.concurrent` write
    /// with the session read inside it (`Services.writeAsUser`). Answers, in this order: the signed-in
    /// user (401), whose tier must sync (403 TIER_REQUIRED), the `alarm_id` (422 when it is not a UUID),
    /// then `prepare`'s errors (the body, checked at `now`) and the write's. `write` gets `prepare`'s
    /// answer, the user, the alarm id and the same `now`.
    static func syncWrite<Input: Sendable, T: Sendable>(
        _ request: Request, _ services: Services, prepare: (_ now: Int64) throws -> Input,
        write: @escaping @Sendable (_ input: Input, _ userID: String, _ alarmID: String, _ now: Int64, any SQLConnection) throws -> T
    ) async throws -> T {
        let needs = Services.TierNeed(tier: .plus, what: PersonalAlarmRules.syncTierMessage)
        // Concurrent: the personal stores lock the account's row first (`PersonalAlarmStore.findLocked`),
        // so writes of different accounts run together (on PostgreSQL, beside each other on the
        // concurrent writer connections) and one account's one after the other.
        return try await services.writeAsUser(request, .concurrent, needs: needs) { now in
            (alarmID: try PersonalAlarmRules.alarmID(try request.parameter("alarm_id")), input: try prepare(now))
        } write: { target, caller, now, db in
            try write(target.input, caller.userID, target.alarmID, now, db)
        }
    }

    /// The alarm document as answers show it: with its live attachments (docs/attachments.md#in-the-documents).
    static func attaching(_ alarm: PersonalAlarm, on db: any SQLConnection) throws -> WithAttachments<PersonalAlarm> {
        try AttachmentStore.attaching(alarm, to: .personalAlarm(userID: alarm.userID, alarmID: alarm.id), on: db)
    }

    /// 204; `?version=N` makes it conditional (409 CA010 with the current document when stale).
    static func delete(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        try await syncWrite(request, services) { _ throws(DomainError) -> Int64? in
            guard let text = QueryParameters(request)["version"] else { return nil }
            guard let version = Int64(text), version >= 1 else {
                throw DomainError.invalidField(field: "version", message: "version must be a positive integer")
            }
            return version
        } write: { expectedVersion, userID, alarmID, now, db in
            try PersonalAlarmStore.delete(userID: userID, alarmID: alarmID, expectedVersion: expectedVersion, at: now, on: db)
        }
        return HTTPResponse(status: .noContent)
    }

    /// The versions of an alarm (live or deleted) that lost a last-write-wins comparison in the last
    /// 30 days, newest first; 404 for an id the account never had.
    struct ConflictList: Encodable, Sendable {
        struct Entry: Encodable, Sendable {
            var alarm: PersonalAlarm
            var archivedAt: Timestamp
            enum CodingKeys: String, CodingKey {
                case alarm
                case archivedAt = "archived_at"
            }
        }
        var conflicts: [Entry]
    }

    static func conflicts(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        let alarmID = try PersonalAlarmRules.alarmID(try request.parameter("alarm_id"))
        let list = try await services.database.read { db in
            guard try PersonalAlarmStore.find(userID: userID, alarmID: alarmID, on: db) != nil else { throw DomainError.alarmNotFound }
            return try PersonalAlarmStore.conflicts(userID: userID, alarmID: alarmID, on: db)
        }
        return JSONBody.response(ConflictList(conflicts: list.map { ConflictList.Entry(alarm: $0.alarm, archivedAt: $0.archivedAt) }))
    }
}
