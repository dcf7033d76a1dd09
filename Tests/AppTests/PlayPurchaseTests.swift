import Domain
import Foundation
import Hashing
import Storage
import Store
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// A fake Google Play for one harness: `fake_play.py` (the Play Developer API and Google's OAuth token
/// endpoint, checking the service account's RS256 assertion) over TLS on loopback, and the server's
/// `PlayDeveloperAPI` pointed at it. Time is the harness's clock, told to the fake before each call.
final class FakePlay: Sendable {
    static let clientEmail = "chronir-play@chronir-test.iam.gserviceaccount.com"
    static let package = "com.chronir.android"
    static let rtdnToken = "rtdn-5ecret-token"
    let fake: ProviderFake
    let api: PlayDeveloperAPI
    let keys: TemporaryDirectory

    static func start() async throws -> FakePlay {
        let key = try await blocking { try RSA.PrivateKey() }
        let keys = TemporaryDirectory(prefix: "play-keys")
        try key.publicKey.pemRepresentation.write(toFile: keys.file(named: "public.pem"), atomically: true, encoding: .utf8)
        let fake = try await ProviderFake.start("fake_play.py", [keys.file(named: "public.pem"), clientEmail, package])
        // A service-account JSON file as Google issues it, read back through the file init.
        let account: [String: Any] = [
            "type": "service_account", "project_id": "chronir-test", "private_key_id": "4567cdef",
            "private_key": key.pemRepresentation, "client_email": clientEmail, "token_uri": fake.origin + "/token",
        ]
        let file = keys.file(named: "service-account.json")
        try JSONSerialization.data(withJSONObject: account).write(to: URL(fileURLWithPath: file))
        let api = try PlayDeveloperAPI(
            account: GoogleServiceAccount(file: file), packageName: package, baseURL: fake.origin, client: fake.client)
        return FakePlay(fake: fake, api: api, keys: keys)
    }

    private init(fake: ProviderFake, api: PlayDeveloperAPI, keys: TemporaryDirectory) {
        self.fake = fake
        self.api = api
        self.keys = keys
    }

    /// Sets (or moves) the purchase `token` as Google would serve it.
    func set(
        _ token: String, _ state: String, product: String = "chronir_plus_monthly", expires: Int64, account: String?,
        package: String = FakePlay.package, autoRenew: Bool = true, order: String = "GPA.1234-5678-9012-34567", linked: String? = nil
    ) async throws {
        var document: [String: Any] = [
            "token": token, "package": package, "product": product, "state": state, "start_ms": expires - 30 * 86_400_000,
            "expiry_ms": expires, "auto_renew": autoRenew, "order": order, "test": true,
        ]
        if let linked { document["linked"] = linked }
        document["account"] = account ?? NSNull()
        try await fake.post("/control/subscription", document)
    }

    func received(_ key: String) async throws -> [Any] { try await fake.received()[key] as? [Any] ?? [] }

    /// A Pub/Sub push body carrying `notification` (the RTDN `DeveloperNotification`).
    static func push(_ messageID: String, _ notification: [String: Any]) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: notification).base64EncodedString()
        return #"{"message":{"data":"\#(data)","messageId":"\#(messageID)","publishTime":"2026-03-01T09:00:00.000Z"},"#
            + #""subscription":"projects/chronir-test/subscriptions/play-rtdn"}"#
    }

    /// A push of a `subscriptionNotification` of `type` for `token`.
    static func subscriptionPush(_ messageID: String, type: Int, token: String, package: String = FakePlay.package) throws -> String {
        try push(
            messageID,
            [
                "version": "1.0", "packageName": package, "eventTimeMillis": "1772355600000",
                "subscriptionNotification": ["version": "1.0", "notificationType": type, "purchaseToken": token],
            ])
    }
}

@Suite("Subscriptions — Google Play purchases and RTDN, read from a fake Play Developer API")
struct PlayPurchaseTests {
    static let day: Int64 = 86_400_000
    static let rtdnPath = "/v1/store/google/rtdn?token=\(FakePlay.rtdnToken)"

    static func harness() async throws -> (AppHarness, FakePlay) {
        let play = try await FakePlay.start()
        let h = try AppHarness { config in
            config.subscriptions.play = play.api
            config.subscriptions.playRTDNToken = FakePlay.rtdnToken
        }
        try await play.fake.setClock(h.clock.nowMilliseconds())
        return (h, play)
    }

