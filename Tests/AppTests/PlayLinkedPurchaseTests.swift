import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// Google Play's `linkedPurchaseToken` (docs/subscriptions.md#google-play): an upgrade gives a new purchase
/// token that replaces the old one — the old purchase's entitlement ends, the new one is the same account's.
@Suite("Subscriptions — a Play upgrade's linkedPurchaseToken supersedes the old purchase")
struct PlayLinkedPurchaseTests {
    static let day: Int64 = 86_400_000

    static func purchases(_ h: AppHarness, _ userID: String?) async throws -> [String: EntitlementStore.Purchase] {
        let all = try await h.database.read { db in try EntitlementStore.purchases(userID: userID, on: db) }
        return Dictionary(all.map { ($0.storeID, $0) }, uniquingKeysWith: { first, _ in first })
    }

    @Test("an RTDN for the upgrade's token: bound to the old token's account, premium without a dip, the old purchase ended")
    func upgradeByNotification() async throws {
        let (h, play) = try await PlayPurchaseTests.harness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let now = h.clock.nowMilliseconds()
        try await play.set("tok-plus-1", "ACTIVE", expires: now + 20 * Self.day, account: anaID)
        _ = try await h.expect(200, .post, "/v1/me/purchases/google", json: PlayPurchaseTests.purchase("tok-plus-1"), token: ana)
        #expect(try await h.tier(ana) == "plus")
        // The upgrade: Google replaces the token; the new one carries no account id here, only the link.
        try await play.set("tok-plus-1", "EXPIRED", expires: now + 20 * Self.day, account: anaID)
        try await play.set(
            "tok-premium-2", "ACTIVE", product: "chronir_premium_monthly", expires: now + 30 * Self.day, account: nil, linked: "tok-plus-1")
        let push = try FakePlay.subscriptionPush("m-upgrade", type: 4, token: "tok-premium-2")
        _ = try await h.expect(200, .post, PlayPurchaseTests.rtdnPath, json: push)
        #expect(try await h.tier(ana) == "premium")
        let rows = try await Self.purchases(h, anaID)
        #expect(rows["tok-premium-2"]?.state == "active")
        #expect(rows["tok-plus-1"]?.state == "expired")
        #expect(rows["tok-plus-1"]?.autoRenewing == false)
        let changes = try await h.database.read { db in
            try EntitlementStore.tierChanges(userID: anaID, on: db).map { "\($0.from)→\($0.to)" }
        }
        #expect(changes.suffix(2) == ["free→plus", "plus→premium"], "no dip to free between the two")
    }

    @Test("the app posts the upgrade's token: the old purchase ends; another account posting it is refused 409 CA071")
    func upgradeByPost() async throws {
        let (h, play) = try await PlayPurchaseTests.harness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let (bob, _) = try await h.register("bob@example.com")
        let now = h.clock.nowMilliseconds()
        try await play.set("tok-plus-1", "ACTIVE", expires: now + 20 * Self.day, account: anaID)
        _ = try await h.expect(200, .post, "/v1/me/purchases/google", json: PlayPurchaseTests.purchase("tok-plus-1"), token: ana)
        try await play.set(
            "tok-premium-2", "ACTIVE", product: "chronir_premium_monthly", expires: now + 30 * Self.day, account: nil, linked: "tok-plus-1")
        let refused = try await h.expect(
            409, .post, "/v1/me/purchases/google", json: PlayPurchaseTests.purchase("tok-premium-2", "chronir_premium_monthly"), token: bob)
        #expect(refused.errorCode == "CA071")
        #expect(try await h.tier(bob) == "free")
        #expect(try await Self.purchases(h, anaID)["tok-plus-1"]?.state == "active", "the refusal changed nothing")
        let upgraded = try await h.expect(
            200, .post, "/v1/me/purchases/google", json: PlayPurchaseTests.purchase("tok-premium-2", "chronir_premium_monthly"), token: ana)
        #expect(upgraded.json["tier"] as? String == "premium")
        let rows = try await Self.purchases(h, anaID)
        #expect(rows["tok-plus-1"]?.state == "expired")
        #expect(rows["tok-premium-2"]?.state == "active")
    }
}

/// A Play acknowledgement that failed is retried later (docs/subscriptions.md#google-play), not lost.
@Suite("Subscriptions — a failed Play acknowledgement is retried")
struct PlayAcknowledgementRetryTests {
    @Test("the acknowledgement fails (503): the purchase still counts; retried after the delay, then done; nothing more after")
    func retried() async throws {
        let (h, play) = try await PlayPurchaseTests.harness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let now = h.clock.nowMilliseconds()
        try await play.set("tok-ack-1", "ACTIVE", expires: now + 30 * 86_400_000, account: anaID)
        try await play.fake.script("tok-ack-1", [["status": 503]])
        let posted = try await h.expect(200, .post, "/v1/me/purchases/google", json: PlayPurchaseTests.purchase("tok-ack-1"), token: ana)
        #expect(posted.json["tier"] as? String == "plus")
        #expect(try await play.received("acknowledged").isEmpty)
        let retry = PlayAcknowledgements(play: play.api, services: h.app.services)
        #expect(await retry.pass(at: now + PlayAcknowledgements.retryMilliseconds - 1).isEmpty, "not due yet")
        #expect(try await play.received("acknowledged").isEmpty)
        #expect(await retry.pass(at: now + PlayAcknowledgements.retryMilliseconds).isEmpty, "acknowledged: nothing owed")
        #expect(try await play.received("acknowledged") as? [String] == ["tok-ack-1"])
        #expect(await retry.pass(at: now + 10 * PlayAcknowledgements.retryMilliseconds).isEmpty)
        #expect(try await play.received("acknowledged").count == 1, "not acknowledged twice")
        let metrics = Exposition(h.app.services.metrics.exposition())
        #expect(metrics[#"chronir_play_acknowledgement_retries_total{outcome="done"}"#] == 1)
        #expect(metrics[#"chronir_play_acknowledgement_retries_total{outcome="failed"}"#] == nil)
    }
}
