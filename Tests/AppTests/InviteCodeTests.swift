import Domain
import Foundation
import SQLite
import Storage
import TestSupport
import Testing
import Wire

@testable import App

@Suite("Invite codes — creation, expiry, rotation, lockout, budgets, rejoin, storage", .serialized)
struct InviteCodeTests {
    static let hour: Int64 = 3600 * 1000
    static let day: Int64 = 24 * hour

    @Test("a code is 6 symbols of the alphabet, shown once with its join link and a 7-day expiry")
    func creation() async throws {
        let f = try await GroupFixture.make()
        let reply = await f.h.send(.post, "/v1/groups/\(f.groupID)/invite-code", token: f.admin.token)
        #expect(reply.status == 201)
        let code = try #require(reply.json["code"] as? String)
        #expect(code.count == 6)
        #expect(code.utf8.allSatisfy { InviteCode.alphabet.contains($0) })
        #expect(reply.json["join_url"] as? String == "http://127.0.0.1:8080/join/\(code)")
        let created = try #require(Timestamp.parse(reply.json["created_at"] as? String ?? ""))
        let expires = try #require(Timestamp.parse(reply.json["expires_at"] as? String ?? ""))
        #expect(expires - created == 7 * Self.day)
        #expect(created == f.h.clock.nowMilliseconds())
        // Nothing else ever shows it: the group, the change log.
        let group = await f.h.send(.get, "/v1/groups/\(f.groupID)", token: f.owner.token)
        #expect(!group.text.contains(code))
        let batch = try f.h.lastBatch()
        #expect(batch.map { $0.string("event") } == ["invite_code_rotated"])
        #expect(batch.first?.string("topic") == "group:\(f.groupID)")
        #expect(batch.first?.string("kind") == "invite_code")
        #expect(batch.first?.string("document")?.contains(code) == false)
        #expect(batch.first?.string("document")?.contains("\"expires_at\"") == true)
    }

    @Test("a free account cannot create codes (403 TIER_REQUIRED) but can join")
    func tiers() async throws {
        let f = try await GroupFixture.make()
        try f.h.database.writeSync { db in
            try db.run("UPDATE users SET tier = 'free' WHERE id IN (?1, ?2)", [.text(f.admin.id), .text(f.outsider.id)])
        }
        let refused = await f.h.send(.post, "/v1/groups/\(f.groupID)/invite-code", token: f.admin.token)
        #expect(refused.status == 403)
        #expect(refused.errorName == "TIER_REQUIRED")
        #expect(await f.h.join(f.code, token: f.outsider.token).status == 200)
    }

    @Test("input is normalised: case, spaces and dashes")
    func normalisation() async throws {
        let f = try await GroupFixture.make()
        let messy = f.code.lowercased().enumerated().map { i, c in i == 3 ? "- \(c)" : String(c) }.joined()
        let reply = await f.h.join(" \(messy) ", token: f.outsider.token)
        #expect(reply.status == 200)
        #expect((reply.object("group")?["member_count"] as? Int) == 5)
    }

    @Test("a code works until 7 days after creation, not after")
    func expiry() async throws {
        let f = try await GroupFixture.make()
        let code = try await f.h.inviteCode(f.groupID, token: f.owner.token)
        f.h.clock.advance(by: 7 * Self.day - 1)
        #expect(await f.h.join(code, token: f.outsider.token).status == 200)
        let late = try await f.h.register("late@example.com")
        f.h.clock.advance(by: 1)
        let reply = await f.h.join(code, token: late.token)
        #expect(reply.status == 404)
        #expect(reply.errorName == "INVITE_CODE_INVALID")
    }

    @Test("rotation invalidates the old code at once; DELETE disables the code")
    func rotationAndDisable() async throws {
        let f = try await GroupFixture.make()
        let rotated = try await f.h.inviteCode(f.groupID, token: f.admin.token)
        #expect(rotated != f.code)
        #expect(await f.h.join(f.code, token: f.outsider.token).errorName == "INVITE_CODE_INVALID")
        #expect(await f.h.send(.delete, "/v1/groups/\(f.groupID)/invite-code", token: f.owner.token).status == 204)
        #expect(try f.h.lastBatch().map { $0.string("event") } == ["invite_code_disabled"])
        #expect(await f.h.join(rotated, token: f.outsider.token).errorName == "INVITE_CODE_INVALID")
        // Disabling twice is a no-op; a new code works again.
        #expect(await f.h.send(.delete, "/v1/groups/\(f.groupID)/invite-code", token: f.owner.token).status == 204)
        let fresh = try await f.h.inviteCode(f.groupID, token: f.owner.token)
        #expect(await f.h.join(fresh, token: f.outsider.token).status == 200)
    }

