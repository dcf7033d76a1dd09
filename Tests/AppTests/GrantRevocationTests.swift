import Domain
import Foundation
import SQLite
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// what a person handed out (link/email invitations, the invite code) dies with their
/// right to hand it out — removal, leaving, demotion, transfer, suspension — in the same transaction,
/// recorded as the explicit revocation is.
@Suite("Grant revocation — a removed admin's invitations and code stop working", .serialized)
struct GrantRevocationTests {
    /// The admin's link invitation token, the code the admin rotated, and the admin's second account.
    struct Grants {
        var linkID: String
        var linkToken: String
        var code: String
        var secondAccount: GroupFixture.Account
    }

    func grants(_ f: GroupFixture, by account: GroupFixture.Account) async throws -> Grants {
        let link = try await f.h.expect(
            201, .post, "/v1/groups/\(f.groupID)/invitations", json: #"{"role":"member"}"#, token: account.token)
        let code = try await f.h.inviteCode(f.groupID, token: account.token)
        let (token, id) = try await f.h.register("second-\(account.id.prefix(8))@example.com", name: "Second")
        f.h.clock.advance(by: 1)
        return Grants(
            linkID: try #require(link.object("invitation")?["id"] as? String),
            linkToken: try #require(link.json["token"] as? String), code: code,
            secondAccount: GroupFixture.Account(token: token, id: id, email: "second@example.com"))
    }

    /// Events of the batches after `seq`, in order, as "event topic kind reason".
    func batches(after seq: Int64, _ h: AppHarness) throws -> [String] {
        try h.database.readSync { db in
            try db.query(
                "SELECT event, topic, kind, reason, actor FROM change_log WHERE seq > ?1 ORDER BY seq", [.integer(seq)])
        }.map { "\($0.string("event") ?? "") \($0.string("topic") ?? "") \($0.string("kind") ?? "") \($0.string("reason") ?? "-")" }
    }

    func latestSeq(_ h: AppHarness) throws -> Int64 {
        try h.database.readSync { try ChangeLog.latestSeq(on: $0) }
    }

    /// Both grants are refused to the second account, with the answers a revoked link and a
    /// disabled code always get.
    func expectDead(_ g: Grants, _ f: GroupFixture) async {
        let accepted = await f.h.send(.post, "/v1/invitations/\(g.linkToken)/accept", token: g.secondAccount.token)
        #expect(accepted.status == 404, "link accepted after its creator lost the right: \(accepted.text)")
        let joined = await f.h.join(g.code, token: g.secondAccount.token)
        #expect(joined.status == 404, "code used after its creator lost the right: \(joined.text)")
        #expect(joined.errorName == "INVITE_CODE_INVALID")
    }

    @Test("the red-team case: owner removes the admin; the admin's link and code stop working at once")
    func removedAdmin() async throws {
        let f = try await GroupFixture.make()
        let g = try await grants(f, by: f.admin)
        let seq = try latestSeq(f.h)
        try await f.h.expect(204, .delete, "/v1/groups/\(f.groupID)/members/\(f.admin.id)", token: f.owner.token)
        let rows = try batches(after: seq, f.h)
        #expect(rows.first?.hasPrefix("member_removed") == true)
        // Then, as an explicit revoke and disable would record them, with the reason.
        #expect(
            rows.suffix(2) == [
                "invitation_revoked user:\(f.admin.id) invitation creator_removed",
                "invite_code_disabled group:\(f.groupID) invite_code creator_removed",
            ])
        let actors = try f.h.database.readSync { db in
            try db.query("SELECT DISTINCT actor FROM change_log WHERE seq > ?1", [.integer(seq)]).compactMap { $0.string("actor") }
        }
        #expect(actors == ["user:\(f.owner.id)"])
        await expectDead(g, f)
        // The invitation reads as revoked to the owner; the code's record as disabled.
        let list = await f.h.send(.get, "/v1/groups/\(f.groupID)/invitations", token: f.owner.token)
        let invitation = (list.json["invitations"] as? [[String: Any]])?.first { $0["id"] as? String == g.linkID }
        #expect(invitation?["status"] as? String == "revoked")
        // A new code from the owner works.
        let fresh = try await f.h.inviteCode(f.groupID, token: f.owner.token)
        #expect(await f.h.join(fresh, token: g.secondAccount.token).status == 200)
    }

    @Test("leaving revokes the leaver's grants")
    func adminLeaves() async throws {
        let f = try await GroupFixture.make()
        let g = try await grants(f, by: f.admin)
        try await f.h.expect(204, .delete, "/v1/groups/\(f.groupID)/members/\(f.admin.id)", token: f.admin.token)
        await expectDead(g, f)
        #expect(try f.h.lastBatch().first?.string("reason") == "creator_left")
    }

