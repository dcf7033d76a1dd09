import Domain
import Foundation
import Hashing
import Identity
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// RTDN pushes authenticated by Pub/Sub's OIDC bearer token (docs/subscriptions.md#real-time-developer-notifications):
/// Google-signed ID tokens minted here, Google's key set served by `jwks_server.py` on loopback TLS (the
/// sign-in tests' fake), the Play Developer API by `fake_play.py`. A refused push is answered 401 and
/// nothing is read or recorded.
@Suite("Subscriptions — RTDN pushes authenticated by Pub/Sub's OIDC token")
struct PlayRTDNAuthTests {
    static let audience = "https://chronir.example.com/v1/store/google/rtdn"
    static let pushAccount = "rtdn-push@chronir-test.iam.gserviceaccount.com"

    struct Setup {
        let h: AppHarness
        let play: FakePlay
        let keys: ProviderFake
        /// The authenticator's clock (tokens are minted at its now).
        let clock: ManualClock
    }

    static func setup(secret: String? = nil, serviceAccount: String? = pushAccount, push: Bool = true) async throws -> Setup {
        let play = try await FakePlay.start()
        let keys = try await ProviderFake.start("jwks_server.py", [])
        try await keys.post("/control/keys", ["jwks": OIDCMint.jwks([(OIDCMint.k1, "k1")]), "max_age": 3600])
        let clock = ManualClock()
        let authenticator = PubSubPushAuthenticator(
            configuration: .init(audience: audience, serviceAccount: serviceAccount, keySetURL: keys.origin + "/keys"),
            client: keys.client, clock: clock, logger: .quiet)
        let h = try AppHarness { config in
            config.subscriptions.play = play.api
            config.subscriptions.playRTDNToken = secret
            config.subscriptions.playRTDNAuthenticator = push ? authenticator : nil
        }
        try await play.fake.setClock(h.clock.nowMilliseconds())
        try await play.set("tok-rtdn-1", "ACTIVE", expires: h.clock.nowMilliseconds() + 30 * 86_400_000, account: nil)
        return Setup(h: h, play: play, keys: keys, clock: clock)
    }

    /// A token as Pub/Sub's push subscription sends it; `overrides` replace or add claims.
    static func token(_ s: Setup, overrides: [String: Any] = [:], key: RSA.PrivateKey = OIDCMint.k1) -> String {
        let now = s.clock.nowMilliseconds() / 1000
        var claims: [String: Any] = [
            "iss": "https://accounts.google.com", "aud": audience, "azp": "113456789012345678901", "sub": "113456789012345678901",
            "email": pushAccount, "email_verified": true, "iat": now, "exp": now + 3600,
        ]
        for (name, value) in overrides { claims[name] = value }
        return OIDCMint.rs256(claims, key: key)
    }

    static func push(_ s: Setup, _ messageID: String, bearer: String?, query: String = "") async throws -> Reply {
        let body = try FakePlay.subscriptionPush(messageID, type: 2, token: "tok-rtdn-1")
        return await s.h.send(
            .post, "/v1/store/google/rtdn" + query, json: body, headers: bearer.map { [("Authorization", "Bearer \($0)")] } ?? [])
    }

    static func events(_ s: Setup) async throws -> Int64 {
        try await s.h.database.read { db in
            try db.queryOne("SELECT COUNT(*) AS n FROM store_events WHERE source = 'play'")?.int("n") ?? -1
        }
    }

    @Test("a Google-signed token for the audience and the service account: 200, the subscription re-read and recorded")
    func accepted() async throws {
        let s = try await Self.setup()
        let reply = try await Self.push(s, "m-1", bearer: Self.token(s))
        #expect(reply.status == 200, "\(reply.text)")
        #expect(try await s.play.received("reads") as? [String] == ["tok-rtdn-1"])
        #expect(try await Self.events(s) == 1)
    }

    @Test("wrong audience, expired, another signer's key, another service account, unverified email, no token: 401, nothing read")
    func refused() async throws {
        let s = try await Self.setup()
        let now = s.clock.nowMilliseconds() / 1000
        let cases: [(String, String?)] = [
            ("wrong audience", Self.token(s, overrides: ["aud": "https://elsewhere.example.com/push"])),
            ("expired", Self.token(s, overrides: ["iat": now - 7200, "exp": now - 3600])),
            ("wrong signer", Self.token(s, key: OIDCMint.attacker)),
            ("wrong issuer", Self.token(s, overrides: ["iss": "https://appleid.apple.com"])),
            ("another account", Self.token(s, overrides: ["email": "someone@chronir-test.iam.gserviceaccount.com"])),
            ("unverified email", Self.token(s, overrides: ["email_verified": false])),
            ("no token", nil),
            ("not a JWT", "not-a-token"),
        ]
        for (index, (name, bearer)) in cases.enumerated() {
            let reply = try await Self.push(s, "m-\(index)", bearer: bearer)
            #expect(reply.status == 401, "\(name): \(reply.status) \(reply.text)")
            #expect(reply.errorCode == "CA012", "\(name)")
        }
        #expect(try await s.play.received("reads").isEmpty, "nothing was read from Google Play")
        #expect(try await Self.events(s) == 0, "nothing was recorded")
    }

    @Test("without --play-rtdn-service-account any Google-signed token for the audience passes; with the URL secret too, both are needed")
    func combinations() async throws {
        let any = try await Self.setup(serviceAccount: nil)
        let other = Self.token(any, overrides: ["email": "someone@chronir-test.iam.gserviceaccount.com"])
        #expect(try await Self.push(any, "m-1", bearer: other).status == 200)

        let both = try await Self.setup(secret: FakePlay.rtdnToken)
        #expect(try await Self.push(both, "m-1", bearer: Self.token(both)).status == 401, "the URL secret is missing")
        #expect(try await Self.push(both, "m-2", bearer: nil, query: "?token=\(FakePlay.rtdnToken)").status == 401, "no bearer")
        #expect(try await Self.push(both, "m-3", bearer: Self.token(both), query: "?token=\(FakePlay.rtdnToken)").status == 200)
        #expect(try await Self.events(both) == 1)

        let neither = try await Self.setup(push: false)
        let reply = try await Self.push(neither, "m-1", bearer: Self.token(neither))
        #expect(reply.status == 404)
        #expect(reply.errorCode == "CA074")
    }

    @Test("the nonce-free path is separate: sign-in's verify still refuses a token without the client's nonce")
    func signInKeepsItsNonce() throws {
        let now: Int64 = 1_770_368_400_000
        var claims = OIDCMint.claims(now: now)
        claims["nonce"] = nil
        let token = OIDCMint.rs256(claims)
        let keys = try JWKS(json: Array(JSONSerialization.data(withJSONObject: OIDCMint.jwks([(OIDCMint.k1, "k1")]))))
        let verifier = IDTokenVerifier.google(clientIDs: [OIDCMint.googleClient])
        #expect(throws: IDTokenError.nonceMismatch) { try verifier.verify(token, keys: keys, nonce: "", nowMilliseconds: now).get() }
        #expect(throws: IDTokenError.nonceMismatch) { try verifier.verify(token, keys: keys, nonce: "n-1", nowMilliseconds: now).get() }
        #expect(try verifier.verifyWithoutNonce(token, keys: keys, nowMilliseconds: now).get().subject == "g-1001")
    }
}
