import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing
import Transport
import Wire

@testable import App
@testable import Identity

/// A fake App Store for one harness: a minted signing chain, and the transactions, renewal infos and
/// notifications Apple would sign, with increasing `signedDate`s (docs/subscriptions.md).
final class FakeAppStore: @unchecked Sendable {
    let chain: AppStoreTestChain
    private var sequence: Int64 = 0
    static let bundleID = "com.chronir.app"

    init() throws { chain = try AppStoreTestChain() }

    /// The verifier the server uses: the minted root pinned, Sandbox, app id 1234.
    var verifier: AppStoreVerifier {
        AppStoreVerifier(roots: [chain.root], bundleID: Self.bundleID, environment: .sandbox, appAppleID: 1234)
    }

    /// A later signedDate each call (still inside the certificates' validity).
    func nextSignedDate() -> Int64 {
        sequence += 1
        return chain.signedDate + sequence * 1000
    }

    func transaction(
        original: String, product: String, expires: Int64, account: String?, transactionID: String? = nil, revoked: Int64? = nil,
        extra: [String: Any] = [:]
    ) -> String {
        var claims: [String: Any] = [
            "transactionId": transactionID ?? "\(original)-\(sequence + 1)", "originalTransactionId": original, "bundleId": Self.bundleID,
            "productId": product, "environment": "Sandbox", "signedDate": nextSignedDate(), "purchaseDate": expires - 30 * 86_400_000,
            "expiresDate": expires, "type": "Auto-Renewable Subscription",
        ]
        if let account { claims["appAccountToken"] = account.uppercased() }
        if let revoked { claims["revocationDate"] = revoked }
        for (key, value) in extra { claims[key] = value }
        return chain.sign(claims)
    }

    func renewal(original: String, autoRenew: Bool = true, retrying: Bool = false, graceExpires: Int64? = nil) -> String {
        var claims: [String: Any] = [
            "originalTransactionId": original, "environment": "Sandbox", "signedDate": nextSignedDate(),
            "autoRenewStatus": autoRenew ? 1 : 0, "isInBillingRetryPeriod": retrying,
        ]
        if let graceExpires { claims["gracePeriodExpiresDate"] = graceExpires }
        return chain.sign(claims)
    }

    /// A notification body (`{"signedPayload": …}`) of `type` carrying the transaction and renewal info.
    func notification(
        _ type: String, subtype: String? = nil, uuid: String = UUID().uuidString.lowercased(), transaction: String?,
        renewal: String? = nil, bundleID: String = bundleID
    ) -> String {
        var data: [String: Any] = ["bundleId": bundleID, "appAppleId": 1234, "environment": "Sandbox"]
        if let transaction { data["signedTransactionInfo"] = transaction }
        if let renewal { data["signedRenewalInfo"] = renewal }
        var claims: [String: Any] = [
            "notificationType": type, "notificationUUID": uuid, "signedDate": nextSignedDate(), "version": "2.0", "data": data,
        ]
        if let subtype { claims["subtype"] = subtype }
        return #"{"signedPayload":"\#(chain.sign(claims))"}"#
    }

    /// A purchase body (`POST /v1/me/purchases/apple`).
    static func purchase(_ transaction: String, renewal: String? = nil) -> String {
        if let renewal { return #"{"signed_transaction":"\#(transaction)","signed_renewal_info":"\#(renewal)"}"# }
        return #"{"signed_transaction":"\#(transaction)"}"#
    }
}

@Suite("Subscriptions — verified App Store purchases and notifications drive the tier")
struct SubscriptionTests {
    static let day: Int64 = 86_400_000

    static func harness(transfer: SubscriptionConfiguration.PurchaseTransfer = .refuse) throws -> (AppHarness, FakeAppStore) {
        let store = try FakeAppStore()
        let h = try AppHarness { config in
            config.subscriptions.appStore = store.verifier
            config.subscriptions.purchaseTransfer = transfer
        }
        return (h, store)
    }

