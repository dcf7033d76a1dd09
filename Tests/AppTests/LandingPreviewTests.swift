import Domain
import Foundation
import SQLite
import Storage
import TestSupport
import Testing
import Wire

@testable import App

/// `GET /v1/join/{code}` and `GET /v1/invitations/{token}`: what the landing pages show, and that the
/// code preview is no code oracle (docs/security.md#invite-code-previews).
@Suite("Landing previews — a code's and a link invitation's group, inviter; the code preview in the join limiter", .serialized)
struct LandingPreviewTests {
    static let hour: Int64 = 3600 * 1000
    static let day: Int64 = 24 * hour

    /// `GET /v1/join/{code}` from `ip`, signed in when `token` is given.
    static func preview(_ h: AppHarness, _ code: String, token: String? = nil, ip: String = "127.0.0.1") async -> Reply {
        await h.send(.get, "/v1/join/\(code)", token: token, remoteAddress: ip)
    }

    /// Rows in `invite_attempts`.
    static func attempts(_ h: AppHarness) throws -> SQLValue? {
        try h.database.readSync { db in try db.scalar("SELECT count(*) FROM invite_attempts") }
    }

    @Test("a live code previews its group's name, colour, icon, member count and who made the code — nothing else")
    func codePreview() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        try await h.expect(
            200, .patch, "/v1/groups/\(f.groupID)", json: ##"{"color_tag":"#2A9D8F","icon_name":"house"}"##, token: f.owner.token)
        let code = try await h.inviteCode(f.groupID, token: f.admin.token)
        let seq = try h.database.readSync { try $0.scalar("SELECT MAX(seq) FROM change_log") }
        for token in [nil, f.outsider.token, f.member.token] {
            let reply = await Self.preview(h, code, token: token)
            #expect(reply.status == 200)
            #expect(
                Set(reply.json.keys) == ["group_name", "color_tag", "icon_name", "member_count", "invited_by_name", "your_membership"])
            #expect(reply.json["group_name"] as? String == "Household")
            #expect(reply.json["color_tag"] as? String == "#2A9D8F")
            #expect(reply.json["icon_name"] as? String == "house")
            #expect(reply.json["member_count"] as? Int == 4)
            #expect(reply.json["invited_by_name"] as? String == "Admin")
        }
        // Typed as people type it; a preview neither joins nor logs anything, and a usable code
        // records no attempt (reloading the landing page costs nothing).
        let messy = code.lowercased().prefix(3) + "-" + code.lowercased().dropFirst(3)
        #expect(await Self.preview(h, String(messy)).json["group_name"] as? String == "Household")
        #expect(try h.database.readSync { try $0.scalar("SELECT MAX(seq) FROM change_log") } == seq)
        #expect(try Self.attempts(h) == .integer(0))
        #expect(await h.send(.get, "/v1/groups/\(f.groupID)", token: f.outsider.token).status == 404)
        // A group without colour or icon names them as null.
        let plain = try await h.createGroup(token: f.owner.token, name: "Plain")
        let plainReply = await Self.preview(h, try await h.inviteCode(plain, token: f.owner.token))
        #expect(plainReply.json["color_tag"] is NSNull)
        #expect(plainReply.json["icon_name"] is NSNull)
        #expect(plainReply.json["member_count"] as? Int == 1)
        #expect(plainReply.json["invited_by_name"] as? String == "Owner")
        // An operator's code (`chronir-admin invites rotate`: made by "admin") works and names no one.
        let operatorCode = try await h.inviteCode(plain, token: f.owner.token)
        try h.database.writeSync { db in
            try db.run("UPDATE invite_codes SET created_by = 'admin' WHERE group_id = ?1", [.text(plain)])
        }
        let byOperator = await Self.preview(h, operatorCode)
        #expect(byOperator.status == 200)
        #expect(byOperator.json["invited_by_name"] is NSNull)
        #expect(await h.join(operatorCode, token: f.outsider.token).status == 200)
    }

    @Test("every unusable code answers the join's own 404 INVITE_CODE_INVALID, byte for byte but the request id")
    func genericErrors() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        var answers: [Reply] = []
        answers.append(await Self.preview(h, "ZZZZZZ", ip: "10.0.0.1"))
        answers.append(await Self.preview(h, "0O1IL!", ip: "10.0.0.2"))
        answers.append(await Self.preview(h, "TOO-LONG-FOR-A-CODE", token: f.outsider.token, ip: "10.0.0.3"))
        let second = try await h.createGroup(token: f.owner.token, name: "Second")
        let disabled = try await h.inviteCode(second, token: f.owner.token)
        try await h.expect(204, .delete, "/v1/groups/\(second)/invite-code", token: f.owner.token)
        answers.append(await Self.preview(h, disabled, ip: "10.0.0.4"))
        let rotatedAway = f.code
        _ = try await h.inviteCode(f.groupID, token: f.owner.token)
        answers.append(await Self.preview(h, rotatedAway, ip: "10.0.0.5"))
        let third = try await h.createGroup(token: f.owner.token, name: "Third")
        let expired = try await h.inviteCode(third, token: f.owner.token)
        h.clock.advance(by: 7 * Self.day)
        answers.append(await Self.preview(h, expired, ip: "10.0.0.6"))
        answers.append(await h.join("ZZZZZZ", token: f.outsider.token, ip: "10.0.0.7"))
        for reply in answers {
            try reply.expectInvalidInviteCode()
        }
    }

    @Test("preview failures spend the join's per-account budget: after 10, a join with a live code is 429")
    func userBudgetShared() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        for i in 0..<10 {
            #expect(await Self.preview(h, "ZZZZZZ", token: f.outsider.token, ip: "10.3.0.\(i)").status == 404)
            h.clock.advance(by: 1000)
        }
        let joinRefused = await h.join(f.code, token: f.outsider.token, ip: "10.3.1.1")
        #expect(joinRefused.status == 429)
        #expect(joinRefused.header("retry-after").flatMap(Int.init) == 3600 - 10)
        let previewRefused = await Self.preview(h, f.code, token: f.outsider.token, ip: "10.3.1.2")
        #expect(previewRefused.status == 429)
        #expect(previewRefused.errorName == "RATE_LIMITED")
        // And the other way round: join failures spend the preview's budget.
        for i in 0..<10 { _ = await h.join("ZZZZZZ", token: f.member.token, ip: "10.4.0.\(i)") }
        #expect(await Self.preview(h, f.code, token: f.member.token, ip: "10.4.1.1").status == 429)
    }

    @Test("signed-out previews spend the address's budget: after 30, joins and previews from there are 429")
    func ipBudgetShared() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        for _ in 0..<30 { #expect(await Self.preview(h, "ZZZZZZ", ip: "192.0.2.9").status == 404) }
        #expect(await Self.preview(h, f.code, ip: "192.0.2.9").status == 429)
        #expect(await h.join(f.code, token: f.outsider.token, ip: "192.0.2.9").status == 429)
        // An IPv6 client counts as its /64.
        for n in 0..<30 { _ = await Self.preview(h, "ZZZZZZ", ip: "2001:db8:5:5::\(String(n + 1, radix: 16))") }
        #expect(await Self.preview(h, f.code, ip: "2001:db8:5:5::ffff").status == 429)
        #expect(await Self.preview(h, f.code, ip: "192.0.2.10").status == 200)
    }

    @Test("failed previews of a disabled code lock it like failed joins; bad credentials are 401, not anonymous")
    func lockoutAndCredentials() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        try await h.expect(204, .delete, "/v1/groups/\(f.groupID)/invite-code", token: f.owner.token)
        for i in 0..<5 { #expect(await Self.preview(h, f.code, ip: "10.1.0.\(i)").status == 404) }
        let lockedUntil = try h.database.readSync { db in
            try db.queryOne("SELECT locked_until_ms FROM invite_codes WHERE group_id = ?1", [.text(f.groupID)])?
                .int("locked_until_ms")
        }
        #expect(lockedUntil == h.clock.nowMilliseconds() + Self.hour)
        let fresh = try await h.inviteCode(f.groupID, token: f.owner.token)
        let stale = await Self.preview(h, fresh, token: "not-a-session-token-at-all-but-long-enough-0000")
        #expect(stale.status == 401)
        #expect(try Self.attempts(h) == .integer(5))  // the 5 IP failures (the rotation cleared the code's); the 401 counted nothing
        #expect(await Self.preview(h, fresh, token: f.outsider.token).status == 200)
    }

    @Test("a link invitation previews freely by its token: group, inviter; its state as an accept would answer")
    func invitationPreview() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        func link(_ token: String) async throws -> (token: String, id: String) {
            let reply = try await h.expect(201, .post, "/v1/groups/\(f.groupID)/invitations", json: #"{"role":"member"}"#, token: token)
            let id = try #require(reply.object("invitation")?["id"] as? String)
            return (try #require(reply.json["token"] as? String), id)
        }
        let pending = try await link(f.admin.token)
        for token in [nil, f.outsider.token] {
            let reply = await h.send(.get, "/v1/invitations/\(pending.token)", token: token)
            #expect(reply.status == 200)
            #expect(
                Set(reply.json.keys) == ["group_name", "color_tag", "icon_name", "member_count", "invited_by_name", "your_membership"])
            #expect(reply.json["group_name"] as? String == "Household")
            #expect(reply.json["invited_by_name"] as? String == "Admin")
            #expect(reply.json["member_count"] as? Int == 4)
        }
        // The id is not the secret: by id, or a token that is not one, 404.
        #expect(await h.send(.get, "/v1/invitations/\(pending.id)", token: f.admin.token).status == 404)
        #expect(await h.send(.get, "/v1/invitations/nope").status == 404)
        // No attempt limit: a token is 256 bits; 40 misses from one address change nothing.
        for _ in 0..<40 {
            #expect(await h.send(.get, "/v1/invitations/\(String(repeating: "A", count: 43))", remoteAddress: "192.0.2.77").status == 404)
        }
        #expect(try Self.attempts(h) == .integer(0))
        #expect(await h.send(.get, "/v1/invitations/\(pending.token)", remoteAddress: "192.0.2.77").status == 200)
        // Used, revoked, expired.
        try await h.expect(200, .post, "/v1/invitations/\(pending.token)/accept", token: f.outsider.token)
        let used = await h.send(.get, "/v1/invitations/\(pending.token)")
        #expect(used.status == 409)
        #expect(used.errorName == "INVITATION_ALREADY_ACCEPTED")
        let revoked = try await link(f.owner.token)
        try await h.expect(204, .delete, "/v1/invitations/\(revoked.id)", token: f.owner.token)
        #expect(await h.send(.get, "/v1/invitations/\(revoked.token)").status == 404)
        let expiring = try await link(f.owner.token)
        h.clock.advance(by: 7 * Self.day)
        let expired = await h.send(.get, "/v1/invitations/\(expiring.token)")
        #expect(expired.status == 409)
        #expect(expired.errorName == "INVITATION_EXPIRED")
        // The group deleted: 404.
        let other = try await link(f.owner.token)
        try await h.expect(204, .delete, "/v1/groups/\(f.groupID)", token: f.owner.token)
        #expect(await h.send(.get, "/v1/invitations/\(other.token)").status == 404)
    }
}
