import Domain
import Realtime
import Storage
import Store
import Wire

/// `GET /v1/groups/{id}/activity`: a group's history for its members, from the change log
/// (docs/api.md#group-activity). Each event is shaped like the realtime `change` message of its batch
/// (`event`, `changes` with `kind`, `op`, `id`, `doc`, `reason`) plus `seq`, `at` and `actor`, so a
/// client tells both in the same words.
enum GroupActivityRoutes {
    /// Largest page.
    static let maxLimit = 100
    /// Page size when `limit` is absent.
    static let defaultLimit = 50

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.get, "/v1/groups/{id}/activity", .async { request in try await activity(request, services) })
    }

    /// `?before=<seq>` (a page's `next_before`; absent: the newest) and `?limit=1…100` (default 50).
    struct Query {
        var before: Int64?
        var limit = GroupActivityRoutes.defaultLimit

        init(_ request: Request) throws(DomainError) {
            let params = QueryParameters(request)
            limit = try params.limit(default: GroupActivityRoutes.defaultLimit, max: GroupActivityRoutes.maxLimit)
            if let value = params["before"], !value.isEmpty {  // `before=` is the first page
                guard let n = Int64(value), n > 0 else {
                    throw .invalidField(field: "before", message: "before must be a positive integer (a page's next_before)")
                }
                before = n
            }
        }
    }

    static func activity(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let (userID, groupID) = try await services.groupCaller(request)
        let query = try Query(request)
        let page = try await services.database.read { db in
            try GroupActivity.page(groupID: groupID, userID: userID, before: query.before, limit: query.limit, on: db)
        }
        return HTTPResponse(status: .ok, headers: ["Content-Type": JSONText.contentType], body: encode(page))
    }

    /// `{"events":[{"seq":S,"at":T,"actor":A,"event":E,"changes":[{"kind":K,"op":O,"id":I[,"doc":D][,"reason":R]
    /// [,"title":…][,"changed":[…]]},…]},…],"next_before":N|null}` — documents embedded verbatim, as the realtime
    /// feed sends them; a removed shared alarm carries its `title`, an edit the keys it `changed`.
    static func encode(_ page: GroupActivity.Page) -> [UInt8] {
        var out = Array(#"{"events":["#.utf8)
        for (index, batch) in page.batches.enumerated() {
            if index > 0 { out.append(0x2C) }
            out += Array(#"{"seq":\#(batch.batch),"at":"#.utf8)
            JSONString.append(Timestamp.format(batch.atMilliseconds).utf8, to: &out)
            out += Array(#","actor":"#.utf8)
            JSONString.append(batch.actor.utf8, to: &out)
            out += Array(#","event":"#.utf8)
            JSONString.append(batch.event.rawValue.utf8, to: &out)
            out += Array(#","changes":["#.utf8)
            for (rowIndex, row) in batch.rows.enumerated() {
                defer { appendAlarmSummary(row.change, event: batch.event, titles: page.removedAlarmTitles, to: &out) }
                let change = row.change
                if rowIndex > 0 { out.append(0x2C) }
                out += Array(#"{"kind":"#.utf8)
                JSONString.append(change.kind.rawValue.utf8, to: &out)
                out += Array(#","op":"#.utf8)
                JSONString.append(change.op.rawValue.utf8, to: &out)
                out += Array(#","id":"#.utf8)
                JSONString.append(change.entityID.utf8, to: &out)
                if let document = change.document {
                    out += Array(#","doc":"#.utf8)
                    out += document
                }
                if let reason = RemovalReason.forChange(event: batch.event, kind: change.kind, op: change.op) {
                    out += Array(#","reason":"#.utf8)
                    JSONString.append(reason.rawValue.utf8, to: &out)
                }
            }
            out += Array("]}".utf8)
        }
        out += Array(#"],"next_before":"#.utf8)
        out += Array((page.nextBefore.map { String($0) } ?? "null").utf8)
        out.append(0x7D)
        return out
    }

    /// Closes a change object, first adding what the history needs beyond the realtime shape:
    /// a removed shared alarm's `title`; an edit's `changed` keys (the row's stored reason,
    /// `SharedAlarm.editedKeys`).
    static func appendAlarmSummary(_ change: Change, event: ChangeEvent, titles: [String: String], to out: inout [UInt8]) {
        if change.kind == .sharedAlarm {
            if change.op == .removed, let title = titles[change.entityID] {
                out += Array(#","title":"#.utf8)
                JSONString.append(title.utf8, to: &out)
            } else if event == .sharedAlarmUpdated, let reason = change.reason {
                out += Array(#","changed":["#.utf8)
                for (index, key) in reason.split(separator: ",").enumerated() {
                    if index > 0 { out.append(0x2C) }
                    JSONString.append(key.utf8, to: &out)
                }
                out.append(0x5D)
            }
        }
        out.append(0x7D)
    }
}
