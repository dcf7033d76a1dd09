import Foundation
import Storage
import Store
import TestSupport
import Testing
import Transport
import Wire

@testable import App

extension FakeAppStoreAPI {
    /// Gives the fake a notification Apple sent at `sent` (Unix ms) and the server never received;
    /// `body` is a notification body (`{"signedPayload": …}`) as `FakeAppStore.notification` makes.
    func hold(_ body: String, sent: Int64) async throws {
        let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        try await fake.post("/control/history", ["signedPayload": object?["signedPayload"] as? String ?? "", "sent": sent])
    }

    /// Sets how many notifications one history page holds.
    func historyPageSize(_ size: Int) async throws { try await fake.post("/control/history-page-size", ["size": size]) }

    /// The Get Notification History requests the fake answered: (startDate, endDate, paginationToken).
    func historyRequests() async throws -> [(start: Int64, end: Int64, token: String?)] {
        let all = try await fake.received()
        return (all["history"] as? [[String: Any]] ?? []).map { item in
            (
                (item["startDate"] as? NSNumber)?.int64Value ?? -1, (item["endDate"] as? NSNumber)?.int64Value ?? -1,
                item["paginationToken"] as? String
            )
        }
    }
}

@Suite("Subscriptions — App Store Get Notification History catch-up, against a fake API on loopback")
struct AppStoreRefreshHistoryTests {
    static let day: Int64 = 86_400_000
    static let hour: Int64 = 3_600_000
    static let plus = AppStoreRefreshTests.plus

    /// Three notifications for ana's `1000` the server never received, sent an hour apart from `t0 + 1h`
    /// (the last `sent3` when given): renewal turned off, a TEST (ignored), a refund.
    static func holdThree(_ s: AppStoreRefreshTests.Setup, t0: Int64, sent3: Int64? = nil) async throws {
        let expires = t0 + 30 * day
        let transaction = s.store.transaction(original: "1000", product: plus, expires: expires, account: s.userID)
        try await s.apple.hold(
            s.store.notification(
                "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", transaction: transaction,
                renewal: s.store.renewal(original: "1000", autoRenew: false)), sent: t0 + hour)
        try await s.apple.hold(s.store.notification("TEST", transaction: nil), sent: t0 + 2 * hour)
        try await s.apple.hold(
            s.store.notification(
                "REFUND",
                transaction: s.store.transaction(original: "1000", product: plus, expires: expires, account: s.userID, revoked: t0 + hour),
                renewal: s.store.renewal(original: "1000", autoRenew: false)), sent: sent3 ?? t0 + 3 * hour)
    }

    @Test("notifications Apple holds are applied by a catch-up through the notification handler, pages followed; a replay changes nothing")
    func catchUp() async throws {
        let s = try await AppStoreRefreshTests.setup(expiresIn: 30 * Self.day)
        let t0 = s.h.clock.nowMilliseconds()
        try await Self.holdThree(s, t0: t0, sent3: t0 + 4 * Self.hour - 5 * 60_000)
        try await s.apple.historyPageSize(2)
        try await AppStoreRefreshTests.advance(s, by: 4 * Self.hour)
        let now = s.h.clock.nowMilliseconds()
        let catchUp = s.refresher.history

        #expect(await catchUp.run(at: now) == .caughtUp(["applied": 2, "ignored": 1]))
        let shown = try await s.h.entitlement(s.token)
        #expect(shown["tier"] as? String == "free")
        #expect(shown["state"] as? String == "revoked")
        #expect(try await AppStoreRefreshTests.causes(s).last == "notification")
        let requests = try await s.apple.historyRequests()
        let start = now - AppStoreHistoryCatchUp.firstWindowMilliseconds - AppStoreHistoryCatchUp.overlapMilliseconds
        #expect(requests.map(\.start) == [start, start])
        #expect(requests.map(\.end) == [now, now])
        #expect(requests.map(\.token) == [nil, "page-2"], "the second page asked for with the first's paginationToken")
        let cursor = try await s.h.database.read { db in try EntitlementStore.appStoreHistoryCursor(on: db) }
        #expect(cursor == .init(caughtUpMilliseconds: now, pending: nil))

        // Caught up: not again within the interval; then from 10 minutes before the last end, where the
        // refund (sent 5 minutes before it) is read again — a duplicate that changes nothing.
        #expect(await catchUp.run(at: now + AppStoreHistoryCatchUp.interval - 1) == .notDue)
        let changes = try await AppStoreRefreshTests.causes(s)
        try await AppStoreRefreshTests.advance(s, by: AppStoreHistoryCatchUp.interval)
        let later = now + AppStoreHistoryCatchUp.interval
        #expect(await catchUp.run(at: later) == .caughtUp(["duplicate": 1]))
        #expect(try await AppStoreRefreshTests.causes(s) == changes)
        #expect(try await s.apple.historyRequests().last?.start == now - AppStoreHistoryCatchUp.overlapMilliseconds)
        #expect(try await s.h.entitlement(s.token)["state"] as? String == "revoked")
        let metrics = Exposition(s.h.app.services.metrics.exposition())
        #expect(metrics[#"chronir_appstore_history_notifications_total{outcome="applied"}"#] == 2)
        #expect(metrics[#"chronir_appstore_history_notifications_total{outcome="ignored"}"#] == 1)
        #expect(metrics[#"chronir_appstore_history_notifications_total{outcome="duplicate"}"#] == nil, "a replay is not counted")
    }

