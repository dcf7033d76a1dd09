import Domain
import Foundation
import SQLite
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

@Suite("DELETE /v1/me — account deletion in one transaction", .serialized)
struct AccountDeletionTests {
    func owner(_ f: GroupFixture) async throws -> [String: Any] {
        let reply = try await f.h.expect(200, .get, "/v1/groups/\(f.groupID)", token: f.member.token)
        return try #require(reply.object("group"))
    }

    @Test("an owned group passes to the longest-standing admin, even over earlier plain members")
    func toAdmin() async throws {
        let f = try await GroupFixture.make()
        let m = "/v1/groups/\(f.groupID)/members"
        try await f.h.expect(200, .patch, "\(m)/\(f.admin.id)", json: #"{"role":"member"}"#, token: f.owner.token)
        try await f.h.expect(200, .patch, "\(m)/\(f.other.id)", json: #"{"role":"admin"}"#, token: f.owner.token)
        try await f.h.expect(204, .delete, "/v1/me", token: f.owner.token)
        let group = try await owner(f)
        #expect(group["owner_id"] as? String == f.other.id)
        #expect(group["member_count"] as? Int == 3)
        let batch = try f.h.lastBatch()
        #expect(Set(batch.map { $0.string("event") }) == ["account_deleted"])
        #expect(batch.last?.string("topic") == "user:\(f.owner.id)")
        #expect(batch.last?.string("op") == "removed")
        #expect(
            batch.contains { $0.string("topic") == "user:\(f.owner.id)" && $0.string("kind") == "group" && $0.string("reason") == "left" })
    }

    @Test("without admins the longest-standing member takes over")
    func toMember() async throws {
        let f = try await GroupFixture.make()
        try await f.h.expect(
            200, .patch, "/v1/groups/\(f.groupID)/members/\(f.admin.id)", json: #"{"role":"member"}"#, token: f.owner.token)
        try await f.h.expect(204, .delete, "/v1/me", token: f.owner.token)
        #expect(try await owner(f)["owner_id"] as? String == f.admin.id)  // joined first
    }

    @Test("a group with nobody else is deleted")
    func aloneDeletesGroup() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let ana = try await h.register("ana@example.com")
        let groupID = try await h.createGroup(token: ana.token)
        try await h.expect(204, .delete, "/v1/me", token: ana.token)
        let deleted = try h.database.readSync { db in
            try db.scalar("SELECT deleted_ms IS NOT NULL FROM groups WHERE id = ?1", [.text(groupID)])
        }
        #expect(deleted == .integer(1))
        #expect(try h.lastBatch().contains { $0.string("topic") == "group:\(groupID)" && $0.string("op") == "removed" })
    }

    @Test("the change log keeps no personal data of a deleted account, and its chain still verifies")
    func changeLogRedacted() async throws {
        let f = try await GroupFixture.make()
        try await f.h.expect(
            200, .patch, "/v1/me", json: #"{"display_name":"Mina Quill","timezone":"Pacific/Chatham"}"#, token: f.member.token)
        try await f.h.expect(
            201, .post, "/v1/groups/\(f.groupID)/invitations", json: #"{"invitee_email":"member@example.com"}"#,
            token: f.owner.token)
        func mentions(_ text: String) throws -> Int64 {
            let count = try f.h.database.readSync { db in
                try db.scalar(
                    "SELECT count(*) FROM change_log WHERE \(db.dialect.position(of: "?1", in: "document")) > 0", [.text(text)])
            }
            guard case .integer(let n) = count else { return -1 }
            return n
        }
        #expect(try mentions("member@example.com") > 0)
        #expect(try mentions("Mina Quill") > 0)
        #expect(try mentions("Pacific/Chatham") > 0)
        try await f.h.expect(204, .delete, "/v1/me", token: f.member.token)
        #expect(try mentions("member@example.com") == 0)
        #expect(try mentions("Mina Quill") == 0)
        #expect(try mentions("Pacific/Chatham") == 0)
        let report = try f.h.database.readSync { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == nil, "\(report)")
        #expect(report.redacted > 0)
        // Other people's data is untouched.
        #expect(try mentions("owner@example.com") > 0)
    }

    @Test("tokens, personal fields and the email go; the email can register again; memberships end")
    func personalData() async throws {
        let f = try await GroupFixture.make()
        let pending = try await f.h.expect(
            201, .post, "/v1/groups/\(f.groupID)/invitations", json: #"{"invitee_email":"member@example.com"}"#,
            token: f.owner.token)
        let invitationID = try #require(pending.object("invitation")?["id"] as? String)
        try await f.h.expect(204, .delete, "/v1/me", token: f.member.token)
        #expect(await f.h.send(.get, "/v1/me", token: f.member.token).status == 401)
        let login = await f.h.send(.post, "/v1/auth/login", json: #"{"email":"member@example.com","password":"correct horse"}"#)
        #expect(login.status == 401)

        let row = try #require(
            try f.h.database.readSync { db in
                try db.queryOne(
                    "SELECT email, display_name, password_hash, deleted_ms FROM users WHERE id = ?1", [.text(f.member.id)])
            })
        #expect(row.string("email") == "deleted+\(f.member.id)@invalid")
        #expect(row.string("display_name") == "Deleted User")
        #expect(row.string("password_hash") == "")
        #expect(row.int("deleted_ms") == f.h.clock.nowMilliseconds())
        let (sessions, memberRow, invitation) = try f.h.database.readSync { db in
            (
                try db.scalar("SELECT count(*) FROM sessions WHERE user_id = ?1", [.text(f.member.id)]),
                try db.queryOne(
                    "SELECT status, display_name FROM group_members WHERE user_id = ?1", [.text(f.member.id)]),
                try db.queryOne("SELECT status, invitee_email FROM invitations WHERE id = ?1", [.text(invitationID)])
            )
        }
        #expect(sessions == .integer(0))
        #expect(memberRow?.string("status") == "left")
        #expect(memberRow?.string("display_name") == "Deleted User")
        #expect(invitation?.string("status") == "revoked")
        #expect(invitation?.string("invitee_email") == "deleted+\(f.member.id)@invalid")
        let everything = try f.h.database.readSync { db in
            try db.query("SELECT document FROM change_log WHERE seq >= (SELECT MAX(batch) FROM change_log)")
                .compactMap { $0.string("document") }.joined()
        }
        #expect(!everything.contains("member@example.com"))
        #expect(!everything.contains("\"Member\""))

        let again = await f.h.send(
            .post, "/v1/auth/register", json: #"{"email":"member@example.com","password":"correct horse","display_name":"New"}"#)
        #expect(again.status == 201)
        #expect(await f.h.send(.get, "/v1/groups/\(f.groupID)", token: again.json["token"] as? String).status == 404)
    }

    @Test("links the deleted account sent stop working; their documents name \"Deleted User\"")
    func sentInvitations() async throws {
        let f = try await GroupFixture.make()
        let created = try await f.h.expect(
            201, .post, "/v1/groups/\(f.groupID)/invitations", json: #"{"role":"member"}"#, token: f.admin.token)
        let token = try #require(created.json["token"] as? String)
        try await f.h.expect(204, .delete, "/v1/me", token: f.admin.token)
        #expect(await f.h.send(.post, "/v1/invitations/\(token)/accept", token: f.outsider.token).status == 404)
        let list = try await f.h.expect(200, .get, "/v1/groups/\(f.groupID)/invitations", token: f.owner.token)
        let invitation = (list.json["invitations"] as? [[String: Any]])?.first
        #expect(invitation?["status"] as? String == "revoked")
        #expect(invitation?["invited_by_name"] as? String == "Deleted User")
        let revoked = try f.h.lastBatch().filter { $0.string("kind") == "invitation" }
        #expect(revoked.count == 1)
        #expect(revoked.first?.string("document")?.contains("Deleted User") == true)
    }
}
