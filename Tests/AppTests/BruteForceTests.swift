import Domain
import Foundation
import SQLite
import Storage
import Testing
import Wire

@testable import App

/// Online guessing from many addresses of one IPv6 /64 (one subscriber's allocation) shares one
/// per-IP budget, for invite codes and for logins. Reliability/bruteforce.sh measures the IPv4 budgets.
@Suite("Brute force — an IPv6 /64 is one client network")
struct BruteForceTests {
    @Test("30 failed joins from 30 addresses of one /64 refuse the whole /64 with 429; another /64 is fine")
    func joinBudgetPerSlash64() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        var n = 0
        for user in [f.member, f.admin, f.other] {
            for _ in 0..<10 {
                n += 1
                #expect(await h.join("ZZZZZZ", token: user.token, ip: "2001:db8:7:7::\(String(n, radix: 16))").status == 404)
            }
        }
        #expect(await h.join(f.code, token: f.outsider.token, ip: "2001:db8:7:7:ffff::1").status == 429)
        #expect(await h.join(f.code, token: f.outsider.token, ip: "2001:db8:7:8::1").status == 200)
    }

    @Test("10 failed logins from 10 addresses of one /64 refuse the /64 for any email")
    func loginBudgetPerSlash64() async throws {
        let h = try AppHarness()
        _ = try await h.register("ana@example.com")
        _ = try await h.register("bo@example.com")
        for i in 1...10 {
            let reply = await h.login("ana@example.com", password: "wrong \(i)", from: "2001:db8:9:9::\(i)")
            #expect(reply.status == 401)
        }
        let refused = await h.login("bo@example.com", from: "2001:db8:9:9:abcd::1")
        #expect(refused.status == 429)
        let elsewhere = await h.login("bo@example.com", from: "2001:db8:9:a::1")
        #expect(elsewhere.status == 200)
    }

    @Test("30 wrong passwords sent at once: at most the budget (10) is evaluated, the rest get 429")
    func parallelLoginsShareTheBudget() async throws {
        let h = try AppHarness()
        _ = try await h.register("ana@example.com")
        let statuses = await withTaskGroup(of: Int.self) { group in
            for i in 0..<30 {
                group.addTask {
                    await h.login("ana@example.com", password: "wrong \(i)")
                        .status
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.filter { $0 == 401 }.count == 10)
        #expect(statuses.filter { $0 == 429 }.count == 20)
        let stored = try h.database.readSync { db in try db.queryOne("SELECT count(*) FROM login_failures")?[0] }
        #expect(stored == .integer(30))  // 10 each per email, per (email, network) and per network
    }

    @Test("a successful login forgets the failure it recorded up front")
    func successLeavesNoFailure() async throws {
        let h = try AppHarness()
        _ = try await h.register("ana@example.com")
        let ok = await h.login("ana@example.com")
        #expect(ok.status == 200)
        let stored = try h.database.readSync { db in try db.queryOne("SELECT count(*) FROM login_failures")?[0] }
        #expect(stored == .integer(0))
    }
}