    @Test("every invalid case answers the same status, code, name and message")
    func genericErrors() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        var answers: [Reply] = []
        // Unknown and malformed.
        answers.append(await h.join("ZZZZZZ", token: f.outsider.token, ip: "10.0.0.1"))
        answers.append(await h.join("0O1IL!", token: f.outsider.token, ip: "10.0.0.2"))
        answers.append(await h.join("", token: f.outsider.token, ip: "10.0.0.3"))
        // (Older than the caller's removal / leave: 403 REJOIN_NEEDS_NEW_INVITE, the `rejoin` test.)
        // Disabled.
        let second = try await h.createGroup(token: f.owner.token, name: "Second")
        let disabled = try await h.inviteCode(second, token: f.owner.token)
        try await h.expect(204, .delete, "/v1/groups/\(second)/invite-code", token: f.owner.token)
        answers.append(await h.join(disabled, token: f.outsider.token, ip: "10.0.0.6"))
        // Locked (as a lock left by an older binary: no API failure counts against a live code now),
        // then a valid caller.
        let until = h.clock.nowMilliseconds() + Self.hour
        try h.database.writeSync { db in
            try db.run("UPDATE invite_codes SET locked_until_ms = ?2 WHERE group_id = ?1", [.text(f.groupID), .integer(until)])
        }
        answers.append(await h.join(f.code, token: f.outsider.token, ip: "10.0.0.7"))
        // Expired.
        let third = try await h.createGroup(token: f.owner.token, name: "Third")
        let expired = try await h.inviteCode(third, token: f.owner.token)
        h.clock.advance(by: 8 * Self.day)
        let late = try await h.register("late@example.com")
        answers.append(await h.join(expired, token: late.token, ip: "10.0.0.8"))

