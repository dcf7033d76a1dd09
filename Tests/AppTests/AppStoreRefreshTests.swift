import Domain
import Foundation
import Hashing
import Push
import Storage
import Store
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// A fake App Store Server API for one harness: `fake_appstore.py` over TLS on loopback, checking the
/// ES256 bearer token with the In-App Purchase key's public half as Apple does, and serving the
/// statuses the test signs with its minted chain (`FakeAppStore`). Time is the harness's clock.
final class FakeAppStoreAPI: Sendable {
    static let keyID = "2X9R4HXF34"
    static let issuerID = "57246542-96fe-1a63-e053-0824d011072a"
    let fake: ProviderFake
    /// The key the fake knows the public half of.
    let key: P256.PrivateKey

    static func start() async throws -> FakeAppStoreAPI {
        let key = P256.PrivateKey()
        let fake = try await ProviderFake.start(
            "fake_appstore.py", [Hex.encode(key.publicKey.x963Representation), keyID, issuerID, FakeAppStore.bundleID])
        return FakeAppStoreAPI(fake: fake, key: key)
    }

    private init(fake: ProviderFake, key: P256.PrivateKey) {
        self.fake = fake
        self.key = key
    }

    /// The server's client, signing with `key` (the fake's by default).
    func api(key: P256.PrivateKey? = nil) -> AppStoreServerAPI {
        AppStoreServerAPI(
            configuration: .init(keyID: Self.keyID, issuerID: Self.issuerID, bundleID: FakeAppStore.bundleID, baseURL: fake.origin),
            key: key ?? self.key, client: fake.client)
    }

    /// Sets what Get All Subscription Statuses answers for `original`.
    func set(_ original: String, status: Int, transaction: String, renewal: String? = nil) async throws {
        var document: [String: Any] = ["original": original, "status": status, "signedTransactionInfo": transaction]
        if let renewal { document["signedRenewalInfo"] = renewal }
        try await fake.post("/control/status", document)
    }

    /// The transaction ids read, and the reasons bearer tokens were refused.
    func received() async throws -> (reads: [String], refused: [String]) {
        let all = try await fake.received()
        return (all["reads"] as? [String] ?? [], all["refused"] as? [String] ?? [])
    }
}

@Suite("Subscriptions — App Store Server API status refresh, against a fake API on loopback")
struct AppStoreRefreshTests {
    static let day: Int64 = 86_400_000
    static let plus = "com.chronir.plus.monthly"

    struct Setup {
        let h: AppHarness
        let store: FakeAppStore
        let apple: FakeAppStoreAPI
        let refresher: AppStoreRefresher
        let token: String
        let userID: String
    }

    /// A harness with App Store verification and the API client (signing with `key`, else the fake's),
    /// and ana holding a plus subscription `1000` that ends in `expiresIn` (a day).
    static func setup(key: P256.PrivateKey? = nil, expiresIn: Int64 = day) async throws -> Setup {
        let apple = try await FakeAppStoreAPI.start()
        let store = try FakeAppStore()
        let api = apple.api(key: key)
        let h = try AppHarness { config in
            config.subscriptions.appStore = store.verifier
            config.subscriptions.appStoreAPI = api
        }
        try await apple.fake.setClock(h.clock.nowMilliseconds())
        let (token, userID) = try await h.register("ana@example.com")
        let now = h.clock.nowMilliseconds()
        _ = try await h.expect(
            200, .post, "/v1/me/purchases/apple",
            json: FakeAppStore.purchase(
                store.transaction(original: "1000", product: plus, expires: now + expiresIn, account: userID),
                renewal: store.renewal(original: "1000")), token: token)
        let refresher = AppStoreRefresher(api: api, verifier: store.verifier, services: h.app.services)
        return Setup(h: h, store: store, apple: apple, refresher: refresher, token: token, userID: userID)
    }

    /// Moves the harness's and the fake's clocks on by `milliseconds`.
    static func advance(_ s: Setup, by milliseconds: Int64) async throws {
        s.h.clock.advance(by: milliseconds)
        try await s.apple.fake.setClock(s.h.clock.nowMilliseconds())
    }

