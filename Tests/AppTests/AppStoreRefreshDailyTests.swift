import Foundation
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

@Suite("Subscriptions — App Store daily refresh of active subscriptions, against a fake API on loopback")
struct AppStoreRefreshDailyTests {
    static let day = AppStoreRefresher.dailyMilliseconds
    static let plus = AppStoreRefreshTests.plus

    @Test("a refund Apple never notified is corrected a day after the last refresh; a purchase refreshed recently is not asked again")
    func missedRefundCorrected() async throws {
        let s = try await AppStoreRefreshTests.setup(expiresIn: 30 * Self.day)
        let t0 = s.h.clock.nowMilliseconds()
        // A second account buys twelve hours later: its daily refresh falls twelve hours after ana's.
        try await AppStoreRefreshTests.advance(s, by: Self.day / 2)
        let (bobToken, bobID) = try await s.h.register("bob@example.com")
        let bought = s.h.clock.nowMilliseconds()
        let bobTransaction = s.store.transaction(original: "2000", product: Self.plus, expires: t0 + 30 * Self.day, account: bobID)
        _ = try await s.h.expect(
            200, .post, "/v1/me/purchases/apple",
            json: FakeAppStore.purchase(bobTransaction, renewal: s.store.renewal(original: "2000")), token: bobToken)
        try await s.apple.set("2000", status: 1, transaction: bobTransaction, renewal: s.store.renewal(original: "2000"))
        // Refunded at Apple with no notification reaching the server.
        try await s.apple.set(
            "1000", status: 5,
            transaction: s.store.transaction(
                original: "1000", product: Self.plus, expires: t0 + 30 * Self.day, account: s.userID, revoked: bought),
            renewal: s.store.renewal(original: "1000", autoRenew: false))

        #expect(await s.refresher.pass(at: t0 + Self.day - 1).isEmpty, "not a day yet")
        #expect(try await s.h.tier(s.token) == "plus")
        try await AppStoreRefreshTests.advance(s, by: t0 + Self.day - s.h.clock.nowMilliseconds())
        #expect(await s.refresher.pass(at: t0 + Self.day) == ["1000": .applied], "bob's purchase is twelve hours younger")
        let shown = try await s.h.entitlement(s.token)
        #expect(shown["tier"] as? String == "free")
        #expect(shown["state"] as? String == "revoked")
        #expect(try await AppStoreRefreshTests.causes(s).last == "refresh")
        #expect(try await s.h.tier(bobToken) == "plus")

        try await AppStoreRefreshTests.advance(s, by: Self.day / 2)
        let bobs = await s.refresher.pass(at: bought + Self.day)
        #expect(bobs == ["2000": .applied], "Apple's data is what bob posted (applied again, nothing changes): \(bobs)")
        #expect(try await s.h.tier(bobToken) == "plus")
        #expect(try await s.apple.received().reads == ["1000", "2000"])

        // A day on: ana's purchase is revoked (not active), bob's was refreshed twelve hours ago.
        try await AppStoreRefreshTests.advance(s, by: Self.day / 2)
        #expect(await s.refresher.pass(at: t0 + 2 * Self.day).isEmpty)
        try await AppStoreRefreshTests.advance(s, by: Self.day / 2)
        #expect(await s.refresher.pass(at: bought + 2 * Self.day) == ["2000": .applied])
        #expect(try await s.h.tier(bobToken) == "plus")
        #expect(try await s.apple.received().reads == ["1000", "2000", "2000"])
        let metrics = Exposition(s.h.app.services.metrics.exposition())
        #expect(metrics[#"chronir_appstore_refreshes_total{outcome="applied"}"#] == 3)
    }

    @Test("one pass refreshes at most batchSize purchases, the longest unrefreshed first; the rest wait for the next pass")
    func bounded() async throws {
        let s = try await AppStoreRefreshTests.setup(expiresIn: 30 * Self.day)
        let t0 = s.h.clock.nowMilliseconds()
        // Purchases written straight into the table, each created a minute after the one before.
        let count = AppStoreRefresher.batchSize + 3
        try await s.h.database.write { [userID = s.userID] db in
            for i in 0..<count {
                try db.run(
                    """
                    INSERT INTO purchases (id, source, store_id, user_id, product_id, tier, environment, expires_ms, state,
                                           signed_ms, created_ms, updated_ms)
                    VALUES (?1, 'app_store', ?2, ?3, ?4, 'plus', 'Sandbox', ?5, 'active', ?6, ?6, ?6)
                    """,
                    [
                        .text("app_store:\(3000 + i)"), .text("\(3000 + i)"), .text(userID), .text(Self.plus),
                        .integer(t0 + 30 * Self.day), .integer(t0 + Int64(i + 1) * 60_000),
                    ])
            }
        }
        let at = t0 + Self.day + Int64(count) * 60_000
        let due = try await s.h.database.read { db in
            try EntitlementStore.appStoreRefreshesDue(
                at: at, since: at - AppStoreRefresher.lookbackMilliseconds, dailyEvery: Self.day, limit: AppStoreRefresher.batchSize,
                on: db)
        }
        #expect(due.map(\.storeID) == ["1000"] + (0..<(AppStoreRefresher.batchSize - 1)).map { "\(3000 + $0)" })
        try await AppStoreRefreshTests.advance(s, by: at - t0)
        let first = await s.refresher.pass(at: at)
        #expect(first.count == AppStoreRefresher.batchSize)
        let second = await s.refresher.pass(at: at)
        #expect(Set(second.keys) == Set((AppStoreRefresher.batchSize - 1..<count).map { "\(3000 + $0)" }))
        #expect(second.values.allSatisfy { $0 == .notFound }, "the fake knows none of them: settled, not retried")
        #expect(await s.refresher.pass(at: at).isEmpty)
        #expect(try await s.apple.received().reads.count == count + 1)
        let metrics = Exposition(s.h.app.services.metrics.exposition())
        #expect(metrics[#"chronir_appstore_refreshes_total{outcome="not_found"}"#] == Double(count + 1))
    }
}
