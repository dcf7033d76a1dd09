import Domain
import Foundation
import SQLite
import Storage
import TestSupport
import Testing
import Wire

@testable import App

/// Per-user write budgets end to end (docs/security-budgets.md): the write past
/// the budget is 429 RATE_LIMITED with `Retry-After`, refused before anything is written; other
/// users, reads and logout are unaffected; time (the manual clock) restores the budget.
@Suite("Write budgets — 429 before any write, per user")
struct WriteBudgetRouteTests {
    /// Rows in the change log and the user's stored document: what a refused write must not change.
    static func snapshot(_ h: AppHarness, user: String) throws -> [SQLValue] {
        try h.database.readSync { db in
            [
                try db.scalar("SELECT count(*) FROM change_log"),
                try db.scalar("SELECT max(seq) FROM change_log"),
                try db.scalar("SELECT count(*) FROM users"),
                try db.scalar("SELECT display_name || '|' || version FROM users WHERE id = ?1", [.text(user)]),
            ]
        }
    }

    @Test("the write past the burst is 429 with Retry-After and changes nothing; others, reads, logout unaffected")
    func countBudget() async throws {
        let h = try AppHarness(writeBudget: WriteBudget(writesPerMinute: 5, burst: 5, bytesPerHour: 0))
        let ana = try await h.register("ana@example.com")
        let ben = try await h.register("ben@example.com", name: "Ben")
        for i in 0..<5 {
            let ok = await h.send(.patch, "/v1/me", json: #"{"display_name":"Ana \#(i)"}"#, token: ana.token)
            #expect(ok.status == 200)
        }
        let before = try Self.snapshot(h, user: ana.id)
        let refused = await h.send(.patch, "/v1/me", json: #"{"display_name":"Ana 5"}"#, token: ana.token)
        #expect(refused.status == 429)
        #expect(refused.errorName == "RATE_LIMITED")
        #expect(refused.header("Retry-After") == "12")  // 5 a minute: one every 12 s
        #expect((refused.json["error"] as? [String: Any])?["retry_after"] as? Int == 12)
        // Every write method counts, whatever the route; none of them wrote anything.
        #expect(await h.send(.post, "/v1/groups", json: #"{"name":"Flood"}"#, token: ana.token).status == 429)
        #expect(await h.send(.delete, "/v1/me", token: ana.token).status == 429)
        #expect(try Self.snapshot(h, user: ana.id) == before)

        // Reads are not budgeted; another user has their own budget.
        #expect(await h.send(.get, "/v1/me", token: ana.token).json["display_name"] as? String == "Ana 4")
        #expect(await h.send(.patch, "/v1/me", json: #"{"display_name":"Ben 1"}"#, token: ben.token).status == 200)

        // After the refill time one more write goes through, then the budget is spent again.
        h.clock.advance(by: 11_999)
        #expect(await h.send(.patch, "/v1/me", json: #"{"display_name":"Ana 5"}"#, token: ana.token).status == 429)
        h.clock.advance(by: 1)
        #expect(await h.send(.patch, "/v1/me", json: #"{"display_name":"Ana 5"}"#, token: ana.token).status == 200)
        #expect(await h.send(.patch, "/v1/me", json: #"{"display_name":"Ana 6"}"#, token: ana.token).status == 429)
        // Logout is exempt: ending a session always works.
        #expect(await h.send(.post, "/v1/auth/logout", token: ana.token).status == 204)
    }

    @Test("the finding's flood: PATCHing a 2,000-character note stops at the default burst, the alarm untouched")
    func defaultBudgetStopsNoteFlood() async throws {
        let h = try AppHarness(defaultTier: .premium)  // the defaults: 120/minute, burst 60, 5 MiB/hour
        #expect(WriteBudget.standard == WriteBudget(writesPerMinute: 120, burst: 60, bytesPerHour: 5 << 20))
        let owner = try await h.register("owner@example.com")
        let groupID = try await h.createGroup(token: owner.token)  // write 1
        let created = try await h.expect(
            201, .post, "/v1/groups/\(groupID)/alarms",
            json: #"{"title":"Bins",\#(SharedAlarmFixture.dailyTen)}"#, token: owner.token)  // write 2
        let alarm = "/v1/groups/\(groupID)/alarms/\(try #require(created.json["id"] as? String))"
        var accepted = 0
        var refusal: Reply?
        for i in 0..<100 {
            let note = String(repeating: Character(UnicodeScalar(UInt8(97 + i % 26))), count: 2000)
            let reply = await h.send(.patch, alarm, json: #"{"note":"\#(note)"}"#, token: owner.token)
            if reply.status == 200 {
                accepted += 1
            } else {
                refusal = reply
                break
            }
        }
        #expect(accepted == 58)
        #expect(refusal?.status == 429)
        #expect(refusal?.header("Retry-After") == "1")
        let (changes, version) = try h.database.readSync { db in
            (try db.scalar("SELECT count(*) FROM change_log"), try db.scalar("SELECT version FROM shared_alarms"))
        }
        for _ in 0..<20 { #expect(await h.send(.patch, alarm, json: #"{"note":"x"}"#, token: owner.token).status == 429) }
        #expect(
            try h.database.readSync { db in
                (try db.scalar("SELECT count(*) FROM change_log"), try db.scalar("SELECT version FROM shared_alarms"))
            } == (changes, version))
        #expect(version == .integer(59))
    }

    @Test("the byte budget: large bodies exhaust it; the wait is the bytes' refill time")
    func byteBudget() async throws {
        let h = try AppHarness(writeBudget: WriteBudget(writesPerMinute: 0, burst: 0, bytesPerHour: 100_000))
        let ana = try await h.register("ana@example.com")
        // 30,000 bytes of JSON (whitespace is JSON): three fit in 100,000 bytes, the fourth does not.
        func body(_ name: String) -> String {
            let head = #"{"display_name":"\#(name)""#
            return head + String(repeating: " ", count: 30_000 - head.utf8.count - 1) + "}"
        }
        for i in 0..<3 {
            #expect(await h.send(.patch, "/v1/me", json: body("Ana \(i)"), token: ana.token).status == 200)
        }
        let before = try Self.snapshot(h, user: ana.id)
        let refused = await h.send(.patch, "/v1/me", json: body("Ana 3"), token: ana.token)
        #expect(refused.status == 429)
        // 20,000 bytes missing at 100,000 bytes an hour: 720 s.
        #expect(refused.header("Retry-After") == "720")
        #expect(try Self.snapshot(h, user: ana.id) == before)
        h.clock.advance(by: 720_000)
        #expect(await h.send(.patch, "/v1/me", json: body("Ana 3"), token: ana.token).status == 200)
        // Now empty: even a tiny body waits, for the 1 KiB every write costs at least (36.9 s).
        let tiny = await h.send(.patch, "/v1/me", json: #"{"display_name":"Ana 4"}"#, token: ana.token)
        #expect(tiny.status == 429)
        #expect(tiny.header("Retry-After") == "37")
    }

    @Test("disabled budgets (0) let one user write without limit")
    func disabled() async throws {
        let h = try AppHarness(writeBudget: .unlimited)
        let ana = try await h.register("ana@example.com")
        for i in 0..<150 {
            #expect(await h.send(.patch, "/v1/me", json: #"{"display_name":"Ana \#(i)"}"#, token: ana.token).status == 200)
        }
        #expect(h.app.services.writeBudgets.trackedUsers == 0)
    }

    @Test("the per-user map stays bounded: full entries go first, a user in deficit keeps their state")
    func boundedEntries() throws {
        let t0: Int64 = 1_770_368_400_000
        let budgets = WriteBudgets(
            budget: WriteBudget(writesPerMinute: 60, burst: 1, bytesPerHour: 0), maxTrackedUsers: 8)
        for i in 0..<7 { try budgets.charge(userID: "u\(i)", bodyBytes: 10, now: t0) }  // full again at t0+1000
        try budgets.charge(userID: "hot", bodyBytes: 10, now: t0 + 999)  // empty until t0+1999
        #expect(budgets.trackedUsers == 8)
        try budgets.charge(userID: "new", bodyBytes: 10, now: t0 + 1000)  // sweeps the seven full ones
        #expect(budgets.trackedUsers == 2)
        #expect(throws: DomainError.rateLimited(retryAfterSeconds: 1)) {
            try budgets.charge(userID: "hot", bodyBytes: 10, now: t0 + 1000)
        }
        // A flood of distinct users that all stay in deficit never grows the map past its bound.
        for i in 0..<1000 {
            try budgets.charge(userID: "flood\(i)", bodyBytes: 10, now: t0 + 1000)
            #expect(budgets.trackedUsers <= 8)
        }
    }
}
