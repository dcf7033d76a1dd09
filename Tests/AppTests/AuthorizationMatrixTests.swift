@testable import App
import Domain
import Foundation
import Testing
import Wire

/// Every group/invitation endpoint × every relation to the group → the expected status (and error
/// name). Each row runs on a fresh `GroupFixture`, so mutations of one row cannot leak into another.
@Suite("Authorization matrix — endpoints × {owner, admin, member, removed, left, outsider, anonymous}")
struct AuthorizationMatrixTests {
    enum Role: String, CaseIterable, Sendable {
        case owner, admin, member, removed, left, outsider, anonymous
    }

    enum Endpoint: String, CaseIterable, Sendable {
        case createGroup = "POST /v1/groups"
        case listGroups = "GET /v1/groups"
        case getGroup = "GET /v1/groups/{id}"
        case patchGroup = "PATCH /v1/groups/{id}"
        case deleteGroup = "DELETE /v1/groups/{id}"
        case changeRole = "PATCH /v1/groups/{id}/members/{user_id}"
        case transfer = "POST /v1/groups/{id}/transfer"
        case removeMember = "DELETE /v1/groups/{id}/members/{other}"
        case leave = "DELETE /v1/groups/{id}/members/{self}"
        case rotateCode = "POST /v1/groups/{id}/invite-code"
        case disableCode = "DELETE /v1/groups/{id}/invite-code"
        case join = "POST /v1/join"
        case createInvitation = "POST /v1/groups/{id}/invitations"
        case listGroupInvitations = "GET /v1/groups/{id}/invitations"
        case listMyInvitations = "GET /v1/invitations"
        case acceptInvitation = "POST /v1/invitations/{token}/accept"
        case declineInvitation = "POST /v1/invitations/{id}/decline"
        case revokeInvitation = "DELETE /v1/invitations/{id}"
        case deleteMe = "DELETE /v1/me"
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var endpoint: Endpoint
        var role: Role
        var status: Int
        var errorName: String?
        var testDescription: String { "\(endpoint.rawValue) as \(role.rawValue) → \(status)" }
    }

    /// Expected statuses in `Role.allCases` order.
    static let table: [(Endpoint, [Int])] = [
        (.createGroup, [201, 201, 201, 201, 201, 201, 401]),
        (.listGroups, [200, 200, 200, 200, 200, 200, 401]),
        (.getGroup, [200, 200, 200, 404, 404, 404, 401]),
        (.patchGroup, [200, 200, 403, 404, 404, 404, 401]),
        (.deleteGroup, [204, 403, 403, 404, 404, 404, 401]),
        (.changeRole, [200, 403, 403, 404, 404, 404, 401]),
        (.transfer, [200, 403, 403, 404, 404, 404, 401]),
        (.removeMember, [204, 204, 403, 404, 404, 404, 401]),
        (.leave, [409, 204, 204, 404, 404, 404, 401]),
        (.rotateCode, [201, 201, 403, 404, 404, 404, 401]),
        (.disableCode, [204, 204, 403, 404, 404, 404, 401]),
        (.join, [200, 200, 200, 404, 404, 200, 401]),
        (.createInvitation, [201, 201, 403, 404, 404, 404, 401]),
        (.listGroupInvitations, [200, 200, 403, 404, 404, 404, 401]),
        (.listMyInvitations, [200, 200, 200, 200, 200, 200, 401]),
        (.acceptInvitation, [200, 200, 200, 200, 200, 200, 401]),
        (.declineInvitation, [404, 404, 404, 404, 404, 200, 401]),
        (.revokeInvitation, [204, 204, 403, 404, 404, 404, 401]),
        (.deleteMe, [204, 204, 204, 204, 204, 204, 401]),
    ]

    static let rows: [Row] = table.flatMap { endpoint, statuses in
        zip(Role.allCases, statuses).map { role, status in
            let name: String? =
                switch status {
                case 401: "AUTH_REQUIRED"
                case 403: "PERMISSION_DENIED"
                case 404: endpoint == .join ? "INVITE_CODE_INVALID" : "NOT_FOUND"
                case 409: "OWNER_MUST_TRANSFER"
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

    // Serialized: 133 fixtures at once would starve the shared Dispatch pool that timing-sensitive
    // suites elsewhere rely on.
    @Test("row", .serialized, arguments: rows)
    func row(_ row: Row) async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        let actor: GroupFixture.Account? =
            switch row.role {
            case .owner: f.owner
            case .admin: f.admin
            case .member: f.member
            case .removed: f.removed
            case .left: f.left
            case .outsider: f.outsider
            case .anonymous: nil
            }
        let token = actor?.token
        let g = "/v1/groups/\(f.groupID)"
        let reply: Reply
        switch row.endpoint {
        case .createGroup:
            reply = await h.send(.post, "/v1/groups", json: #"{"name":"Team"}"#, token: token)
        case .listGroups:
            reply = await h.send(.get, "/v1/groups", token: token)
        case .getGroup:
            reply = await h.send(.get, g, token: token)
        case .patchGroup:
            reply = await h.send(.patch, g, json: #"{"name":"Renamed"}"#, token: token)
        case .deleteGroup:
            reply = await h.send(.delete, g, token: token)
        case .changeRole:
            reply = await h.send(.patch, "\(g)/members/\(f.member.id)", json: #"{"role":"admin"}"#, token: token)
        case .transfer:
            reply = await h.send(.post, "\(g)/transfer", json: #"{"user_id":"\#(f.member.id)"}"#, token: token)
        case .removeMember:
            reply = await h.send(.delete, "\(g)/members/\(f.other.id)", token: token)
        case .leave:
            reply = await h.send(.delete, "\(g)/members/\(actor?.id ?? f.member.id)", token: token)
        case .rotateCode:
            reply = await h.send(.post, "\(g)/invite-code", token: token)
        case .disableCode:
            reply = await h.send(.delete, "\(g)/invite-code", token: token)
        case .join:
            reply = await h.send(.post, "/v1/join", json: #"{"code":"\#(f.code)"}"#, token: token)
        case .createInvitation:
            reply = await h.send(.post, "\(g)/invitations", json: #"{"role":"member"}"#, token: token)
        case .listGroupInvitations:
            reply = await h.send(.get, "\(g)/invitations", token: token)
        case .listMyInvitations:
            reply = await h.send(.get, "/v1/invitations", token: token)
        case .acceptInvitation:
            let created = try await h.expect(201, .post, "\(g)/invitations", json: #"{"role":"member"}"#, token: f.owner.token)
            let link = try #require(created.json["token"] as? String)
            reply = await h.send(.post, "/v1/invitations/\(link)/accept", token: token)
        case .declineInvitation:
            let created = try await h.expect(
                201, .post, "\(g)/invitations", json: #"{"invitee_email":"\#(f.outsider.email)"}"#, token: f.owner.token)
            let id = try #require(created.object("invitation")?["id"] as? String)
            reply = await h.send(.post, "/v1/invitations/\(id)/decline", token: token)
        case .revokeInvitation:
            let created = try await h.expect(201, .post, "\(g)/invitations", json: #"{"role":"member"}"#, token: f.admin.token)
            let id = try #require(created.object("invitation")?["id"] as? String)
            reply = await h.send(.delete, "/v1/invitations/\(id)", token: token)
        case .deleteMe:
            reply = await h.send(.delete, "/v1/me", token: token)
        }
        #expect(reply.status == row.status, "\(reply.text)")
        if let name = row.errorName { #expect(reply.errorName == name, "\(reply.text)") }
    }
}