    @Test("the API down: nothing changes and the catch-up is retried later; cut after a page, it goes on from that page's token")
    func apiDown() async throws {
        let s = try await AppStoreRefreshTests.setup(expiresIn: 30 * Self.day)
        let t0 = s.h.clock.nowMilliseconds()
        try await Self.holdThree(s, t0: t0)
        try await s.apple.historyPageSize(2)
        try await AppStoreRefreshTests.advance(s, by: 4 * Self.hour)
        let now = s.h.clock.nowMilliseconds()
        let catchUp = s.refresher.history
        let before = try await s.h.expect(200, .get, "/v1/me/entitlement", token: s.token).text

        try await s.apple.fake.script("history", [["status": 503], ["status": 0], ["status": 503]])
        #expect(await catchUp.run(at: now) == .unavailable([:]))
        #expect(try await s.h.expect(200, .get, "/v1/me/entitlement", token: s.token).text == before)
        let empty = try await s.h.database.read { db in try EntitlementStore.appStoreHistoryCursor(on: db) }
        #expect(empty == .init(caughtUpMilliseconds: nil, pending: nil))
        #expect(await catchUp.run(at: now + AppStoreHistoryCatchUp.retryMilliseconds - 1) == .notDue)

        // Retried: the first page is applied whole, the second fails — the cursor holds the second's token.
        let retry = now + AppStoreHistoryCatchUp.retryMilliseconds
        try await AppStoreRefreshTests.advance(s, by: AppStoreHistoryCatchUp.retryMilliseconds)
        #expect(await catchUp.run(at: retry) == .unavailable(["applied": 1, "ignored": 1]))
        let shown = try await s.h.entitlement(s.token)
        #expect(shown["tier"] as? String == "plus", "the refund on the second page is not applied")
        #expect(shown["auto_renewing"] as? Bool == false, "the first page's renewal change is")
        // The window is the retry's (nothing was read of the first attempt's).
        let start = retry - AppStoreHistoryCatchUp.firstWindowMilliseconds - AppStoreHistoryCatchUp.overlapMilliseconds
        #expect(
            try await s.h.database.read { db in try EntitlementStore.appStoreHistoryCursor(on: db) }
                == .init(caughtUpMilliseconds: nil, pending: (start, retry, "page-2")))

        let again = retry + AppStoreHistoryCatchUp.retryMilliseconds
        try await AppStoreRefreshTests.advance(s, by: AppStoreHistoryCatchUp.retryMilliseconds)
        #expect(await catchUp.run(at: again) == .caughtUp(["applied": 1]))
        #expect(try await s.h.entitlement(s.token)["state"] as? String == "revoked")
        let requests = try await s.apple.historyRequests()
        #expect(requests.map(\.token) == [nil, nil, "page-2", "page-2"])
        #expect(requests.dropFirst().allSatisfy { $0.start == start && $0.end == retry }, "one window from the retry on")
        let cursor = try await s.h.database.read { db in try EntitlementStore.appStoreHistoryCursor(on: db) }
        #expect(cursor == .init(caughtUpMilliseconds: retry, pending: nil))
    }

    @Test("at start-up: the timer's first pass catches up")
    func startUp() async throws {
        let s = try await AppStoreRefreshTests.setup(expiresIn: 30 * Self.day)
        let t0 = s.h.clock.nowMilliseconds()
        try await Self.holdThree(s, t0: t0)
        try await AppStoreRefreshTests.advance(s, by: 4 * Self.hour)
        s.refresher.start(ticks: s.h.clock, every: .seconds(60))
        try await s.apple.fake.setClock(s.h.clock.nowMilliseconds() + 60_000)
        try await blocking { s.h.clock.advance(by: 60_000) }
        #expect(
            await eventuallyAsync { (try? await s.h.entitlement(s.token)["state"] as? String) == "revoked" },
            "the first tick read the history and applied the refund")
        try await blocking { s.refresher.stop() }
        #expect(try await s.apple.historyRequests().count == 1)
    }
}