    static func causes(_ s: Setup) async throws -> [String] {
        try await s.h.database.read { [userID = s.userID] db in try EntitlementStore.tierChanges(userID: userID, on: db).map(\.cause) }
    }

    @Test("a period that ended without a notification is refreshed once: Apple's renewal extends it (cause refresh)")
    func refreshExtends() async throws {
        let s = try await Self.setup()
        try await Self.advance(s, by: Self.day + 60_000)
        let now = s.h.clock.nowMilliseconds()
        // The expiry sweep has run: the lapse is applied (free) before the refresh brings plus back.
        _ = try await blocking { [database = s.h.database] in try Sweeper.Job.entitlementExpiry.run(database, now) }
        #expect(try await s.h.tier(s.token) == "free")
        try await s.apple.set(
            "1000", status: 1,
            transaction: s.store.transaction(original: "1000", product: Self.plus, expires: now + 30 * Self.day, account: s.userID),
            renewal: s.store.renewal(original: "1000"))
        #expect(await s.refresher.pass(at: now) == ["1000": .applied])
        let shown = try await s.h.entitlement(s.token)
        #expect(shown["tier"] as? String == "plus")
        #expect(shown["state"] as? String == "active")
        #expect(shown["expires_at"] as? String == Timestamp(milliseconds: now + 30 * Self.day).description)
        #expect(try await Self.causes(s).suffix(2) == ["expiry", "refresh"])
        let received = try await s.apple.received()
        #expect(received.reads == ["1000"])
        #expect(received.refused.isEmpty, "the bearer token verified under the key's public half")
        // Refreshed: nothing is due until the daily refresh, a day after this one.
        #expect(await s.refresher.pass(at: now).isEmpty)
        #expect(await s.refresher.pass(at: now + AppStoreRefresher.dailyMilliseconds - 1).isEmpty)
        #expect(try await s.apple.received().reads.count == 1)
    }

    @Test("a refresh that finds the subscription refunded ends the entitlement: revoked, free")
    func refreshRevokes() async throws {
        let s = try await Self.setup()
        try await Self.advance(s, by: Self.day + 60_000)
        let now = s.h.clock.nowMilliseconds()
        try await s.apple.set(
            "1000", status: 5,
            transaction: s.store.transaction(
                original: "1000", product: Self.plus, expires: now + 29 * Self.day, account: s.userID, revoked: now - 3_600_000),
            renewal: s.store.renewal(original: "1000", autoRenew: false))
        #expect(await s.refresher.pass(at: now) == ["1000": .applied])
        let shown = try await s.h.entitlement(s.token)
        #expect(shown["tier"] as? String == "free")
        #expect(shown["state"] as? String == "revoked")
        #expect(try await Self.causes(s).last == "refresh")
    }