    @Test("demotion to member revokes; an email invitation too (its addressee sees it revoked)")
    func demotedAdmin() async throws {
        let f = try await GroupFixture.make()
        let g = try await grants(f, by: f.admin)
        let email = try await f.h.expect(
            201, .post, "/v1/groups/\(f.groupID)/invitations", json: #"{"invitee_email":"\#(f.outsider.email)"}"#,
            token: f.admin.token)
        let emailID = try #require(email.object("invitation")?["id"] as? String)
        let seq = try latestSeq(f.h)
        try await f.h.expect(
            200, .patch, "/v1/groups/\(f.groupID)/members/\(f.admin.id)", json: #"{"role":"member"}"#, token: f.owner.token)
        let rows = try batches(after: seq, f.h)
        #expect(rows.contains("invitation_revoked user:\(f.outsider.id) invitation creator_role_changed"))
        await expectDead(g, f)
        #expect(await f.h.send(.post, "/v1/invitations/\(emailID)/accept", token: f.outsider.token).status == 404)
        // Promoting again does not revive anything.
        try await f.h.expect(
            200, .patch, "/v1/groups/\(f.groupID)/members/\(f.admin.id)", json: #"{"role":"admin"}"#, token: f.owner.token)
        await expectDead(g, f)
    }

    @Test("transfer: the old owner (now admin) keeps member invitations and the code, loses admin invitations")
    func transfer() async throws {
        let f = try await GroupFixture.make()
        let g = try await grants(f, by: f.owner)
        let adminLink = try await f.h.expect(
            201, .post, "/v1/groups/\(f.groupID)/invitations", json: #"{"role":"admin"}"#, token: f.owner.token)
        let adminToken = try #require(adminLink.json["token"] as? String)
        try await f.h.expect(
            200, .post, "/v1/groups/\(f.groupID)/transfer", json: #"{"user_id":"\#(f.admin.id)"}"#, token: f.owner.token)
        #expect(await f.h.send(.post, "/v1/invitations/\(adminToken)/accept", token: f.outsider.token).status == 404)
        #expect(await f.h.send(.post, "/v1/invitations/\(g.linkToken)/accept", token: g.secondAccount.token).status == 200)
        #expect(await f.h.join(g.code, token: f.outsider.token).status == 200)
    }

    @Test("suspension revokes the account's grants in every group, in the suspension's transaction")
    func suspension() async throws {
        let f = try await GroupFixture.make()
        let g = try await grants(f, by: f.admin)
        let now = f.h.clock.nowMilliseconds()
        let adminID = f.admin.id
        try f.h.database.writeSync { db in
            _ = try AccountStore.setStatus(
                userID: adminID, status: .suspended, actor: .admin, reason: "spam", at: now, on: db)
        }
        await expectDead(g, f)
        // Reinstating restores nothing.
        try f.h.database.writeSync { db in
            _ = try AccountStore.setStatus(userID: adminID, status: .active, actor: .admin, reason: nil, at: now, on: db)
        }
        await expectDead(g, f)
    }

    @Test("operator removal and an operator unfreeze catch up with grants whose creator lost the right")
    func operatorPaths() async throws {
        let f = try await GroupFixture.make()
        let g = try await grants(f, by: f.admin)
        let now = f.h.clock.nowMilliseconds()
        let (groupID, adminID) = (f.groupID, f.admin.id)
        // Frozen while the admin is suspended: the frozen group's rows cannot change…
        try f.h.database.writeSync { db in
            _ = try GroupStore.adminSetFrozen(groupID: groupID, frozen: true, reason: "review", at: now, on: db)
            _ = try AccountStore.setStatus(userID: adminID, status: .suspended, actor: .admin, reason: "spam", at: now, on: db)
        }
        // …so unfreezing revokes them.
        try f.h.database.writeSync { db in
            _ = try GroupStore.adminSetFrozen(groupID: groupID, frozen: false, reason: "done", at: now, on: db)
        }
        await expectDead(g, f)

        let f2 = try await GroupFixture.make()
        let g2 = try await grants(f2, by: f2.admin)
        let (groupID2, adminID2) = (f2.groupID, f2.admin.id)
        try f2.h.database.writeSync { db in
            _ = try GroupStore.adminRemoveMember(groupID: groupID2, userID: adminID2, reason: "abuse", at: now, on: db)
        }
        await expectDead(g2, f2)
    }

    @Test("account deletion disables the codes the account created")
    func deletion() async throws {
        let f = try await GroupFixture.make()
        let g = try await grants(f, by: f.admin)
        let adminID = f.admin.id
        let now = f.h.clock.nowMilliseconds()
        try f.h.database.writeSync { db in try GroupStore.deleteAccount(userID: adminID, at: now, on: db) }
        await expectDead(g, f)
    }

    @Test("a plain member leaving or removed changes nothing of others' grants")
    func othersUnaffected() async throws {
        let f = try await GroupFixture.make()
        let g = try await grants(f, by: f.admin)
        let seq = try latestSeq(f.h)
        try await f.h.expect(204, .delete, "/v1/groups/\(f.groupID)/members/\(f.other.id)", token: f.admin.token)
        #expect(try batches(after: seq, f.h).allSatisfy { $0.hasPrefix("member_removed") })
        #expect(await f.h.send(.post, "/v1/invitations/\(g.linkToken)/accept", token: g.secondAccount.token).status == 200)
        #expect(await f.h.join(g.code, token: f.outsider.token).status == 200)
    }
}