    @Test("done when: free → verified plus → premium creates a group → refund notification → free, group creation 403 CA013")
    func timeline() async throws {
        let (h, store) = try Self.harness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let none = try await h.entitlement(ana)
        #expect(none["tier"] as? String == "free")
        #expect(none["state"] as? String == "none")
        #expect(none["source"] is NSNull)
        let refusedGroup = try await h.expect(403, .post, "/v1/groups", json: #"{"name":"Home"}"#, token: ana)
        #expect(refusedGroup.errorCode == "CA002", "never subscribed: TIER_REQUIRED, not SUBSCRIPTION_EXPIRED")

        let now = h.clock.nowMilliseconds()
        let plusBody = FakeAppStore.purchase(
            store.transaction(original: "1000", product: "com.chronir.plus.monthly", expires: now + 30 * Self.day, account: anaID),
            renewal: store.renewal(original: "1000"))
        let plus = try await h.expect(200, .post, "/v1/me/purchases/apple", json: plusBody, token: ana)
        // The app posting the same transaction again (every launch, a restore) changes and tells nothing.
        #expect(try await h.expect(200, .post, "/v1/me/purchases/apple", json: plusBody, token: ana).text == plus.text)
        #expect(plus.json["tier"] as? String == "plus")
        #expect(plus.json["state"] as? String == "active")
        #expect(plus.json["source"] as? String == "app_store")
        #expect(plus.json["platform"] as? String == "ios")
        #expect(plus.json["product_id"] as? String == "com.chronir.plus.monthly")
        #expect(plus.json["auto_renewing"] as? Bool == true)
        #expect(plus.json["expires_at"] as? String == Timestamp(milliseconds: now + 30 * Self.day).description)
        #expect(try await h.tier(ana) == "plus")
        _ = try await h.expect(403, .post, "/v1/groups", json: #"{"name":"Home"}"#, token: ana)

        // An upgrade within the subscription group keeps the original transaction id.
        let premium = try await h.expect(
            200, .post, "/v1/me/purchases/apple",
            json: FakeAppStore.purchase(
                store.transaction(original: "1000", product: "com.chronir.premium.monthly", expires: now + 30 * Self.day, account: anaID)),
            token: ana)
        #expect(premium.json["tier"] as? String == "premium")
        _ = try await h.expect(201, .post, "/v1/groups", json: #"{"name":"Home"}"#, token: ana)

        // Apple refunds it.
        h.clock.advance(by: Self.day)
        let refundBody = store.notification(
            "REFUND", uuid: "a1b2c3d4-0000-4000-8000-000000000001",
            transaction: store.transaction(
                original: "1000", product: "com.chronir.premium.monthly", expires: now + 30 * Self.day, account: anaID,
                revoked: h.clock.nowMilliseconds()))
        _ = try await h.expect(200, .post, "/v1/store/apple/notifications", json: refundBody)
        #expect(try await h.tier(ana) == "free")
        let revoked = try await h.entitlement(ana)
        #expect(revoked["state"] as? String == "revoked")
        #expect(revoked["tier"] as? String == "free")
        let lapsed = try await h.expect(403, .post, "/v1/groups", json: #"{"name":"Work"}"#, token: ana)
        #expect(lapsed.errorCode == "CA013")
        #expect(lapsed.errorName == "SUBSCRIPTION_EXPIRED")
        let sync = try await h.expect(
            403, .put, "/v1/me/alarms/\(PersonalAlarmTests.alarmA)", json: PersonalAlarmTests.body("Rent"), token: ana)
        #expect(sync.errorCode == "CA013")
        // Reads still work.
        _ = try await h.expect(200, .get, "/v1/me/alarms", token: ana)

        // The same notification again (Apple retries): answered 200, nothing changes, recorded once.
        _ = try await h.expect(200, .post, "/v1/store/apple/notifications", json: refundBody)
        let (events, changes, pushes, audit) = try await h.database.read { db in
            (
                try db.queryOne("SELECT COUNT(*) AS n FROM store_events")?.int("n"),
                try db.queryOne(
                    "SELECT COUNT(*) AS n FROM change_log WHERE kind = 'entitlement' AND topic = ?1", [.text("user:\(anaID)")]
                )?.int("n"),
                try NotificationOutbox.entries(on: db).filter { $0.type == .entitlementChanged && $0.recipients == [anaID] }.count,
                try EntitlementStore.tierChanges(userID: anaID, on: db).map { "\($0.from)→\($0.to) \($0.cause)" }
            )
        }
        #expect(events == 1)
        #expect(changes == 3, "purchase, upgrade, refund: one entitlement change each on the user's topic")
        #expect(pushes == 3)
        #expect(audit == ["free→plus purchase", "plus→premium purchase", "premium→free notification"])
    }

    @Test("every refusal leaves the tier unchanged: bad data 422 CA070, other account 403 CA072 / 409 CA071, product 422 CA073")
    func refusals() async throws {
        let (h, store) = try Self.harness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let (bo, boID) = try await h.register("bo@example.com")
        let expires = h.clock.nowMilliseconds() + 30 * Self.day
        func refused(_ body: String, _ status: Int, _ code: String, token: String = ana) async throws {
            let reply = try await h.expect(status, .post, "/v1/me/purchases/apple", json: body, token: token)
            #expect(reply.errorCode == code, "\(reply.text)")
        }
        let good = store.transaction(original: "2000", product: "com.chronir.plus.monthly", expires: expires, account: anaID)
        // Tampered, signed by a stranger, wrong bundle, wrong environment, alg none.
        let parts = good.split(separator: ".").map(String.init)
        try await refused(FakeAppStore.purchase(parts[0] + "." + parts[1] + "x." + parts[2]), 422, "CA070")
        let stranger = try AppStoreTestChain(rootName: "Stranger")
        try await refused(
            FakeAppStore.purchase(
                stranger.sign([
                    "transactionId": "1", "originalTransactionId": "2000", "bundleId": FakeAppStore.bundleID,
                    "productId": "com.chronir.plus.monthly", "environment": "Sandbox", "signedDate": stranger.signedDate,
                ])), 422, "CA070")
        try await refused(
            FakeAppStore.purchase(
                store.transaction(
                    original: "2000", product: "com.chronir.plus.monthly", expires: expires, account: anaID,
                    extra: [
                        "bundleId": "com.other"
                    ])), 422, "CA070")
        try await refused(
            FakeAppStore.purchase(
                store.transaction(
                    original: "2000", product: "com.chronir.plus.monthly", expires: expires, account: anaID,
                    extra: [
                        "environment": "Production"
                    ])), 422, "CA070")
        // Bo posts Ana's transaction: its appAccountToken names Ana.
        try await refused(FakeAppStore.purchase(good), 403, "CA072", token: bo)
        // A product this server does not sell.
        try await refused(
            FakeAppStore.purchase(store.transaction(original: "2001", product: "com.chronir.gold", expires: expires, account: anaID)),
            422, "CA073")
        #expect(try await h.tier(ana) == "free")
        #expect(try await h.tier(bo) == "free")

        // Ana's purchase is hers; the same original transaction without a token, posted by Bo: 409 CA071.
        _ = try await h.expect(200, .post, "/v1/me/purchases/apple", json: FakeAppStore.purchase(good), token: ana)
        try await refused(
            FakeAppStore.purchase(store.transaction(original: "2000", product: "com.chronir.plus.monthly", expires: expires, account: nil)),
            409, "CA071", token: bo)
        #expect(try await h.tier(ana) == "plus")
        #expect(try await h.tier(bo) == "free")
        #expect(boID != anaID)

        // A notification that fails verification is 422 and changes nothing.
        let forged = store.notification(
            "REFUND",
            transaction: store.transaction(original: "2000", product: "com.chronir.plus.monthly", expires: expires, account: anaID),
            bundleID: "com.other")
        let reply = try await h.expect(422, .post, "/v1/store/apple/notifications", json: forged)
        #expect(reply.errorCode == "CA070")
        #expect(try await h.tier(ana) == "plus")
    }

    @Test("--purchase-transfer transfer moves a purchase to the account that posts it; the first account loses the tier")
    func transfer() async throws {
        let (h, store) = try Self.harness(transfer: .transfer)
        let (ana, _) = try await h.register("ana@example.com")
        let (bo, _) = try await h.register("bo@example.com")
        let expires = h.clock.nowMilliseconds() + 30 * Self.day
        let body = FakeAppStore.purchase(
            store.transaction(original: "3000", product: "com.chronir.plus.annual", expires: expires, account: nil))
        _ = try await h.expect(200, .post, "/v1/me/purchases/apple", json: body, token: ana)
        #expect(try await h.tier(ana) == "plus")
        _ = try await h.expect(200, .post, "/v1/me/purchases/apple", json: body, token: bo)
        #expect(try await h.tier(bo) == "plus")
        #expect(try await h.tier(ana) == "free")
    }

    @Test("a lapse: billing retry with grace keeps access, grace over → free (CA013), resubscribe → plus; by the injected clock")
    func lapseGraceExpiryResubscribe() async throws {
        let (h, store) = try Self.harness()
        let registered = try await h.register("ana@example.com")
        var ana = registered.token
        let anaID = registered.id
        let start = h.clock.nowMilliseconds()
        let expires = start + 30 * Self.day
        _ = try await h.expect(
            200, .post, "/v1/me/purchases/apple",
            json: FakeAppStore.purchase(
                store.transaction(original: "4000", product: "com.chronir.plus.monthly", expires: expires, account: anaID)),
            token: ana)
        func sweep() throws { _ = try Sweeper.Job.entitlementExpiry.run(h.database, h.clock.nowMilliseconds()) }
        // Sessions outlive none of these jumps of the clock: sign in again after each.
        func signIn() async throws { ana = try #require(await h.login("ana@example.com").json["token"] as? String) }

        // The renewal fails; Apple grants a 16-day grace period.
        let grace = expires + 16 * Self.day
        h.clock.set(expires)
        _ = try await h.expect(
            200, .post, "/v1/store/apple/notifications",
            json: store.notification(
                "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD",
                transaction: store.transaction(original: "4000", product: "com.chronir.plus.monthly", expires: expires, account: anaID),
                renewal: store.renewal(original: "4000", retrying: true, graceExpires: grace)))
        try sweep()
        try await signIn()
        var now = try await h.entitlement(ana)
        #expect(now["state"] as? String == "grace")
        #expect(now["tier"] as? String == "plus")
        #expect(now["grace_expires_at"] as? String == Timestamp(milliseconds: grace).description)
        _ = try await h.expect(201, .put, "/v1/me/alarms/\(PersonalAlarmTests.alarmA)", json: PersonalAlarmTests.body("Rent"), token: ana)

        // Grace runs out with no notification at all: the sweep downgrades by Apple's date.
        h.clock.set(grace - 1)
        try sweep()
        try await signIn()
        #expect(try await h.tier(ana) == "plus")
        h.clock.set(grace)
        try sweep()
        #expect(try await h.tier(ana) == "free")
        now = try await h.entitlement(ana)
        #expect(now["state"] as? String == "billing_retry")
        let write = try await h.expect(
            403, .put, "/v1/me/alarms/\(PersonalAlarmTests.alarmA)", json: PersonalAlarmTests.body("Rent 2"), token: ana)
        #expect(write.errorCode == "CA013")
        _ = try await h.expect(200, .get, "/v1/me/alarms/\(PersonalAlarmTests.alarmA)", token: ana)

        // Apple recovers the payment: DID_RENEW with a new period.
        h.clock.advance(by: 2 * Self.day)
        let renewed = h.clock.nowMilliseconds() + 30 * Self.day
        _ = try await h.expect(
            200, .post, "/v1/store/apple/notifications",
            json: store.notification(
                "DID_RENEW",
                transaction: store.transaction(original: "4000", product: "com.chronir.plus.monthly", expires: renewed, account: anaID),
                renewal: store.renewal(original: "4000")))
        #expect(try await h.tier(ana) == "plus")
        #expect(try await h.entitlement(ana)["state"] as? String == "active")
        let causes = try await h.database.read { db in try EntitlementStore.tierChanges(userID: anaID, on: db).map(\.cause) }
        #expect(causes == ["purchase", "expiry", "notification"])
    }

    @Test("an operator grant with an expiry and a purchase never fight: the higher wins, the grant's end falls back to the purchase")
    func operatorGrant() async throws {
        let (h, store) = try Self.harness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let now = h.clock.nowMilliseconds()
        _ = try await h.expect(
            200, .post, "/v1/me/purchases/apple",
            json: FakeAppStore.purchase(
                store.transaction(original: "5000", product: "com.chronir.plus.annual", expires: now + 365 * Self.day, account: anaID)),
            token: ana)
        try await h.database.write { db in
            try EntitlementStore.setOperatorGrant(
                userID: anaID, tier: .premium, until: now + Self.day, reason: "trial", actor: .admin, at: now, on: db)
        }
        var shown = try await h.entitlement(ana)
        #expect(shown["tier"] as? String == "premium")
        #expect(shown["source"] as? String == "operator")
        h.clock.advance(by: Self.day)
        _ = try Sweeper.Job.entitlementExpiry.run(h.database, h.clock.nowMilliseconds())
        shown = try await h.entitlement(ana)
        #expect(shown["tier"] as? String == "plus")
        #expect(shown["source"] as? String == "app_store")
        // Setting free removes the grant only; the purchase stays.
        try await h.database.write { db in
            try EntitlementStore.setOperatorGrant(
                userID: anaID, tier: .free, until: nil, reason: nil, actor: .admin, at: h.clock.nowMilliseconds(), on: db)
        }
        #expect(try await h.tier(ana) == "plus")
    }

    @Test("premium lapses: the owner's group takes no new members or shared alarms (CA013), members keep theirs; renewal undoes it")
    func ownedGroupAfterDowngrade() async throws {
        let (h, store) = try Self.harness()
        let registered = try await h.register("ana@example.com")
        var ana = registered.token
        let anaID = registered.id
        let (bo, boID) = try await h.register("bo@example.com")
        let (cy, _) = try await h.register("cy@example.com")
        // A short period: the invite code (valid for days) outlives it.
        let expires = h.clock.nowMilliseconds() + Self.day
        _ = try await h.expect(
            200, .post, "/v1/me/purchases/apple",
            json: FakeAppStore.purchase(
                store.transaction(original: "6000", product: "com.chronir.premium.annual", expires: expires, account: anaID)),
            token: ana)
        let groupID = try await h.createGroup(token: ana)
        let code = try await h.inviteCode(groupID, token: ana)
        #expect(await h.join(code, token: bo).status == 200)
        let alarm = #"{"title":"Rent",\#(SharedAlarmFixture.dailyTen),"completion_rule":"any","assigned_to_uids":[]}"#
        _ = try await h.expect(201, .post, "/v1/groups/\(groupID)/alarms", json: alarm, token: ana)

        // The period ends with no renewal: the sweep takes premium away.
        h.clock.set(expires)
        _ = try Sweeper.Job.entitlementExpiry.run(h.database, h.clock.nowMilliseconds())
        ana = try #require(await h.login("ana@example.com").json["token"] as? String)
        let boAgain = try #require(await h.login("bo@example.com").json["token"] as? String)
        let cyAgain = try #require(await h.login("cy@example.com").json["token"] as? String)
        #expect(try await h.tier(ana) == "free")
        let joined = await h.join(code, token: cyAgain)
        #expect(joined.status == 403)
        #expect(joined.errorCode == "CA013")
        let created = try await h.expect(403, .post, "/v1/groups/\(groupID)/alarms", json: alarm, token: ana)
        #expect(created.errorCode == "CA013")
        // Nothing is deleted: the group, its member and its alarm are all still there.
        let group = try await h.expect(200, .get, "/v1/groups/\(groupID)", token: boAgain)
        #expect((group.json["group"] as? [String: Any])?["member_count"] as? Int == 2)
        let alarms = try await h.expect(200, .get, "/v1/groups/\(groupID)/alarms", token: boAgain)
        #expect((alarms.json["alarms"] as? [Any])?.count == 1)

        // Apple renews it late: everything works again.
        _ = try await h.expect(
            200, .post, "/v1/store/apple/notifications",
            json: store.notification(
                "DID_RENEW",
                transaction: store.transaction(
                    original: "6000", product: "com.chronir.premium.annual", expires: expires + 365 * Self.day, account: anaID),
                renewal: store.renewal(original: "6000")))
        #expect(await h.join(code, token: cyAgain).status == 200)
        _ = try await h.expect(201, .post, "/v1/groups/\(groupID)/alarms", json: alarm, token: ana)
        #expect(cy != cyAgain)

        // Bo (a member; Ana is the owner and is told by her own push) was told both times, by push.
        let told = try await h.database.read { db in
            try NotificationOutbox.entries(on: db).filter { $0.type == .groupOwnerSubscription }.map {
                "\($0.recipients) \($0.content.data["state"] ?? "-") \($0.groupID ?? "-")"
            }
        }
        #expect(told == ["[\"\(boID)\"] lapsed \(groupID)", "[\"\(boID)\"] renewed \(groupID)"])
        // And every member's socket, on the group topic: paused, then accepting again.
        let published = try await h.database.read { db in
            try db.query(
                "SELECT event, entity_id, document FROM change_log WHERE kind = 'group_owner_subscription' AND topic = ?1 ORDER BY seq",
                [.text("group:\(groupID)")]
            ).map { row in
                let document = try JSONSerialization.jsonObject(with: Data((row.string("document") ?? "").utf8)) as? [String: Any]
                let accepts = (document?["accepts_new_members"] as? Bool).map { "\($0)" } ?? "-"
                return "\(row.string("event") ?? "") \(document?["state"] ?? "-") \(accepts)"
            }
        }
        #expect(
            published == [
                "group_owner_subscription_changed lapsed false", "group_owner_subscription_changed active true",
            ])
    }

    @Test("a store notification reaches the user's open socket at once: the entitlement change, then the user's new tier")
    func liveOverRealtime() async throws {
        let (h, store) = try Self.harness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let (server, port) = try RealtimeTests().serve(h)
        defer { server.shutdown() }
        let feed = try await RealtimeTests.subscribed(port: port, token: ana, topic: "user")
        defer { feed.close() }
        let expires = h.clock.nowMilliseconds() + 30 * Self.day
        // Apple tells the server first (SUBSCRIBED with the app's appAccountToken): the app has not posted anything.
        _ = try await h.expect(
            200, .post, "/v1/store/apple/notifications",
            json: store.notification(
                "SUBSCRIBED", subtype: "INITIAL_BUY",
                transaction: store.transaction(original: "7000", product: "com.chronir.plus.monthly", expires: expires, account: anaID),
                renewal: store.renewal(original: "7000")))
        // Tier and state of each document kind seen, as text (what crosses the thread boundary).
        let seen = try await blocking { () -> [String: String] in
            var seen: [String: String] = [:]
            while seen["entitlement"] == nil || seen["user"] == nil {
                let message = try feed.next(RealtimeTests.type("change", "user"))
                for change in message["changes"] as? [[String: Any]] ?? [] {
                    guard let kind = change["kind"] as? String, let doc = change["doc"] as? [String: Any] else { continue }
                    seen[kind] = [doc["tier"], doc["state"], doc["source"]].map { ($0 as? String) ?? "-" }.joined(separator: " ")
                }
            }
            return seen
        }
        #expect(seen["entitlement"] == "plus active app_store")
        #expect(seen["user"] == "plus - -")
    }

    @Test("restore claims every transaction at once (all or none); deleting the account unbinds its purchases for a new claim")
    func restoreAndAccountDeletion() async throws {
        let (h, store) = try Self.harness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let (bo, boID) = try await h.register("bo@example.com")
        let expires = h.clock.nowMilliseconds() + 30 * Self.day
        let plus = FakeAppStore.purchase(
            store.transaction(original: "8000", product: "com.chronir.plus.annual", expires: expires, account: nil))
        let premium = FakeAppStore.purchase(
            store.transaction(original: "8001", product: "com.chronir.premium.annual", expires: expires, account: nil))
        let unknown = FakeAppStore.purchase(
            store.transaction(original: "8002", product: "com.chronir.gold", expires: expires, account: nil))
        // One bad transaction refuses the whole restore.
        let refused = try await h.expect(
            422, .post, "/v1/me/purchases/restore", json: #"{"apple":[\#(plus),\#(unknown)]}"#, token: ana)
        #expect(refused.errorCode == "CA073")
        #expect(try await h.tier(ana) == "free")
        let restored = try await h.expect(200, .post, "/v1/me/purchases/restore", json: #"{"apple":[\#(plus),\#(premium)]}"#, token: ana)
        #expect(restored.json["tier"] as? String == "premium")
        let tooMany =
            "{\"apple\":[" + Array(repeating: plus, count: SubscriptionRoutes.maxRestoreTransactions + 1).joined(separator: ",") + "]}"
        #expect(try await h.expect(422, .post, "/v1/me/purchases/restore", json: tooMany, token: ana).errorField == "apple")

        // Ana deletes her account: the purchases are unbound (the store subscription runs on, and the
        // answer names both, with the App Store's management page), Bo may claim them.
        let deleted = try await h.expect(200, .delete, "/v1/me", token: ana)
        let renewing = try #require(deleted.json["store_subscriptions"] as? [[String: Any]])
        #expect(renewing.compactMap { $0["product_id"] as? String } == ["com.chronir.plus.annual", "com.chronir.premium.annual"])
        #expect(renewing.allSatisfy { $0["manage_url"] as? String == "https://apps.apple.com/account/subscriptions" })
        let owners = try await h.database.read { db in try EntitlementStore.purchases(userID: nil, on: db).map { $0.userID ?? "-" } }
        #expect(owners == ["-", "-"])
        _ = try await h.expect(200, .post, "/v1/me/purchases/restore", json: #"{"apple":[\#(premium)]}"#, token: bo)
        #expect(try await h.tier(bo) == "premium")
        #expect(anaID != boID)
    }

    @Test("notification types: renewal status, expired, grace expired, revoke, stale data, an unknown type stored and answered 200")
    func notificationTypes() async throws {
        let (h, store) = try Self.harness()
        // The store's signedDates and the server's clock agree, as they do in production.
        h.clock.set(store.chain.signedDate)
        var ana = try await h.register("ana@example.com").token
        let anaID = try #require(try await h.expect(200, .get, "/v1/me", token: ana).json["id"] as? String)
        let start = h.clock.nowMilliseconds()
        func transaction(_ original: String, expires: Int64, revoked: Int64? = nil) -> String {
            store.transaction(original: original, product: "com.chronir.plus.monthly", expires: expires, account: anaID, revoked: revoked)
        }
        func notify(_ type: String, _ transaction: String?, subtype: String? = nil, renewal: String? = nil) async throws {
            _ = try await h.expect(
                200, .post, "/v1/store/apple/notifications",
                json: store.notification(type, subtype: subtype, transaction: transaction, renewal: renewal))
        }
        func advance(to instant: Int64) async throws {
            h.clock.set(instant)
            _ = try Sweeper.Job.entitlementExpiry.run(h.database, instant)
            ana = try #require(await h.login("ana@example.com").json["token"] as? String)
        }

        // 9000: bought; an older signed copy of it is kept for later.
        let oldCopy = transaction("9000", expires: start + 30 * Self.day)
        _ = try await h.expect(
            200, .post, "/v1/me/purchases/apple",
            json: FakeAppStore.purchase(transaction("9000", expires: start + 30 * Self.day), renewal: store.renewal(original: "9000")),
            token: ana)
        #expect(try await h.entitlement(ana)["auto_renewing"] as? Bool == true)
        // The user turns auto-renewal off: still plus until expires_at.
        try await notify(
            "DID_CHANGE_RENEWAL_STATUS", transaction("9000", expires: start + 30 * Self.day), subtype: "AUTO_RENEW_DISABLED",
            renewal: store.renewal(original: "9000", autoRenew: false))
        var shown = try await h.entitlement(ana)
        #expect(shown["auto_renewing"] as? Bool == false)
        #expect(shown["tier"] as? String == "plus")
        // The app posts the older copy: recorded, changes nothing (auto-renewal stays off).
        _ = try await h.expect(200, .post, "/v1/me/purchases/apple", json: FakeAppStore.purchase(oldCopy), token: ana)
        #expect(try await h.entitlement(ana)["auto_renewing"] as? Bool == false)
        // EXPIRED ends it now, whatever the transaction's period says.
        try await notify("EXPIRED", transaction("9000", expires: start + 30 * Self.day), subtype: "VOLUNTARY")
        try await advance(to: start + 1000)
        shown = try await h.entitlement(ana)
        #expect(shown["state"] as? String == "expired")
        #expect(shown["tier"] as? String == "free")

        // 9001: its period ends in a day, renewal fails with a six-day grace; GRACE_PERIOD_EXPIRED ends the grace at once.
        let end9001 = start + Self.day
        try await notify("SUBSCRIBED", transaction("9001", expires: end9001), renewal: store.renewal(original: "9001"))
        try await advance(to: end9001)
        try await notify(
            "DID_FAIL_TO_RENEW", transaction("9001", expires: end9001), subtype: "GRACE_PERIOD",
            renewal: store.renewal(original: "9001", retrying: true, graceExpires: end9001 + 6 * Self.day))
        #expect(try await h.entitlement(ana)["state"] as? String == "grace")
        try await advance(to: end9001 + Self.day)
        try await notify(
            "GRACE_PERIOD_EXPIRED", transaction("9001", expires: end9001), renewal: store.renewal(original: "9001", retrying: true))
        shown = try await h.entitlement(ana)
        #expect(shown["state"] as? String == "billing_retry")
        #expect(shown["tier"] as? String == "free")

        // 9002: family sharing, then withdrawn: REVOKE.
        try await notify("SUBSCRIBED", transaction("9002", expires: h.clock.nowMilliseconds() + 30 * Self.day))
        #expect(try await h.tier(ana) == "plus")
        try await notify(
            "REVOKE", transaction("9002", expires: h.clock.nowMilliseconds() + 30 * Self.day, revoked: h.clock.nowMilliseconds()))
        #expect(try await h.entitlement(ana)["state"] as? String == "revoked")
        #expect(try await h.tier(ana) == "free")

        // A type this server does not act on: stored and answered 200.
        try await notify("PRICE_INCREASE", nil)
        let outcomes = try await h.database.read { db in
            try db.query("SELECT type, outcome FROM store_events").map { "\($0.string("type") ?? "") \($0.string("outcome") ?? "")" }
        }
        #expect(outcomes.contains("PRICE_INCREASE ignored"))
        #expect(outcomes.filter { $0.hasSuffix(" applied") }.count == 7)
        let stale = try await h.database.read { db in
            try db.queryOne("SELECT COUNT(*) AS n FROM entitlement_periods WHERE purchase_id = 'app_store:9000'")?.int("n")
        }
        #expect(stale == 4, "every verified transaction is kept, the stale copy too")
    }

    @Test("a server without App Store configuration answers 404 CA074; --default-tier is an operator grant")
    func notConfigured() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let (ana, _) = try await h.register("ana@example.com")
        let reply = try await h.expect(404, .post, "/v1/me/purchases/apple", json: #"{"signed_transaction":"x.y.z"}"#, token: ana)
        #expect(reply.errorCode == "CA074")
        _ = try await h.expect(404, .post, "/v1/store/apple/notifications", json: #"{"signedPayload":"x.y.z"}"#)
        let shown = try await h.entitlement(ana)
        #expect(shown["tier"] as? String == "premium")
        #expect(shown["source"] as? String == "operator")
        #expect(shown["expires_at"] is NSNull)
    }
}

extension AppHarness {
    /// The account's tier as `GET /v1/me` answers it.
    func tier(_ token: String) async throws -> String? {
        try await expect(200, .get, "/v1/me", token: token).json["tier"] as? String
    }

    /// `GET /v1/me/entitlement`'s answer.
    func entitlement(_ token: String) async throws -> [String: Any] {
        try await expect(200, .get, "/v1/me/entitlement", token: token).json
    }
}