    @Test("a key Apple does not accept: 401, nothing changes, the refresh is retried later; an unreadable key file fails at start-up")
    func badKey() async throws {
        let s = try await Self.setup(key: P256.PrivateKey())
        try await Self.advance(s, by: Self.day + 60_000)
        let now = s.h.clock.nowMilliseconds()
        try await s.apple.set(
            "1000", status: 1,
            transaction: s.store.transaction(original: "1000", product: Self.plus, expires: now + 30 * Self.day, account: s.userID))
        let before = try await s.h.expect(200, .get, "/v1/me/entitlement", token: s.token).text
        #expect(await s.refresher.pass(at: now) == ["1000": .unauthorized])
        #expect(try await s.h.expect(200, .get, "/v1/me/entitlement", token: s.token).text == before)
        let received = try await s.apple.received()
        #expect(received.reads.isEmpty)
        #expect(received.refused == ["signature", "signature"], "refused, then once more with a fresh token")
        #expect(await s.refresher.pass(at: now).isEmpty, "not again before the retry is due")
        #expect(await s.refresher.pass(at: now + AppStoreRefresher.retryMilliseconds) == ["1000": .unauthorized])

        let directory = TemporaryDirectory(prefix: "appstore-key")
        let notAKey = directory.file(named: "AuthKey.p8")
        try "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n".write(
            toFile: notAKey, atomically: true, encoding: .utf8)
        #expect(throws: (any Error).self) {
            _ = try AppStoreServerAPI(configuration: s.apple.api().configuration, keyFile: notAKey, client: s.apple.fake.client)
        }
    }

    @Test("the API down: the entitlement is unchanged and the refresh is retried later, then applied")
    func apiDown() async throws {
        let s = try await Self.setup()
        try await Self.advance(s, by: Self.day + 60_000)
        let now = s.h.clock.nowMilliseconds()
        try await s.apple.set(
            "1000", status: 1,
            transaction: s.store.transaction(original: "1000", product: Self.plus, expires: now + 30 * Self.day, account: s.userID))
        try await s.apple.fake.script("1000", [["status": 503]])
        let before = try await s.h.expect(200, .get, "/v1/me/entitlement", token: s.token).text
        #expect(await s.refresher.pass(at: now) == ["1000": .unavailable])
        #expect(try await s.h.expect(200, .get, "/v1/me/entitlement", token: s.token).text == before)
        #expect(await s.refresher.pass(at: now + AppStoreRefresher.retryMilliseconds - 1).isEmpty)
        try await Self.advance(s, by: AppStoreRefresher.retryMilliseconds)
        #expect(await s.refresher.pass(at: s.h.clock.nowMilliseconds()) == ["1000": .applied])
        #expect(try await s.h.tier(s.token) == "plus")
        #expect(try await s.apple.received().reads == ["1000", "1000"])
    }

    @Test("an operator's request (chronir-admin purchases refresh) is picked up by the timer on the injected clock")
    func requestedThroughTheTimer() async throws {
        let s = try await Self.setup()
        let now = s.h.clock.nowMilliseconds()
        try await s.apple.set(
            "1000", status: 5,
            transaction: s.store.transaction(
                original: "1000", product: Self.plus, expires: now + Self.day, account: s.userID, revoked: now - 1_000))
        #expect(await s.refresher.pass(at: now).isEmpty, "active and not asked for: nothing due")
        let requested = try await s.h.database.write { [userID = s.userID] db in
            try EntitlementStore.requestAppStoreRefresh(userID: userID, at: now, on: db)
        }
        #expect(requested == 1)
        s.refresher.start(ticks: s.h.clock, every: .seconds(60))
        try await s.apple.fake.setClock(now + 60_000)
        try await blocking { s.h.clock.advance(by: 60_000) }
        #expect(
            await eventuallyAsync { (try? await s.h.entitlement(s.token)["state"] as? String) == "revoked" },
            "the tick's pass read the status and applied it")
        try await blocking { s.refresher.stop() }
        #expect(try await s.apple.received().reads == ["1000"])
    }

    @Test("the bearer token: ES256 {kid, typ} {iss, iat, exp ≤ 60 min, aud, bid}, reused until 5 minutes before exp")
    func bearerToken() async throws {
        let apple = try await FakeAppStoreAPI.start()
        let api = apple.api()
        let t0: Int64 = 1_772_000_000_000
        let token = api.bearerToken(now: t0)
        let parts = token.split(separator: ".").map(String.init)
        func object(_ part: String) throws -> [String: Any] {
            try JSONSerialization.jsonObject(with: Data(Base64URL.decode(part) ?? [])) as? [String: Any] ?? [:]
        }
        let header = try object(parts[0])
        let claims = try object(parts[1])
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == FakeAppStoreAPI.keyID)
        #expect(header["typ"] as? String == "JWT")
        #expect(claims["iss"] as? String == FakeAppStoreAPI.issuerID)
        #expect(claims["aud"] as? String == "appstoreconnect-v1")
        #expect(claims["bid"] as? String == FakeAppStore.bundleID)
        #expect(claims["iat"] as? Int64 == t0 / 1000)
        #expect(claims["exp"] as? Int64 == t0 / 1000 + 3600)
        #expect(JWT.hasValidES256Signature(token, publicKey: apple.key.publicKey))
        #expect(api.bearerToken(now: t0 + 54 * 60_000 + 59_000) == token)
        #expect(api.bearerToken(now: t0 + 55 * 60_000) != token)
    }

    @Test("start-up: a key file that is not a P-256 key stops the server naming --appstore-key-file; a good one starts and stops")
    func startup() async throws {
        let directory = TemporaryDirectory(prefix: "appstore-key")
        let bad = directory.file(named: "bad.p8")
        try "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let good = directory.file(named: "good.p8")
        try P256.PrivateKey().pemRepresentation.write(toFile: good, atomically: true, encoding: .utf8)
        let base = [
            "--appstore-bundle-id", FakeAppStore.bundleID, "--appstore-environment", "Sandbox", "--appstore-key-id", FakeAppStoreAPI.keyID,
            "--appstore-issuer-id", FakeAppStoreAPI.issuerID, "--appstore-api-url", "https://127.0.0.1:9",
        ]
        do {
            let started = try RunningServer(base + ["--appstore-key-file", bad])
            Issue.record("started with a bad key")
            try await started.stop()
        } catch let failure as ChronirRuntime.StartupFailure {
            #expect(failure.description.contains("--appstore-key-file"), "\(failure)")
        }
        let server = try RunningServer(base + ["--appstore-key-file", good])
        try await server.stop()
    }

    @Test("chronir-admin purchases refresh USER marks the account's App Store purchase due; the refresher's next pass reads it")
    func adminRequest() async throws {
        let s = try await Self.setup()
        let now = s.h.clock.nowMilliseconds()
        try await s.apple.set(
            "1000", status: 5,
            transaction: s.store.transaction(
                original: "1000", product: Self.plus, expires: now + Self.day, account: s.userID, revoked: now - 1_000))
        var arguments = ["purchases", "refresh", "ana@example.com", "--data-dir", s.h.directory.path]
        if let url = s.h.app.services.config.databaseURL { arguments += ["--database-url", url] }
        let run = try await AdminLiveTests.LiveServer.runAdmin(arguments)
        #expect(run.status == 0, "\(run)")
        #expect(run.stdout.contains("refresh requested for 1 App Store purchase"), "\(run)")
        // The command dates the request by its own (wall) clock: the pass runs at that instant.
        let due = try #require(
            try await s.h.database.read { db in
                try db.queryOne("SELECT api_refresh_due_ms FROM purchases WHERE store_id = '1000'")?.int("api_refresh_due_ms")
            })
        try await s.apple.fake.setClock(due)
        #expect(await s.refresher.pass(at: due) == ["1000": .applied])
        #expect(try await s.h.database.read { db in try EntitlementStore.purchases(userID: nil, on: db) }.first?.state == "revoked")

        // `purchases show` reports the refreshed purchase, for people and as JSON.
        let show = try await AdminLiveTests.LiveServer.runAdmin(["purchases", "show", "ana@example.com"] + arguments.dropFirst(3))
        #expect(show.status == 0, "\(show)")
        #expect(show.stdout.hasPrefix("ana@example.com: "), "\(show)")
        #expect(show.stdout.contains("revoked") && show.stdout.contains("CAUSE"), "\(show)")
        let json = try await AdminLiveTests.LiveServer.runAdmin(
            ["purchases", "show", "ana@example.com", "--json"] + arguments.dropFirst(3))
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json)")
        #expect(Set(report.keys) == ["entitlement", "purchases", "tier_changes"])
        #expect((report["purchases"] as? [[String: Any]])?.first?["state"] as? String == "revoked")
        let missing = try await AdminLiveTests.LiveServer.runAdmin(["purchases", "show", "nobody@example.com"] + arguments.dropFirst(3))
        #expect(missing.status != 0 && missing.stderr.contains("no user nobody@example.com"), "\(missing)")
    }
}
