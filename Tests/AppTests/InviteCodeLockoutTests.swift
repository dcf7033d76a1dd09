import Domain
import Foundation
import SQLite
import Storage
import TestSupport
import Testing
import Wire

@testable import App

/// the rejoin rule is about the caller; it must not lock a live code for newcomers.
@Suite("Invite-code lockout — rejoin refusals do not count against the code", .serialized)
struct RejoinLockoutTests {
    @Test("a removed member failing five (or ten) times with the live code does not lock it")
    func removedMemberCannotLock() async throws {
        let f = try await GroupFixture.make()
        for i in 0..<10 {
            let reply = await f.h.join(f.code, token: f.removed.token, ip: "10.9.0.\(i)")
            #expect(reply.status == 403)
            #expect(reply.errorName == "REJOIN_NEEDS_NEW_INVITE")
        }
        // Their own budget is spent: the 11th is 429 for them…
        #expect(await f.h.join(f.code, token: f.removed.token, ip: "10.9.1.1").status == 429)
        // …but the code is not locked and has no failures counted against it.
        let (locked, codeFailures) = try f.h.database.readSync { db in
            (
                try db.scalar("SELECT locked_until_ms FROM invite_codes WHERE group_id = ?1", [.text(f.groupID)]),
                try db.scalar("SELECT count(*) FROM invite_attempts WHERE subject LIKE 'code:%'")
            )
        }
        #expect(locked == .null)
        #expect(codeFailures == .integer(0))
        #expect(await f.h.join(f.code, token: f.outsider.token).status == 200)
    }

    @Test("wrong codes still spend the guesser's user and IP budgets")
    func guessingStillCounts() async throws {
        let f = try await GroupFixture.make()
        for i in 0..<10 { #expect(await f.h.join("ZZZZZ\(i % 8 + 2)", token: f.outsider.token, ip: "10.8.0.\(i)").status == 404) }
        #expect(await f.h.join(f.code, token: f.outsider.token, ip: "10.8.1.1").status == 429)
        for i in 0..<30 {
            _ = await f.h.join("ZZZZZZ", token: [f.member, f.other, f.admin][i % 3].token, ip: "192.0.2.77")
        }
        #expect(await f.h.join(f.code, token: f.left.token, ip: "192.0.2.77").status == 429)
    }

    @Test("failures on a disabled code still count against that code")
    func disabledCodeCounts() async throws {
        let f = try await GroupFixture.make()
        try await f.h.expect(204, .delete, "/v1/groups/\(f.groupID)/invite-code", token: f.owner.token)
        for i in 0..<5 { _ = await f.h.join(f.code, token: f.outsider.token, ip: "10.7.0.\(i)") }
        let failures = try f.h.database.readSync { db in
            try db.scalar("SELECT count(*) FROM invite_attempts WHERE subject = ?1", [.text("code:\(f.groupID)")])
        }
        #expect(failures == .integer(5))
    }
}
