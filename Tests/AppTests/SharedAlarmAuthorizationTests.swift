import Domain
import Foundation
import TestSupport
import Testing
import Wire

@testable import App

/// Every shared-alarm/completion endpoint × every relation → the expected status (and error name).
/// The alarm is created by the owner, assigned to `member` only (`other` is a non-assignee member),
/// rule `all` so an answer leaves the occurrence open. Each row runs on a fresh `GroupFixture`.
@Suite("Authorization matrix — shared alarms × {owner, admin, member, non-assignee, removed, left, outsider, anonymous}")
struct SharedAlarmAuthorizationTests {
    /// Before each cell the owner creates the alarm (assigned to `member` only, rule `all`); its
    /// path is what the requests get as `prepared`. Statuses in `roles` order: owner, admin, member,
    /// nonAssignee, removed, left, outsider, anonymous. The owner and admin are not assignees, so
    /// they cannot answer (403) — answering is for the occurrence's required set only.
    static let matrix = AuthorizationMatrix<String>(
        roles: [.owner, .admin, .member, .nonAssignee, .removed, .left, .outsider, .anonymous],
        endpoints: [
            .init("POST /v1/groups/{id}/alarms", [201, 201, 403, 403, 404, 404, 404, 401]) {
                await $0.send(.post, "\($0.group)/alarms", json: #"{"title":"T",\#(SharedAlarmFixture.dailyTen)}"#)
            },
            .init("GET /v1/groups/{id}/alarms", [200, 200, 200, 200, 404, 404, 404, 401]) { await $0.send(.get, "\($0.group)/alarms") },
            .init("GET /v1/groups/{id}/alarms/{aid}", [200, 200, 200, 200, 404, 404, 404, 401]) { await $0.send(.get, $0.prepared) },
            .init("PATCH /v1/groups/{id}/alarms/{aid}", [200, 200, 403, 403, 404, 404, 404, 401]) {
                await $0.send(.patch, $0.prepared, json: #"{"title":"Renamed"}"#)
            },
            .init("DELETE /v1/groups/{id}/alarms/{aid}", [204, 403, 403, 403, 404, 404, 404, 401]) { await $0.send(.delete, $0.prepared) },
            .init("POST /v1/groups/{id}/alarms/{aid}/completions", [403, 403, 201, 403, 404, 404, 404, 401]) {
                await $0.send(.post, "\($0.prepared)/completions", json: #"{"status":"completed"}"#)
            },
            // Undo (docs/design.md#answers-retries-and-undo): only the answer's author (`member`).
            .init(
                "DELETE /v1/groups/{id}/alarms/{aid}/completions/{completion_id}", [403, 403, 200, 403, 404, 404, 404, 401],
                errors: [403: "PERMISSION_DENIED"]
            ) { c in
                let completion = try await c.membersCompletion()
                let id = completion.split(separator: "/").last.map(String.init) ?? ""
                return await c.send(.delete, "\(c.prepared)/completions/\(id)")
            },
            .init("GET /v1/groups/{id}/alarms/{aid}/completions", [200, 200, 200, 200, 404, 404, 404, 401]) {
                await $0.send(.get, "\($0.prepared)/completions")
            },
            .init("GET /v1/groups/{id}/completions", [200, 200, 200, 200, 404, 404, 404, 401]) {
                await $0.send(.get, "\($0.group)/completions")
            },
            // Attachments (docs/attachments.md): every active member uploads and reads; the uploader
            // (here the owner), the owner or an admin deletes.
            .init("POST /v1/groups/{id}/alarms/{aid}/attachments", [201, 201, 201, 201, 404, 404, 404, 401]) { c in
                await c.h.sendBytes(
                    .post, "\(c.prepared)/attachments", body: SampleMedia.png(width: 40, height: 30), contentType: "image/png",
                    token: c.actor?.token)
            },
            .init("GET /v1/groups/{id}/alarms/{aid}/attachments", [200, 200, 200, 200, 404, 404, 404, 401]) {
                await $0.send(.get, "\($0.prepared)/attachments")
            },
            .init("GET /v1/groups/{id}/alarms/{aid}/attachments/{attachment_id}", [200, 200, 200, 200, 404, 404, 404, 401]) { c in
                await c.send(.get, try await c.ownersAttachment())
            },
            .init(
                "GET /v1/groups/{id}/alarms/{aid}/attachments/{attachment_id}/thumbnail", [200, 200, 200, 200, 404, 404, 404, 401]
            ) { c in
                await c.send(.get, try await c.ownersAttachment() + "/thumbnail")
            },
            .init("DELETE /v1/groups/{id}/alarms/{aid}/attachments/{attachment_id}", [204, 204, 403, 403, 404, 404, 404, 401]) { c in
                await c.send(.delete, try await c.ownersAttachment())
            },
            // A completion's attachments (docs/attachments.md#who-may-do-what): only the member who answered
            // (`member`) uploads; every active member reads; the uploader, the owner or an admin deletes.
            .init(
                "POST /v1/groups/{id}/completions/{completion_id}/attachments", [403, 403, 201, 403, 404, 404, 404, 401],
                errors: [403: "PERMISSION_DENIED"]
            ) { c in
                await c.h.sendBytes(
                    .post, "\(try await c.membersCompletion())/attachments", body: SampleMedia.png(width: 40, height: 30),
                    contentType: "image/png", token: c.actor?.token)
            },
            .init("GET /v1/groups/{id}/completions/{completion_id}/attachments", [200, 200, 200, 200, 404, 404, 404, 401]) { c in
                await c.send(.get, "\(try await c.membersCompletion())/attachments")
            },
            .init(
                "GET /v1/groups/{id}/completions/{completion_id}/attachments/{attachment_id}",
                [200, 200, 200, 200, 404, 404, 404, 401]
            ) { c in
                await c.send(.get, try await c.membersCompletionAttachment())
            },
            .init(
                "GET /v1/groups/{id}/completions/{completion_id}/attachments/{attachment_id}/thumbnail",
                [200, 200, 200, 200, 404, 404, 404, 401]
            ) { c in
                await c.send(.get, try await c.membersCompletionAttachment() + "/thumbnail")
            },
            .init(
                "DELETE /v1/groups/{id}/completions/{completion_id}/attachments/{attachment_id}",
                [204, 204, 204, 403, 404, 404, 404, 401]
            ) { c in
                await c.send(.delete, try await c.membersCompletionAttachment())
            },
        ],
        prepare: { f in
            let created = try await f.h.expect(
                201, .post, "/v1/groups/\(f.groupID)/alarms",
                json: #"{"title":"Bins",\#(SharedAlarmFixture.dailyTen),"completion_rule":"all","assigned_to_uids":["\#(f.member.id)"]}"#,
                token: f.owner.token)
            return "/v1/groups/\(f.groupID)/alarms/\(try #require(created.json["id"] as? String))"
        })

    @Test("the matrix covers every endpoint and every role")
    func complete() {
        #expect(Self.matrix.isComplete)
    }

    @Test("every new route is in the matrix")
    func routesCovered() throws {
        let h = try AppHarness()
        let served = Set(
            h.app.routes.map { "\($0.method) \($0.template)" }.filter {
                ($0.contains("alarms") || $0.contains("completions")) && !$0.contains("/v1/me/")
            })
        let covered = Set(Self.matrix.endpoints.map(\.name))
        #expect(served == covered)
    }

    @Test("row", arguments: matrix.cells)
    func row(_ cell: MatrixCell<String>) async throws {
        try await Self.matrix.run(cell)
    }
}

extension MatrixCall<String> {
    /// The owner uploads a PNG to the prepared alarm; its path.
    func ownersAttachment() async throws -> String {
        let reply = await h.sendBytes(
            .post, "\(prepared)/attachments", body: SampleMedia.png(width: 40, height: 30), contentType: "image/png",
            token: fixture.owner.token)
        return "\(prepared)/attachments/\(try #require(reply.json["id"] as? String, "\(reply.text)"))"
    }

    /// `member` (the alarm's one assignee) answers the open occurrence; the completion's path.
    func membersCompletion() async throws -> String {
        let answered = try await h.expect(
            201, .post, "\(prepared)/completions", json: #"{"status":"completed"}"#, token: fixture.member.token)
        let id = try #require(answered.object("completion")?["id"] as? String, "\(answered.text)")
        return "\(group)/completions/\(id)"
    }

    /// `member` answers and attaches a PNG to the completion; the attachment's path.
    func membersCompletionAttachment() async throws -> String {
        let completion = try await membersCompletion()
        let reply = await h.sendBytes(
            .post, "\(completion)/attachments", body: SampleMedia.png(width: 40, height: 30), contentType: "image/png",
            token: fixture.member.token)
        return "\(completion)/attachments/\(try #require(reply.json["id"] as? String, "\(reply.text)"))"
    }
}
