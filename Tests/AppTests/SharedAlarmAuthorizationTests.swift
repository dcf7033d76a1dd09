@testable import App
import Domain
import Foundation
import Testing
import Wire

/// Every shared-alarm/completion endpoint × every relation → the expected status (and error name).
/// The alarm is created by the owner, assigned to `member` only (`other` is a non-assignee member),
/// rule `all` so an answer leaves the occurrence open. Each row runs on a fresh `GroupFixture`.
@Suite("Authorization matrix — shared alarms × {owner, admin, member, non-assignee, removed, left, outsider, anonymous}")
struct SharedAlarmAuthorizationTests {
    enum Role: String, CaseIterable, Sendable {
        case owner, admin, member, nonAssignee, removed, left, outsider, anonymous
    }

    enum Endpoint: String, CaseIterable, Sendable {
        case create = "POST /v1/groups/{id}/alarms"
        case list = "GET /v1/groups/{id}/alarms"
        case show = "GET /v1/groups/{id}/alarms/{aid}"
        case patch = "PATCH /v1/groups/{id}/alarms/{aid}"
        case delete = "DELETE /v1/groups/{id}/alarms/{aid}"
        case complete = "POST /v1/groups/{id}/alarms/{aid}/completions"
        case listAlarmCompletions = "GET /v1/groups/{id}/alarms/{aid}/completions"
        case listGroupCompletions = "GET /v1/groups/{id}/completions"
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var endpoint: Endpoint
        var role: Role
        var status: Int
        var errorName: String?
        var testDescription: String { "\(endpoint.rawValue) as \(role.rawValue) → \(status)" }
    }

    /// Expected statuses in `Role.allCases` order. The owner and admin are not assignees, so they
    /// cannot answer (403) — answering is for the occurrence's required set only.
    static let table: [(Endpoint, [Int])] = [
        (.create, [201, 201, 403, 403, 404, 404, 404, 401]),
        (.list, [200, 200, 200, 200, 404, 404, 404, 401]),
        (.show, [200, 200, 200, 200, 404, 404, 404, 401]),
        (.patch, [200, 200, 403, 403, 404, 404, 404, 401]),
        (.delete, [204, 403, 403, 403, 404, 404, 404, 401]),
        (.complete, [403, 403, 201, 403, 404, 404, 404, 401]),
        (.listAlarmCompletions, [200, 200, 200, 200, 404, 404, 404, 401]),
        (.listGroupCompletions, [200, 200, 200, 200, 404, 404, 404, 401]),
    ]

    static let rows: [Row] = table.flatMap { endpoint, statuses in
        zip(Role.allCases, statuses).map { role, status in
            let name: String? =
                switch status {
                case 401: "AUTH_REQUIRED"
                case 403: "PERMISSION_DENIED"
                case 404: "NOT_FOUND"
                default: nil
                }
            return Row(endpoint: endpoint, role: role, status: status, errorName: name)
        }
    }

    @Test("the matrix covers every endpoint and every role")
    func complete() {
        #expect(Self.rows.count == Endpoint.allCases.count * Role.allCases.count)
        #expect(Set(Self.table.map(\.0.rawValue)).count == Endpoint.allCases.count)
    }

    @Test("every new route is in the matrix")
    func routesCovered() throws {
        let h = try AppHarness()
        let served = Set(h.app.routes.map { "\($0.method) \($0.template)" }.filter { $0.contains("alarms") || $0.contains("completions") })
        let covered = Set(Endpoint.allCases.map(\.rawValue))
        #expect(served == covered)
    }

    // Serialized like the group matrix: keeps the shared Dispatch pool responsive.
    @Test("row", .serialized, arguments: rows)
    func row(_ row: Row) async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        let actor: GroupFixture.Account? =
            switch row.role {
            case .owner: f.owner
            case .admin: f.admin
            case .member: f.member
            case .nonAssignee: f.other
            case .removed: f.removed
            case .left: f.left
            case .outsider: f.outsider
            case .anonymous: nil
            }
        let token = actor?.token
        let g = "/v1/groups/\(f.groupID)"
        let created = try await h.expect(
            201, .post, "\(g)/alarms",
            json: #"{"title":"Bins",\#(SharedAlarmFixture.dailyTen),"completion_rule":"all","assigned_to_uids":["\#(f.member.id)"]}"#,
            token: f.owner.token)
        let a = "\(g)/alarms/\(try #require(created.json["id"] as? String))"
        let reply: Reply
        switch row.endpoint {
        case .create:
            reply = await h.send(.post, "\(g)/alarms", json: #"{"title":"T",\#(SharedAlarmFixture.dailyTen)}"#, token: token)
        case .list:
            reply = await h.send(.get, "\(g)/alarms", token: token)
        case .show:
            reply = await h.send(.get, a, token: token)
        case .patch:
            reply = await h.send(.patch, a, json: #"{"title":"Renamed"}"#, token: token)
        case .delete:
            reply = await h.send(.delete, a, token: token)
        case .complete:
            reply = await h.send(.post, "\(a)/completions", json: #"{"status":"completed"}"#, token: token)
        case .listAlarmCompletions:
            reply = await h.send(.get, "\(a)/completions", token: token)
        case .listGroupCompletions:
            reply = await h.send(.get, "\(g)/completions", token: token)
        }
        #expect(reply.status == row.status, "\(reply.text)")
        if let name = row.errorName { #expect(reply.errorName == name, "\(reply.text)") }
    }
}
