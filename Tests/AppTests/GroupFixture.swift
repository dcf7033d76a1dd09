import Domain
import Foundation
import SQLite
import Storage
import TestSupport
import Testing
import Wire

@testable import App

/// A premium harness with one group and a user in every relation to it: owner, admin, member,
/// removed (by the owner), left (on their own), outsider (never joined).
@dynamicMemberLookup
struct GroupFixture {
    struct Account {
        var token: String
        var id: String
        var email: String
    }

    /// Who is who, and the group: the same in every copy of the prototype (`fixture.owner` reads
    /// `cast.owner`).
    struct Cast: Sendable {
        let owner: Account
        let admin: Account
        let member: Account
        /// A second plain member: the target of removals.
        let other: Account
        let removed: Account
        let left: Account
        let outsider: Account
        let groupID: String
        /// The code every member joined with (created before the removal and the leave).
        let code: String
    }

    let h: AppHarness
    let cast: Cast

    subscript<T>(dynamicMember keyPath: KeyPath<Cast, T>) -> T { cast[keyPath: keyPath] }

    /// A fixture of its own: a copy of the process's prototype (built once, `build()`) in a fresh
    /// harness — its database and clock as the prototype left them, nothing held in memory.
    static func make() async throws -> GroupFixture {
        let (snapshot, cast) = try await Self.prototype.value
        return GroupFixture(h: try AppHarness(defaultTier: .premium, restoring: snapshot), cast: cast)
    }

    /// Built once per process on first use. Only the snapshot and the cast are kept, not the
    /// builder's harness (on PostgreSQL its database became the snapshot's template).
    private static let prototype = Task { () throws -> (HarnessSnapshot, Cast) in
        let fixture = try await build()
        return (try fixture.h.snapshot(), fixture.cast)
    }

    /// Builds the fixture through the API on a new harness: registrations, the group, its code,
    /// the joins, a promotion, a removal and a leave.
    private static func build() async throws -> GroupFixture {
        let h = try AppHarness(defaultTier: .premium)
        func account(_ name: String) async throws -> Account {
            let email = "\(name)@example.com"
            let (token, id) = try await h.register(email, name: name.capitalized)
            return Account(token: token, id: id, email: email)
        }
        let owner = try await account("owner")
        let admin = try await account("admin")
        let member = try await account("member")
        let other = try await account("other")
        let removed = try await account("removed")
        let left = try await account("left")
        let outsider = try await account("outsider")
        let groupID = try await h.createGroup(token: owner.token)
        let code = try await h.inviteCode(groupID, token: owner.token)
        for account in [admin, member, other, removed, left] {
            h.clock.advance(by: 1)
            let reply = await h.join(code, token: account.token)
            guard reply.status == 200 else { throw AppHarness.HarnessError.unexpected(reply.text) }
        }
        h.clock.advance(by: 1)
        try await h.expect(
            200, .patch, "/v1/groups/\(groupID)/members/\(admin.id)", json: #"{"role":"admin"}"#, token: owner.token)
        h.clock.advance(by: 1)
        try await h.expect(204, .delete, "/v1/groups/\(groupID)/members/\(removed.id)", token: owner.token)
        h.clock.advance(by: 1)
        try await h.expect(204, .delete, "/v1/groups/\(groupID)/members/\(left.id)", token: left.token)
        h.clock.advance(by: 1)
        return GroupFixture(
            h: h,
            cast: Cast(
                owner: owner, admin: admin, member: member, other: other, removed: removed, left: left, outsider: outsider,
                groupID: groupID, code: code))
    }
}

extension AppHarness {
    /// Creates a group and returns its id.
    func createGroup(token: String, name: String = "Household") async throws -> String {
        let reply = await send(.post, "/v1/groups", json: #"{"name":"\#(name)"}"#, token: token)
        guard reply.status == 201, let group = reply.json["group"] as? [String: Any], let id = group["id"] as? String
        else { throw HarnessError.unexpected(reply.text) }
        return id
    }

    /// Creates or rotates the group's invite code and returns it.
    func inviteCode(_ groupID: String, token: String) async throws -> String {
        let reply = await send(.post, "/v1/groups/\(groupID)/invite-code", token: token)
        guard reply.status == 201, let code = reply.json["code"] as? String else { throw HarnessError.unexpected(reply.text) }
        return code
    }

    /// `POST /v1/join`.
    func join(_ code: String, token: String, ip: String = "127.0.0.1") async -> Reply {
        await send(.post, "/v1/join", json: #"{"code":"\#(code)"}"#, token: token, remoteAddress: ip)
    }

    /// Sends and throws unless the status is `status`.
    @discardableResult
    func expect(
        _ status: Int, _ method: HTTPMethod, _ target: String, json: String? = nil, token: String? = nil
    ) async throws -> Reply {
        let reply = await send(method, target, json: json, token: token)
        guard reply.status == status else {
            throw HarnessError.unexpected("\(method) \(target): expected \(status), got \(reply.status) \(reply.text)")
        }
        return reply
    }

    /// The change-log rows of the latest batch.
    func lastBatch() throws -> [Row] {
        try database.readSync { db in
            try db.query(
                """
                SELECT seq, batch, event, actor, topic, kind, op, entity_id, document, reason FROM change_log
                WHERE batch = (SELECT MAX(batch) FROM change_log) ORDER BY seq
                """)
        }
    }
}

extension Reply {
    /// `json[key]` as an object.
    func object(_ key: String) -> [String: Any]? { json[key] as? [String: Any] }
    /// The one answer every unusable invite code gets, from a join or a preview alike: 404 CA031 and
    /// nothing that tells why (docs/security.md#limits-and-what-they-bound).
    func expectInvalidInviteCode(sourceLocation: SourceLocation = #_sourceLocation) throws {
        let error = try #require(object("error"), sourceLocation: sourceLocation)
        #expect(status == 404, sourceLocation: sourceLocation)
        #expect(error["code"] as? String == "CA031", sourceLocation: sourceLocation)
        #expect(error["name"] as? String == "INVITE_CODE_INVALID", sourceLocation: sourceLocation)
        #expect(error["message"] as? String == "this invite code is not valid", sourceLocation: sourceLocation)
        #expect(Set(error.keys) == ["code", "name", "message", "request_id"], sourceLocation: sourceLocation)
    }
}
