import Domain
import Foundation
import Hashing
import SQLite
import Storage
import TestSupport
import Testing
import Wire

@testable import App

@Suite("Invitations — email and link, accept/decline/revoke, expiry, limits, change log", .serialized)
struct InvitationTests {
    static let day: Int64 = 24 * 3600 * 1000

    func link(_ f: GroupFixture, by token: String, role: String = "member") async throws -> (id: String, token: String) {
        let reply = try await f.h.expect(
            201, .post, "/v1/groups/\(f.groupID)/invitations", json: #"{"role":"\#(role)"}"#, token: token)
        return (try #require(reply.object("invitation")?["id"] as? String), try #require(reply.json["token"] as? String))
    }

    func email(_ f: GroupFixture, to address: String, by token: String) async throws -> String {
        let reply = try await f.h.expect(
            201, .post, "/v1/groups/\(f.groupID)/invitations", json: #"{"invitee_email":"\#(address)"}"#, token: token)
        return try #require(reply.object("invitation")?["id"] as? String)
    }

    @Test("a link invitation returns its token once; only SHA-256 of it is stored")
    func linkCreation() async throws {
        let f = try await GroupFixture.make()
        let reply = await f.h.send(.post, "/v1/groups/\(f.groupID)/invitations", json: #"{"role":"member"}"#, token: f.admin.token)
        #expect(reply.status == 201)
        let token = try #require(reply.json["token"] as? String)
        #expect(token.utf8.count == 43)
        #expect(reply.json["invite_url"] as? String == "http://127.0.0.1:8080/invite/\(token)")
        let invitation = try #require(reply.object("invitation"))
        #expect(invitation["method"] as? String == "link")
        #expect(invitation["status"] as? String == "pending")
        #expect(invitation["group_name"] as? String == "Household")
        #expect(invitation["invited_by_name"] as? String == "Admin")
        #expect(invitation["invitee_email"] is NSNull)
        let created = try #require(Timestamp.parse(invitation["created_at"] as? String ?? ""))
        #expect(Timestamp.parse(invitation["expires_at"] as? String ?? "") == created + 7 * Self.day)
        let stored = try f.h.database.readSync { db in
            try db.queryOne("SELECT token_hash FROM invitations")?.blob("token_hash")
        }
        #expect(stored == SHA256.hash(Base64URL.decode(token) ?? []))
        #expect(
            try f.h.database.readSync { try $0.scalar("SELECT count(*) FROM change_log WHERE document LIKE ?1", [.text("%\(token)%")]) }
                == .integer(0))
        let batch = try f.h.lastBatch()
        #expect(
            batch.map { "\($0.string("event")!) \($0.string("topic")!) \($0.string("kind")!)" } == [
                "invitation_created user:\(f.admin.id) invitation"
            ])
    }

    @Test("accepting a link: joins with the invitation's role; the same user again is idempotent; anyone else 409 CA005")
    func acceptLink() async throws {
        let f = try await GroupFixture.make()
        let (id, token) = try await link(f, by: f.owner.token, role: "admin")
        // By id, a link invitation is not found: the token is the capability.
        #expect(await f.h.send(.post, "/v1/invitations/\(id)/accept", token: f.outsider.token).status == 404)
        let reply = await f.h.send(.post, "/v1/invitations/\(token)/accept", token: f.outsider.token)
        #expect(reply.status == 200)
        let me = (reply.json["members"] as? [[String: Any]])?.first { $0["user_id"] as? String == f.outsider.id }
        #expect(me?["role"] as? String == "admin")
        let batch = try f.h.lastBatch()
        #expect(Set(batch.map { $0.string("event") }) == ["invitation_accepted"])
        #expect(
            batch.map { "\($0.string("topic")!) \($0.string("kind")!) \($0.string("op")!)" } == [
                "group:\(f.groupID) member added", "group:\(f.groupID) group modified", "user:\(f.outsider.id) group added",
                "user:\(f.owner.id) invitation modified", "user:\(f.outsider.id) invitation modified",
            ])
        #expect(batch[3].string("document")?.contains(#""status":"accepted""#) == true)

        let seq = try f.h.database.readSync { try $0.scalar("SELECT MAX(seq) FROM change_log") }
        let again = await f.h.send(.post, "/v1/invitations/\(token)/accept", token: f.outsider.token)
        #expect(again.status == 200)
        #expect(again.object("group")?["member_count"] as? Int == 5)
        #expect(try f.h.database.readSync { try $0.scalar("SELECT MAX(seq) FROM change_log") } == seq)

        let late = try await f.h.register("late@example.com")
        let taken = await f.h.send(.post, "/v1/invitations/\(token)/accept", token: late.token)
        #expect(taken.status == 409)
        #expect(taken.errorName == "INVITATION_ALREADY_ACCEPTED")
    }

    @Test("email invitations: listed for the addressee, usable only by that account, declinable")
    func emailInvitations() async throws {
        let f = try await GroupFixture.make()
        let id = try await email(f, to: "  Outsider@Example.com ", by: f.owner.token)
        let batch = try f.h.lastBatch()
        #expect(batch.map { $0.string("topic") } == ["user:\(f.owner.id)", "user:\(f.outsider.id)"])
        let mine = await f.h.send(.get, "/v1/invitations", token: f.outsider.token)
        let listed = mine.json["invitations"] as? [[String: Any]] ?? []
        #expect(listed.map { $0["id"] as? String } == [id])
        #expect(listed.first?["invitee_email"] as? String == "outsider@example.com")
        #expect((await f.h.send(.get, "/v1/invitations", token: f.member.token).json["invitations"] as? [Any])?.count == 0)
        // Someone else cannot see, accept or decline it.
        #expect(await f.h.send(.post, "/v1/invitations/\(id)/accept", token: f.member.token).status == 404)
        #expect(await f.h.send(.post, "/v1/invitations/\(id)/decline", token: f.removed.token).status == 404)

        let declined = await f.h.send(.post, "/v1/invitations/\(id)/decline", token: f.outsider.token)
        #expect(declined.status == 200)
        #expect(declined.json["status"] as? String == "declined")
        #expect(try f.h.lastBatch().first?.string("event") == "invitation_declined")
        #expect(await f.h.send(.post, "/v1/invitations/\(id)/decline", token: f.outsider.token).status == 200)
        #expect(await f.h.send(.post, "/v1/invitations/\(id)/accept", token: f.outsider.token).errorName == "INVITATION_ALREADY_ACCEPTED")
        #expect((await f.h.send(.get, "/v1/invitations", token: f.outsider.token).json["invitations"] as? [Any])?.count == 0)

        let second = try await email(f, to: "outsider@example.com", by: f.admin.token)
        #expect(await f.h.send(.post, "/v1/invitations/\(second)/accept", token: f.outsider.token).status == 200)
        #expect(await f.h.send(.post, "/v1/invitations/\(second)/accept", token: f.outsider.token).status == 200)
    }

    @Test("expired after 7 days: 409 INVITATION_EXPIRED; listed as expired for admins")
    func expiry() async throws {
        let f = try await GroupFixture.make()
        let (_, token) = try await link(f, by: f.owner.token)
        let id = try await email(f, to: "outsider@example.com", by: f.owner.token)
        f.h.clock.advance(by: 7 * Self.day)
        let reply = await f.h.send(.post, "/v1/invitations/\(token)/accept", token: f.outsider.token)
        #expect(reply.status == 409)
        #expect(reply.errorName == "INVITATION_EXPIRED")
        #expect(await f.h.send(.post, "/v1/invitations/\(id)/accept", token: f.outsider.token).errorName == "INVITATION_EXPIRED")
        let list = await f.h.send(.get, "/v1/groups/\(f.groupID)/invitations", token: f.admin.token)
        #expect((list.json["invitations"] as? [[String: Any]])?.map { $0["status"] as? String } == ["expired", "expired"])
        #expect((await f.h.send(.get, "/v1/invitations", token: f.outsider.token).json["invitations"] as? [Any])?.count == 0)
    }

    @Test("only the owner invites admins; free accounts cannot invite; bad bodies are 422")
    func creationRules() async throws {
        let f = try await GroupFixture.make()
        let path = "/v1/groups/\(f.groupID)/invitations"
        #expect(await f.h.send(.post, path, json: #"{"role":"admin"}"#, token: f.admin.token).status == 403)
        #expect(await f.h.send(.post, path, json: #"{"role":"admin"}"#, token: f.owner.token).status == 201)
        #expect(await f.h.send(.post, path, json: #"{"role":"owner"}"#, token: f.owner.token).errorField == "role")
        #expect(await f.h.send(.post, path, json: #"{"invitee_email":"nope"}"#, token: f.owner.token).errorField == "invitee_email")
        #expect(await f.h.send(.post, path, json: #"{"email":"a@b.co"}"#, token: f.owner.token).errorField == "email")
        try f.h.database.writeSync { try $0.run("UPDATE users SET tier = 'plus' WHERE id = ?1", [.text(f.admin.id)]) }
        #expect(await f.h.send(.post, path, json: "{}", token: f.admin.token).errorName == "TIER_REQUIRED")
    }

    @Test("at most 10 invitations per user per hour: the 11th is 429 with Retry-After")
    func rateLimit() async throws {
        let f = try await GroupFixture.make()
        for _ in 0..<10 {
            _ = try await link(f, by: f.admin.token)
            f.h.clock.advance(by: 1000)
        }
        let refused = await f.h.send(.post, "/v1/groups/\(f.groupID)/invitations", json: "{}", token: f.admin.token)
        #expect(refused.status == 429)
        #expect(refused.header("retry-after") == "3590")
        #expect(await f.h.send(.post, "/v1/groups/\(f.groupID)/invitations", json: "{}", token: f.owner.token).status == 201)
        f.h.clock.advance(by: 3590 * 1000)
        #expect(await f.h.send(.post, "/v1/groups/\(f.groupID)/invitations", json: "{}", token: f.admin.token).status == 201)
    }

    @Test("revoke: by the inviter or the owner; a revoked invitation is gone for the invitee")
    func revoke() async throws {
        let f = try await GroupFixture.make()
        let (id, token) = try await link(f, by: f.admin.token)
        #expect(await f.h.send(.delete, "/v1/invitations/\(id)", token: f.member.token).status == 403)
        #expect(await f.h.send(.delete, "/v1/invitations/\(id)", token: f.owner.token).status == 204)
        #expect(try f.h.lastBatch().first?.string("event") == "invitation_revoked")
        #expect(await f.h.send(.delete, "/v1/invitations/\(id)", token: f.admin.token).status == 204)
        #expect(await f.h.send(.post, "/v1/invitations/\(token)/accept", token: f.outsider.token).status == 404)
        let (ownersID, _) = try await link(f, by: f.owner.token)
        #expect(await f.h.send(.delete, "/v1/invitations/\(ownersID)", token: f.admin.token).status == 403)
    }

    @Test("removed members rejoin only with an invitation newer than their removal; the member limit holds")
    func rejoinAndLimit() async throws {
        let f = try await GroupFixture.make()
        let id = try await email(f, to: "removed@example.com", by: f.owner.token)
        #expect(await f.h.send(.post, "/v1/invitations/\(id)/accept", token: f.removed.token).status == 200)
        // Invited, then removed again: that invitation cannot bring them back.
        let (_, token) = try await link(f, by: f.owner.token)
        f.h.clock.advance(by: 1)
        try await f.h.expect(204, .delete, "/v1/groups/\(f.groupID)/members/\(f.removed.id)", token: f.owner.token)
        #expect(await f.h.send(.post, "/v1/invitations/\(token)/accept", token: f.removed.token).errorName == "INVITATION_EXPIRED")

        try f.h.database.writeSync { db in
            try db.run("UPDATE groups SET max_members = member_count WHERE id = ?1", [.text(f.groupID)])
        }
        let full = await f.h.send(.post, "/v1/invitations/\(token)/accept", token: f.outsider.token)
        #expect(full.status == 409)
        #expect(full.errorName == "GROUP_MEMBER_LIMIT")
        let status = try f.h.database.readSync { db in
            try db.scalar("SELECT status FROM invitations WHERE token_hash IS NOT NULL")
        }
        #expect(status == .text("pending"))
    }
}