    static func purchase(_ token: String, _ product: String = "chronir_plus_monthly") -> String {
        #"{"purchase_token":"\#(token)","product_id":"\#(product)"}"#
    }

    @Test("done when: a Play purchase token makes a free account premium (acknowledged), an RTDN refund makes it free: 403 CA013")
    func timeline() async throws {
        let (h, play) = try await Self.harness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let now = h.clock.nowMilliseconds()
        try await play.set("tok-premium-1", "ACTIVE", product: "chronir_premium_monthly", expires: now + 30 * Self.day, account: anaID)
        let premium = try await h.expect(
            200, .post, "/v1/me/purchases/google", json: Self.purchase("tok-premium-1", "chronir_premium_monthly"), token: ana)
        #expect(premium.json["tier"] as? String == "premium")
        #expect(premium.json["state"] as? String == "active")
        #expect(premium.json["source"] as? String == "play")
        #expect(premium.json["platform"] as? String == "android")
        #expect(premium.json["auto_renewing"] as? Bool == true)
        #expect(premium.json["expires_at"] as? String == Timestamp(milliseconds: now + 30 * Self.day).description)
        #expect(try await play.received("acknowledged") as? [String] == ["tok-premium-1"], "the server acknowledged the purchase")
        // Posting it again (every app launch): the same answer, no second acknowledgement, one grant cached.
        #expect(
            try await h.expect(
                200, .post, "/v1/me/purchases/google", json: Self.purchase("tok-premium-1", "chronir_premium_monthly"), token: ana
            ).text == premium.text)
        #expect(try await play.received("acknowledged").count == 1)
        let grants = try await play.received("grants") as? [[String: Any]] ?? []
        #expect(grants.count == 1, "the access token is cached")
        #expect(grants.first?["scope"] as? String == PlayDeveloperAPI.scope)
        _ = try await h.expect(201, .post, "/v1/groups", json: #"{"name":"Home"}"#, token: ana)
        let active = Exposition(h.app.services.metrics.exposition())
        #expect(active.series("chronir_entitlements") == [#"chronir_entitlements{tier="premium",state="active",platform="android"}"#])
        #expect(active[#"chronir_entitlements{tier="premium",state="active",platform="android"}"#] == 1)

        // Refunded and revoked in the Play Console: Google serves it EXPIRED, the RTDN says REVOKED (12).
        h.clock.advance(by: Self.day)
        try await play.fake.setClock(h.clock.nowMilliseconds())
        try await play.set(
            "tok-premium-1", "REVOKED", product: "chronir_premium_monthly", expires: h.clock.nowMilliseconds(), account: anaID)
        let revoke = try FakePlay.subscriptionPush("1000000001", type: 12, token: "tok-premium-1")
        _ = try await h.expect(200, .post, Self.rtdnPath, json: revoke)
        let revoked = try await h.entitlement(ana)
        #expect(revoked["state"] as? String == "revoked")
        #expect(revoked["tier"] as? String == "free")
        let lapsed = try await h.expect(403, .post, "/v1/groups", json: #"{"name":"Work"}"#, token: ana)
        #expect(lapsed.errorCode == "CA013")
        // Redelivered by Pub/Sub: 200, recorded once, nothing changes.
        _ = try await h.expect(200, .post, Self.rtdnPath, json: revoke)
        // A later read still showing EXPIRED keeps the revocation.
        let later = try FakePlay.subscriptionPush("1000000002", type: 13, token: "tok-premium-1")
        _ = try await h.expect(200, .post, Self.rtdnPath, json: later)
        #expect(try await h.entitlement(ana)["state"] as? String == "revoked")
        let (events, audit) = try await h.database.read { db in
            (
                try db.query("SELECT type, outcome FROM store_events WHERE source = 'play' ORDER BY event_id").map {
                    "\($0.string("type") ?? "") \($0.string("outcome") ?? "")"
                },
                try EntitlementStore.tierChanges(userID: anaID, on: db).map { "\($0.from)→\($0.to) \($0.cause)" }
            )
        }
        #expect(events == ["SUBSCRIPTION_REVOKED applied", "SUBSCRIPTION_EXPIRED applied"])
        let gauges = Exposition(h.app.services.metrics.exposition())
        #expect(gauges[#"chronir_entitlements{tier="premium",state="active",platform="android"}"#] == 0, "a label set gone reads 0")
        #expect(gauges[#"chronir_entitlements{tier="premium",state="revoked",platform="android"}"#] == 1)
        #expect(gauges[#"chronir_store_notifications_total{store="play",outcome="applied"}"#] == 2)
        #expect(gauges[#"chronir_store_notifications_total{store="play",outcome="duplicate"}"#] == 1)
        #expect(audit == ["free→premium purchase", "premium→free notification"])
    }

    @Test("Play's states: grace keeps access, on hold and paused lose it, canceled lasts until expiry, recovered comes back")
    func states() async throws {
        let (h, play) = try await Self.harness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let now = h.clock.nowMilliseconds()
        try await play.set("tok-plus-1", "ACTIVE", expires: now + Self.day, account: anaID)
        _ = try await h.expect(200, .post, "/v1/me/purchases/google", json: Self.purchase("tok-plus-1"), token: ana)
        #expect(try await h.tier(ana) == "plus")

        func moveTo(_ state: String, type: Int, id: String, expires: Int64, autoRenew: Bool = true) async throws -> [String: Any] {
            try await play.fake.setClock(h.clock.nowMilliseconds())
            try await play.set("tok-plus-1", state, expires: expires, account: anaID, autoRenew: autoRenew)
            _ = try await h.expect(200, .post, Self.rtdnPath, json: try FakePlay.subscriptionPush(id, type: type, token: "tok-plus-1"))
            return try await h.entitlement(ana)
        }
        // The renewal fails: IN_GRACE_PERIOD, expiryTime is the grace period's end.
        h.clock.advance(by: Self.day)
        let grace = try await moveTo("IN_GRACE_PERIOD", type: 6, id: "2000000001", expires: h.clock.nowMilliseconds() + 3 * Self.day)
        #expect(grace["state"] as? String == "grace")
        #expect(grace["tier"] as? String == "plus")
        #expect(grace["grace_expires_at"] as? String == Timestamp(milliseconds: h.clock.nowMilliseconds() + 3 * Self.day).description)
        // Grace over: account hold.
        h.clock.advance(by: 3 * Self.day)
        let hold = try await moveTo("ON_HOLD", type: 5, id: "2000000002", expires: h.clock.nowMilliseconds())
        #expect(hold["state"] as? String == "billing_retry")
        #expect(hold["tier"] as? String == "free")
        // The user fixes the card: RECOVERED.
        let recovered = try await moveTo("ACTIVE", type: 1, id: "2000000003", expires: h.clock.nowMilliseconds() + 30 * Self.day)
        #expect(recovered["state"] as? String == "active")
        #expect(recovered["tier"] as? String == "plus")
        // Canceled: access until the period ends, not renewing.
        let canceled = try await moveTo(
            "CANCELED", type: 3, id: "2000000004", expires: h.clock.nowMilliseconds() + 30 * Self.day, autoRenew: false)
        #expect(canceled["state"] as? String == "active")
        #expect(canceled["auto_renewing"] as? Bool == false)
        // Paused (restarted later): no access while paused.
        let paused = try await moveTo("PAUSED", type: 10, id: "2000000005", expires: h.clock.nowMilliseconds())
        #expect(paused["tier"] as? String == "free")
        #expect(paused["state"] as? String == "expired")
        // Expired.
        h.clock.advance(by: Self.day)
        let expired = try await moveTo("EXPIRED", type: 13, id: "2000000006", expires: h.clock.nowMilliseconds() - Self.day)
        #expect(expired["state"] as? String == "expired")
        #expect(try await h.tier(ana) == "free")
        // The access token expired meanwhile (an hour): a new grant, signed again.
        #expect(try await play.received("grants").count >= 2)
    }

    @Test("refusals leave the tier unchanged: unknown token, wrong product, pending, other account, owned elsewhere, bad RTDN auth")
    func refusals() async throws {
        let (h, play) = try await Self.harness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let (bo, _) = try await h.register("bo@example.com")
        let expires = h.clock.nowMilliseconds() + 30 * Self.day
        func refused(_ body: String, _ status: Int, _ code: String, token: String = ana) async throws {
            let reply = try await h.expect(status, .post, "/v1/me/purchases/google", json: body, token: token)
            #expect(reply.errorCode == code, "\(reply.text)")
        }
        try await refused(Self.purchase("never-sold"), 422, "CA070")
        try await refused(Self.purchase("tok/../../other"), 422, "CA070")
        try await refused(Self.purchase(String(repeating: "a", count: PlayDeveloperAPI.maxPurchaseTokenLength + 1)), 422, "CA070")
        try await play.set("tok-other-app", "ACTIVE", expires: expires, account: anaID, package: "com.other.app")
        try await refused(Self.purchase("tok-other-app"), 422, "CA070")
        try await play.set("tok-a", "ACTIVE", expires: expires, account: anaID)
        try await refused(Self.purchase("tok-a", "chronir_premium_monthly"), 422, "CA070")
        try await refused(Self.purchase("tok-a"), 403, "CA072", token: bo)
        try await play.set("tok-pending", "PENDING", expires: expires, account: anaID)
        try await refused(Self.purchase("tok-pending"), 422, "CA078")
        try await play.set("tok-gold", "ACTIVE", product: "chronir_gold", expires: expires, account: anaID)
        try await refused(Self.purchase("tok-gold", "chronir_gold"), 422, "CA073")
        #expect(try await h.tier(ana) == "free")
        #expect(try await play.received("acknowledged").isEmpty, "nothing refused is acknowledged")

        // Ana's; the same token without an account id, posted by Bo: 409 CA071.
        _ = try await h.expect(200, .post, "/v1/me/purchases/google", json: Self.purchase("tok-a"), token: ana)
        try await play.set("tok-a", "ACTIVE", expires: expires, account: nil)
        try await refused(Self.purchase("tok-a"), 409, "CA071", token: bo)
        #expect(try await h.tier(bo) == "free")

        // RTDN: without or with a wrong token 401; not a push 422; another package's is recorded, ignored.
        let push = try FakePlay.subscriptionPush("3000000001", type: 13, token: "tok-a")
        #expect(try await h.expect(401, .post, "/v1/store/google/rtdn", json: push).errorCode == "CA012")
        _ = try await h.expect(401, .post, "/v1/store/google/rtdn?token=rtdn-5ecret-tokeX", json: push)
        _ = try await h.expect(422, .post, Self.rtdnPath, json: #"{"message":{"data":"bm90IGpzb24=","messageId":"3"}}"#)
        try await play.set("tok-a", "EXPIRED", expires: h.clock.nowMilliseconds(), account: anaID)
        _ = try await h.expect(
            200, .post, Self.rtdnPath, json: try FakePlay.subscriptionPush("3000000002", type: 13, token: "tok-a", package: "com.other"))
        #expect(try await h.tier(ana) == "plus", "the other package's notification changed nothing")
        let outcome = try await h.database.read { db in
            try db.queryOne("SELECT outcome FROM store_events WHERE event_id = '3000000002'")?.string("outcome")
        }
        #expect(outcome == "ignored")
    }

    @Test("an RTDN for a purchase nobody posted binds it by obfuscatedExternalAccountId; a voided purchase revokes it")
    func unclaimed() async throws {
        let (h, play) = try await Self.harness()
        let (ana, anaID) = try await h.register("ana@example.com")
        try await play.set("tok-new", "ACTIVE", expires: h.clock.nowMilliseconds() + 30 * Self.day, account: anaID.uppercased())
        _ = try await h.expect(200, .post, Self.rtdnPath, json: try FakePlay.subscriptionPush("4000000001", type: 4, token: "tok-new"))
        #expect(try await h.tier(ana) == "plus")
        #expect(try await play.received("acknowledged") as? [String] == ["tok-new"])
        let voided = try FakePlay.push(
            "4000000002",
            [
                "version": "1.0", "packageName": FakePlay.package, "eventTimeMillis": "1772355600000",
                "voidedPurchaseNotification": ["purchaseToken": "tok-new", "orderId": "GPA.1234", "productType": 1, "refundType": 1],
            ])
        try await play.set("tok-new", "EXPIRED", expires: h.clock.nowMilliseconds(), account: anaID.uppercased())
        _ = try await h.expect(200, .post, Self.rtdnPath, json: voided)
        #expect(try await h.entitlement(ana)["state"] as? String == "revoked")
        #expect(try await h.tier(ana) == "free")
    }

    @Test("deleting an account with a renewing Play subscription answers 200 naming it; without one 204")
    func deletion() async throws {
        let (h, play) = try await Self.harness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let expires = h.clock.nowMilliseconds() + 30 * Self.day
        try await play.set("tok-del", "ACTIVE", expires: expires, account: anaID)
        _ = try await h.expect(200, .post, "/v1/me/purchases/google", json: Self.purchase("tok-del"), token: ana)
        let deleted = try await h.expect(200, .delete, "/v1/me", token: ana)
        let subscriptions = try #require(deleted.json["store_subscriptions"] as? [[String: Any]])
        #expect(subscriptions.count == 1)
        #expect(subscriptions.first?["store"] as? String == "play")
        #expect(subscriptions.first?["product_id"] as? String == "chronir_plus_monthly")
        #expect(subscriptions.first?["expires_at"] as? String == Timestamp(milliseconds: expires).description)
        #expect(
            subscriptions.first?["manage_url"] as? String
                == "https://play.google.com/store/account/subscriptions?sku=chronir_plus_monthly&package=\(FakePlay.package)")
        let owner = try await h.database.read { db in try EntitlementStore.owner(source: .play, storeID: "tok-del", on: db) }
        #expect(owner.known && owner.userID == nil, "the purchase is unbound, kept for audit")
        // A canceled subscription (not renewing) is not named: 204.
        let (bo, boID) = try await h.register("bo@example.com")
        try await play.set("tok-bo", "CANCELED", expires: expires, account: boID, autoRenew: false)
        _ = try await h.expect(200, .post, "/v1/me/purchases/google", json: Self.purchase("tok-bo"), token: bo)
        _ = try await h.expect(204, .delete, "/v1/me", token: bo)
    }

    @Test("the owner's Play subscription goes on hold: a member's open socket on the group topic learns the group is paused")
    func memberSocketLearnsOfLapse() async throws {
        let (h, play) = try await Self.harness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let (bo, _) = try await h.register("bo@example.com")
        try await play.set(
            "tok-own", "ACTIVE", product: "chronir_premium_annual", expires: h.clock.nowMilliseconds() + Self.day, account: anaID)
        _ = try await h.expect(200, .post, "/v1/me/purchases/google", json: Self.purchase("tok-own", "chronir_premium_annual"), token: ana)
        let groupID = try await h.createGroup(token: ana)
        #expect(await h.join(try await h.inviteCode(groupID, token: ana), token: bo).status == 200)
        let (server, port) = try RealtimeTests().serve(h)
        defer {
            server.shutdown()
            h.app.realtime.stop()
        }
        let topic = "group:\(groupID)"
        let feed = try await RealtimeTests.subscribed(port: port, token: bo, topic: topic)
        defer { feed.close() }

        h.clock.advance(by: Self.day)
        try await play.fake.setClock(h.clock.nowMilliseconds())
        try await play.set("tok-own", "ON_HOLD", product: "chronir_premium_annual", expires: h.clock.nowMilliseconds(), account: anaID)
        _ = try await h.expect(200, .post, Self.rtdnPath, json: try FakePlay.subscriptionPush("5000000001", type: 5, token: "tok-own"))
        let seen = try await blocking { () -> String in
            while true {
                let message = try feed.next(RealtimeTests.type("change", topic))
                for change in message["changes"] as? [[String: Any]] ?? [] where change["kind"] as? String == "group_owner_subscription" {
                    let doc = change["doc"] as? [String: Any]
                    return "\(message["event"] ?? "-") \(doc?["state"] ?? "-") \(doc?["group_id"] ?? "-")"
                }
            }
        }
        #expect(seen == "group_owner_subscription_changed lapsed \(groupID)")
    }

    @Test("without Play configuration the routes answer 404 CA074")
    func notConfigured() async throws {
        let h = try AppHarness()
        let (ana, _) = try await h.register("ana@example.com")
        #expect(try await h.expect(404, .post, "/v1/me/purchases/google", json: Self.purchase("t"), token: ana).errorCode == "CA074")
        _ = try await h.expect(404, .post, Self.rtdnPath, json: try FakePlay.subscriptionPush("1", type: 4, token: "t"))
    }
}