        #expect(answers.count == 6)
        for reply in answers {
            try reply.expectInvalidInviteCode()
            #expect(reply.response.headers[first: "retry-after"] == nil)
        }
    }

    @Test("five failures on a disabled code within an hour lock it for an hour; a rotation starts over")
    func lockout() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        try await h.expect(204, .delete, "/v1/groups/\(f.groupID)/invite-code", token: f.owner.token)
        for i in 0..<5 {
            #expect(await h.join(f.code, token: f.outsider.token, ip: "10.1.0.\(i)").status == 404)
            h.clock.advance(by: 60_000)
        }
        let lockedAt = h.clock.nowMilliseconds() - 60_000
        let lockedUntil = try h.database.readSync { db in
            try db.queryOne("SELECT locked_until_ms FROM invite_codes WHERE group_id = ?1", [.text(f.groupID)])?
                .int("locked_until_ms")
        }
        #expect(lockedUntil == lockedAt + Self.hour)
        let fresh = try await h.inviteCode(f.groupID, token: f.owner.token)
        #expect(await h.join(fresh, token: f.outsider.token, ip: "10.1.1.1").status == 200)
    }

    @Test("a lock on a live code refuses everyone with the generic answer until it ends")
    func lockEnforced() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        let until = h.clock.nowMilliseconds() + Self.hour
        try h.database.writeSync { db in
            try db.run("UPDATE invite_codes SET locked_until_ms = ?2 WHERE group_id = ?1", [.text(f.groupID), .integer(until)])
        }
        #expect(await h.join(f.code, token: f.outsider.token).errorName == "INVITE_CODE_INVALID")
        h.clock.set(until - 1)
        #expect(await h.join(f.code, token: f.outsider.token).status == 404)
        h.clock.set(until)
        #expect(await h.join(f.code, token: f.outsider.token).status == 200)
    }

    @Test("a failure on an unknown code counts against the user and the IP only")
    func unknownCodesDoNotLock() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        let users = [f.member, f.admin, f.other]
        for (n, user) in users.enumerated() {
            for i in 0..<3 { _ = await h.join("ZZZZZ\(["2", "3", "4"][i])", token: user.token, ip: "10.2.\(n).\(i)") }
        }
        let subjects = try h.database.readSync { db in
            try db.query(
                "SELECT DISTINCT substr(subject, 1, \(db.dialect.position(of: "':'", in: "subject"))) AS kind FROM invite_attempts"
            )
            .compactMap { $0.string("kind") }
        }
        #expect(Set(subjects) == ["user:", "ip:"])
        #expect(await h.join(f.code, token: f.outsider.token).status == 200)
    }

    @Test("per-user budget: the 11th failure within an hour is 429 with Retry-After, even with a valid code")
    func userBudget() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        for i in 0..<10 {
            #expect(await h.join("ZZZZZZ", token: f.outsider.token, ip: "10.3.0.\(i)").status == 404)
            h.clock.advance(by: 1000)
        }
        let refused = await h.join(f.code, token: f.outsider.token, ip: "10.3.1.1")
        #expect(refused.status == 429)
        #expect(refused.errorName == "RATE_LIMITED")
        let retry = try #require(refused.header("retry-after").flatMap(Int.init))
        #expect(retry == 3600 - 10)
        // Other users are not affected.
        #expect(await h.join(f.code, token: f.member.token, ip: "10.3.1.1").status == 200)
        h.clock.advance(by: Int64(retry) * 1000)
        #expect(await h.join(f.code, token: f.outsider.token, ip: "10.3.1.1").status == 200)
    }

    @Test("per-IP budget: 30 failures from one address refuse everyone there with 429, elsewhere is fine")
    func ipBudget() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        for user in [f.member, f.admin, f.other] {
            for _ in 0..<10 { #expect(await h.join("ZZZZZZ", token: user.token, ip: "192.0.2.9").status == 404) }
        }
        let refused = await h.join(f.code, token: f.outsider.token, ip: "192.0.2.9")
        #expect(refused.status == 429)
        #expect(refused.header("retry-after") != nil)
        #expect(await h.join(f.code, token: f.outsider.token, ip: "192.0.2.10").status == 200)
    }

    @Test("owners and admins see the current code again; rotating and disabling change what they see")
    func currentCode() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        let path = "/v1/groups/\(f.groupID)/invite-code"
        let seen = try await h.expect(200, .get, path, token: f.admin.token).json
        #expect(seen["code"] as? String == f.code)
        #expect((seen["join_url"] as? String)?.hasSuffix("/join/\(f.code)") == true)
        #expect(seen["disabled_at"] is NSNull)
        #expect(await h.send(.get, path, token: f.member.token).status == 403)
        // Stored sealed, never as text; looking it up still goes by the keyed hash.
        let stored = try h.database.readSync { db in
            try db.queryOne("SELECT code_sealed FROM invite_codes WHERE group_id = ?1", [.text(f.groupID)])?.blob("code_sealed")
        }
        let sealed = try #require(stored)
        #expect(!String(decoding: sealed, as: UTF8.self).contains(f.code))
        let fresh = try await h.inviteCode(f.groupID, token: f.owner.token)
        #expect(try await h.expect(200, .get, path, token: f.owner.token).json["code"] as? String == fresh)
        try await h.expect(204, .delete, path, token: f.owner.token)
        let disabled = try await h.expect(200, .get, path, token: f.owner.token).json
        #expect(disabled["code"] is NSNull && disabled["disabled_at"] is String)
        let second = try await h.createGroup(token: f.owner.token, name: "Second")
        #expect(await h.send(.get, "/v1/groups/\(second)/invite-code", token: f.owner.token).status == 404)
        // Expired: the facts, no code.
        _ = try await h.inviteCode(second, token: f.owner.token)
        h.clock.advance(by: InviteCode.lifetimeMilliseconds + 1)
        #expect(try await h.expect(200, .get, "/v1/groups/\(second)/invite-code", token: f.owner.token).json["code"] is NSNull)
    }

    @Test("removed and left members rejoin only with a code created after they went")
    func rejoin() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        // The code is fine; their own past is what refuses them, and the answer says so.
        let removed = await h.join(f.code, token: f.removed.token)
        #expect(removed.status == 403 && removed.errorName == "REJOIN_NEEDS_NEW_INVITE")
        #expect(removed.text.contains("removed"))
        let left = await h.join(f.code, token: f.left.token)
        #expect(left.status == 403 && left.errorName == "REJOIN_NEEDS_NEW_INVITE")
        #expect(left.text.contains("you left"))
        // The landing page tells each caller where they stand before they try.
        func yours(_ code: String, _ token: String?) async throws -> Any? {
            try await h.expect(200, .get, "/v1/join/\(code)", token: token).json["your_membership"]
        }
        #expect(try await yours(f.code, f.removed.token) as? String == "needs_new_invite")
        #expect(try await yours(f.code, f.owner.token) as? String == "active")
        #expect(try await yours(f.code, f.outsider.token) is NSNull)
        #expect(try await yours(f.code, nil) is NSNull)
        let fresh = try await h.inviteCode(f.groupID, token: f.owner.token)
        #expect(try await yours(fresh, f.left.token) as? String == "may_rejoin")
        for account in [f.removed, f.left] {
            let reply = await h.join(fresh, token: account.token)
            #expect(reply.status == 200)
            let members = reply.json["members"] as? [[String: Any]] ?? []
            let me = members.first { $0["user_id"] as? String == account.id }
            #expect(me?["status"] as? String == "active")
            #expect(me?["role"] as? String == "member")
            #expect(me?["removed_at"] is NSNull)
            let batch = try h.lastBatch()
            #expect(batch.first?.string("event") == "member_joined")
            #expect(batch.first?.string("op") == "modified")  // the old membership row comes back
        }
        #expect(await h.send(.get, "/v1/groups/\(f.groupID)", token: f.removed.token).status == 200)
    }

    @Test("joining writes one member_joined batch with whole documents; joining again is idempotent")
    func joinChangeLogAndIdempotency() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        let first = await h.join(f.code, token: f.outsider.token)
        #expect(first.status == 200)
        let batch = try h.lastBatch()
        #expect(batch.allSatisfy { $0.string("event") == "member_joined" && $0.string("actor") == "user:\(f.outsider.id)" })
        #expect(
            batch.map { "\($0.string("topic") ?? "") \($0.string("kind") ?? "") \($0.string("op") ?? "")" } == [
                "group:\(f.groupID) member added", "group:\(f.groupID) group modified", "user:\(f.outsider.id) group added",
            ])
        let member = try JSONSerialization.jsonObject(with: Data((batch[0].string("document") ?? "").utf8)) as? [String: Any]
        #expect(member?["display_name"] as? String == "Outsider")
        #expect(member?["status"] as? String == "active")
        let group = try JSONSerialization.jsonObject(with: Data((batch[1].string("document") ?? "").utf8)) as? [String: Any]
        #expect(group?["member_count"] as? Int == 5)
        #expect(group?["name"] as? String == "Household")

        let seq = try h.database.readSync { try $0.scalar("SELECT MAX(seq) FROM change_log") }
        let again = await h.join(f.code, token: f.outsider.token)
        #expect(again.status == 200)
        #expect(again.object("group")?["member_count"] as? Int == 5)
        #expect(try h.database.readSync { try $0.scalar("SELECT MAX(seq) FROM change_log") } == seq)
        #expect(await h.send(.get, "/v1/groups", token: f.outsider.token).json["groups"].map { ($0 as? [Any])?.count } == 1)
    }

    @Test("20 concurrent joins for the last free seat admit exactly one")
    func memberLimitUnderConcurrency() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        // 4 active members; one seat left.
        try h.database.writeSync { db in
            try db.run("UPDATE groups SET max_members = 5 WHERE id = ?1", [.text(f.groupID)])
        }
        var tokens: [String] = []
        for i in 0..<20 { tokens.append(try await h.register("racer\(i)@example.com").token) }
        let code = f.code
        let statuses = await withTaskGroup(of: Reply.self) { group in
            for token in tokens { group.addTask { await h.join(code, token: token) } }
            var replies: [Reply] = []
            for await reply in group { replies.append(reply) }
            return replies
        }
        #expect(statuses.filter { $0.status == 200 }.count == 1)
        #expect(statuses.filter { $0.status == 409 && $0.errorName == "GROUP_MEMBER_LIMIT" }.count == 19)
        let (count, active) = try h.database.readSync { db in
            (
                try db.scalar("SELECT member_count FROM groups WHERE id = ?1", [.text(f.groupID)]),
                try db.scalar("SELECT count(*) FROM group_members WHERE group_id = ?1 AND status = 'active'", [.text(f.groupID)])
            )
        }
        #expect(count == .integer(5))
        #expect(active == .integer(5))
    }

    @Test("no raw code anywhere in the database file or its WAL", .enabled(if: TestBackend.current == .sqlite, "reads the SQLite file"))
    func noRawCodeStored() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        var codes = [f.code]
        for _ in 0..<3 { codes.append(try await h.inviteCode(f.groupID, token: f.owner.token)) }
        _ = await h.join(codes.last!, token: f.outsider.token)
        _ = await h.join(f.code, token: f.removed.token)
        _ = await h.join(codes[1].lowercased(), token: f.left.token)
        let path = h.sqlite.path
        var scanned = 0
        for file in [path, path + "-wal"] {
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            scanned += data.count
            let bytes = [UInt8](data)
            for code in codes {
                for variant in [code, code.lowercased()] {
                    let needle = Array(variant.utf8)
                    let found =
                        bytes.count >= needle.count
                        && (0...(bytes.count - needle.count)).contains { i in bytes[i..<(i + needle.count)].elementsEqual(needle) }
                    #expect(!found, "code \(variant) found in \(file)")
                }
            }
        }
        #expect(scanned > 0)
        // What is stored is the keyed hash.
        let stored = try h.database.readSync { db in
            try db.queryOne("SELECT code_hash FROM invite_codes WHERE group_id = ?1", [.text(f.groupID)])?.blob("code_hash")
        }
        let expected = InviteCode(normalizing: codes.last!)?.hash(secret: Array(repeating: 0x5A, count: 32))
        #expect(stored == expected)
    }
}
