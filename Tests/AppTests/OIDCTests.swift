import Domain
import Foundation
import Hashing
import Identity
import Logging
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// Keys minted here (Hashing's RSA) and ID tokens signed with them, the way Apple and Google sign theirs.
enum OIDCMint {
    static let k1 = try! RSA.PrivateKey(bits: 2048)
    static let k2 = try! RSA.PrivateKey(bits: 2048)
    static let attacker = try! RSA.PrivateKey(bits: 2048)
    static let googleClient = "client-1.apps.googleusercontent.com"
    static let appleClient = "com.example.chronir"

    /// A key-set document holding `keys` (the fake serves it).
    static func jwks(_ keys: [(RSA.PrivateKey, String)]) -> [String: Any] {
        [
            "keys": keys.map { key, kid in
                [
                    "kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": Base64URL.encode(key.publicKey.modulus),
                    "e": Base64URL.encode(key.publicKey.exponent),
                ]
            }
        ]
    }

    /// `header.claims.signature`, the signature made by `sign` over the signing input.
    static func token(header: [String: Any], claims: [String: Any], sign: ([UInt8]) -> [UInt8]) -> String {
        func part(_ object: [String: Any]) -> String {
            Base64URL.encode(Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
        }
        let input = part(header) + "." + part(claims)
        return input + "." + Base64URL.encode(sign(Array(input.utf8)))
    }

    /// Claims of a Google ID token issued at `now` (ms) to `googleClient`; `overrides` replace or add members.
    static func claims(
        now: Int64, subject: String = "g-1001", email: String? = "ana@example.com", verified: Bool = true, nonce: String = "n-1",
        overrides: [String: Any] = [:]
    ) -> [String: Any] {
        var claims: [String: Any] = [
            "iss": "https://accounts.google.com", "aud": googleClient, "sub": subject, "iat": now / 1000,
            "exp": now / 1000 + 3600, "nonce": nonce, "email_verified": verified, "name": "Ana Example",
        ]
        if let email { claims["email"] = email }
        for (key, value) in overrides { claims[key] = value }
        return claims
    }

    /// An RS256 token with `kid`, signed by `key`.
    static func rs256(_ claims: [String: Any], kid: String = "k1", key: RSA.PrivateKey = k1) -> String {
        token(header: ["alg": "RS256", "kid": kid, "typ": "JWT"], claims: claims) { key.signatureSHA256(for: $0) }
    }
}

/// A harness whose server verifies ID tokens against `jwks_server.py` on loopback TLS (its key set
/// at `/keys`, for Apple and Google alike), with the fake's test CA trusted.
final class OIDCFixture: Sendable {
    let fake: ProviderFake
    let h: AppHarness

    static func make(
        maxAge: Int? = 3600, keys: [(RSA.PrivateKey, String)] = [(OIDCMint.k1, "k1")],
        providers: Set<SignInProvider> = [.apple, .google], configure: (inout AppConfiguration) -> Void = { _ in }
    ) async throws -> OIDCFixture {
        let fake = try await ProviderFake.start("jwks_server.py", [])
        try await fake.post("/control/keys", ["jwks": OIDCMint.jwks(keys), "max_age": maxAge.map { $0 as Any } ?? NSNull()])
        var config = OIDCConfiguration()
        let url = fake.origin + "/keys"
        if providers.contains(.google) { config.google = .init(clientIDs: [OIDCMint.googleClient], jwksURL: url) }
        if providers.contains(.apple) { config.apple = .init(clientIDs: [OIDCMint.appleClient], jwksURL: url) }
        let ca = fake.authority.certificatePath
        let h = try AppHarness(configure: configure) { clock in
            OIDCService(config: config, allowPrivateDestinations: true, caFile: ca, clock: clock, logger: Logger(label: "oidc-test"))
        }
        return OIDCFixture(fake: fake, h: h)
    }

    private init(fake: ProviderFake, h: AppHarness) {
        self.fake = fake
        self.h = h
    }

    deinit { h.app.services.oidc?.close() }

    /// `POST /v1/auth/oidc`.
    func signIn(_ token: String, provider: String = "google", nonce: String = "n-1") async -> Reply {
        let body = try! JSONSerialization.data(withJSONObject: ["provider": provider, "id_token": token, "nonce": nonce])
        return await h.send(.post, "/v1/auth/oidc", json: String(decoding: body, as: UTF8.self))
    }

    /// Key-set fetches the fake has answered.
    func fetches() async throws -> Int { try await fake.received()["fetches"] as? Int ?? -1 }

    /// Replaces the key set the fake serves.
    func serve(_ keys: [(RSA.PrivateKey, String)], maxAge: Int? = 3600, fail: Bool = false) async throws {
        try await fake.post(
            "/control/keys", ["jwks": OIDCMint.jwks(keys), "max_age": maxAge.map { $0 as Any } ?? NSNull(), "fail": fail])
    }

    var now: Int64 { h.clock.nowMilliseconds() }

    func count(_ sql: String) throws -> Int64 {
        try h.database.readSync { db in try db.queryOne(sql)?.int("n") ?? -1 }
    }
}

/// `POST /v1/auth/oidc`, `GET/DELETE /v1/me/identities` (docs/sign-in.md) against a real
/// key-set server over TLS on loopback: sign-up and sign-in, linking by verified email on both sides,
/// every refusal the issue lists, nonce replay, key rotation, and the key-set cache's fetch bounds
/// (counted at the fake).
@Suite("Sign in with Apple and Google — ID tokens against a local JWKS server")
struct OIDCTests {
    @Test("a valid token creates a verified account (201); signing in again reaches the same account (200); one key-set fetch")
    func signUpThenSignIn() async throws {
        let f = try await OIDCFixture.make()
        let first = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now)))
        #expect(first.status == 201, "\(first.text)")
        let user = try #require(first.json["user"] as? [String: Any])
        #expect(user["email"] as? String == "ana@example.com")
        #expect(user["email_verified"] as? Bool == true)
        #expect(user["display_name"] as? String == "Ana Example")
        let token = try #require(first.json["token"] as? String)
        #expect(try await f.h.expect(200, .get, "/v1/me", token: token).json["id"] as? String == user["id"] as? String)

        f.h.clock.advance(by: 60_000)
        let again = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now, nonce: "n-2")), nonce: "n-2")
        #expect(again.status == 200, "\(again.text)")
        #expect((again.json["user"] as? [String: Any])?["id"] as? String == user["id"] as? String)
        #expect(try f.count("SELECT COUNT(*) AS n FROM users") == 1)

        let listed = try await f.h.expect(200, .get, "/v1/me/identities", token: token)
        let identities = try #require(listed.json["identities"] as? [[String: Any]])
        #expect(identities.count == 1)
        #expect(identities.first?["provider"] as? String == "google" && identities.first?["email"] as? String == "ana@example.com")
        #expect(listed.json["has_password"] as? Bool == false)
        #expect(try await f.fetches() == 1, "the second sign-in used the cached key set")
    }

    @Test("a token whose email is unverified creates an unverified account, with a verification mail queued")
    func unverifiedNewAccount() async throws {
        let f = try await OIDCFixture.make()
        let reply = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now, email: "Bo@Example.com", verified: false)))
        #expect(reply.status == 201, "\(reply.text)")
        let user = try #require(reply.json["user"] as? [String: Any])
        #expect(user["email"] as? String == "bo@example.com", "canonical, as registration makes it")
        #expect(user["email_verified"] as? Bool == false)
        #expect(try f.count("SELECT COUNT(*) AS n FROM mail_outbox WHERE kind = 'verify_email'") == 1)
    }

    @Test("Sign in with Apple: the token carries SHA-256 hex of the raw nonce the client sends; the hash itself is refused")
    func appleNonce() async throws {
        let f = try await OIDCFixture.make()
        let raw = "raw-nonce-0123456789"
        let hashed = Hex.encode(SHA256.hash(Array(raw.utf8)))
        let claims = OIDCMint.claims(
            now: f.now, subject: "001234.abcd", email: "x7@privaterelay.appleid.com", nonce: hashed,
            overrides: [
                "iss": "https://appleid.apple.com", "aud": OIDCMint.appleClient, "email_verified": "true", "is_private_email": "true",
            ])
        let wrong = await f.signIn(OIDCMint.rs256(claims), provider: "apple", nonce: hashed)
        #expect(wrong.status == 401 && wrong.errorName == "ID_TOKEN_INVALID", "\(wrong.text)")
        let reply = await f.signIn(OIDCMint.rs256(claims), provider: "apple", nonce: raw)
        #expect(reply.status == 201, "\(reply.text)")
        #expect((reply.json["user"] as? [String: Any])?["email_verified"] as? Bool == true)
        // A Google token is no Apple token (issuer and audience differ).
        let google = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now, nonce: raw)), provider: "apple", nonce: raw)
        #expect(google.status == 401)
    }

    @Test("linking: a verified account and a verified token email → the same account, and its password still works")
    func linkVerified() async throws {
        let f = try await OIDCFixture.make()
        let (_, id) = try await f.h.register("ana@example.com", verified: true)
        let reply = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now)))
        #expect(reply.status == 200, "\(reply.text)")
        #expect((reply.json["user"] as? [String: Any])?["id"] as? String == id)
        #expect(try f.count("SELECT COUNT(*) AS n FROM identities") == 1)
        let token = try #require(reply.json["token"] as? String)
        #expect(try await f.h.expect(200, .get, "/v1/me/identities", token: token).json["has_password"] as? Bool == true)
        #expect(await f.h.login("ana@example.com").status == 200)
    }

    @Test("linking is refused (409 CA057) when the account's address or the token's is unverified; nothing is written")
    func linkRefused() async throws {
        let f = try await OIDCFixture.make()
        _ = try await f.h.register("ana@example.com", verified: false)
        let sessions = try f.count("SELECT COUNT(*) AS n FROM sessions")
        let unverifiedAccount = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now)))
        #expect(unverifiedAccount.status == 409, "\(unverifiedAccount.text)")
        #expect(unverifiedAccount.errorCode == "CA057" && unverifiedAccount.errorName == "IDENTITY_LINK_REFUSED")

        _ = try await f.h.register("bo@example.com", verified: true)
        let unverifiedToken = await f.signIn(
            OIDCMint.rs256(OIDCMint.claims(now: f.now, subject: "g-2", email: "bo@example.com", verified: false, nonce: "n-2")),
            nonce: "n-2")
        #expect(unverifiedToken.status == 409 && unverifiedToken.errorCode == "CA057", "\(unverifiedToken.text)")
        #expect(try f.count("SELECT COUNT(*) AS n FROM identities") == 0)
        #expect(try f.count("SELECT COUNT(*) AS n FROM users") == 2)
        #expect(try f.count("SELECT COUNT(*) AS n FROM sessions") == sessions + 1, "only bo's registration session")
    }

    @Test(
        "all 401 CA056, nothing written: bad signature, wrong aud, wrong iss, expired, alg none, HS256 keyed with the public key"
    )
    func refusals() async throws {
        let f = try await OIDCFixture.make()
        let now = f.now
        let claims = OIDCMint.claims(now: now)
        let publicPEM = Array(OIDCMint.k1.publicKey.pemRepresentation.utf8)
        let cases: [(String, String)] = [
            ("bad signature", OIDCMint.rs256(claims, key: OIDCMint.attacker)),
            ("wrong aud", OIDCMint.rs256(OIDCMint.claims(now: now, overrides: ["aud": "someone-else.apps.googleusercontent.com"]))),
            ("wrong iss", OIDCMint.rs256(OIDCMint.claims(now: now, overrides: ["iss": "https://accounts.evil.example"]))),
            (
                "expired",
                OIDCMint.rs256(OIDCMint.claims(now: now, overrides: ["iat": now / 1000 - 7200, "exp": now / 1000 - 61]))
            ),
            ("alg none", OIDCMint.token(header: ["alg": "none", "kid": "k1"], claims: claims) { _ in [] }),
            (
                "HS256 with the public key as secret",
                OIDCMint.token(header: ["alg": "HS256", "kid": "k1"], claims: claims) {
                    HMACSHA256.authenticationCode(key: publicPEM, message: $0)
                }
            ),
        ]
        for (name, token) in cases {
            let reply = await f.signIn(token)
            #expect(reply.status == 401, "\(name): \(reply.text)")
            #expect(reply.errorCode == "CA056" && reply.errorName == "ID_TOKEN_INVALID", "\(name)")
        }
        #expect(try f.count("SELECT COUNT(*) AS n FROM users") == 0)
        #expect(try f.count("SELECT COUNT(*) AS n FROM oidc_nonces") == 0)
        // The same claims, properly signed, pass: the refusals were the defects, not the claims.
        #expect(await f.signIn(OIDCMint.rs256(claims)).status == 201)
    }

    @Test("a replayed token, or another token with a used nonce, is refused; the nonce is stored hashed until exp")
    func replayedNonce() async throws {
        let f = try await OIDCFixture.make()
        let token = OIDCMint.rs256(OIDCMint.claims(now: f.now))
        #expect(await f.signIn(token).status == 201)
        let replay = await f.signIn(token)
        #expect(replay.status == 401 && replay.errorName == "ID_TOKEN_INVALID", "\(replay.text)")
        let sameNonce = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now + 1000)))
        #expect(sameNonce.status == 401)
        let stored = try f.h.database.readSync { db in try db.query("SELECT nonce_hash, expires_ms FROM oidc_nonces") }
        #expect(stored.count == 1)
        #expect(stored.first?.blob("nonce_hash") == IdentityStore.nonceHash(provider: .google, nonce: "n-1"))
        #expect(stored.first?.int("expires_ms") == (f.now / 1000 + 3600 + 60) * 1000)
        #expect(try f.count("SELECT COUNT(*) AS n FROM sessions") == 1)
    }

    @Test("key rotation: an unknown kid refetches the key set — at most once a minute per provider")
    func rotation() async throws {
        let f = try await OIDCFixture.make()
        #expect(await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now))).status == 201)
        #expect(try await f.fetches() == 1)
        try await f.serve([(OIDCMint.k2, "k2")])
        let k2Token = { (nonce: String) in OIDCMint.rs256(OIDCMint.claims(now: f.now, nonce: nonce), kid: "k2", key: OIDCMint.k2) }
        // Within a minute of the last fetch: no fetch, refused.
        let early = await f.signIn(k2Token("n-2"), nonce: "n-2")
        #expect(early.status == 401, "\(early.text)")
        #expect(try await f.fetches() == 1)
        f.h.clock.advance(by: KeySetCache.Limits.minFetchIntervalMilliseconds)
        let rotated = await f.signIn(k2Token("n-3"), nonce: "n-3")
        #expect(rotated.status == 200, "\(rotated.text)")
        #expect(try await f.fetches() == 2)
        // Made-up kids right after: refused without a fetch; so is the withdrawn k1.
        let madeUp = await f.signIn(
            OIDCMint.rs256(OIDCMint.claims(now: f.now, nonce: "n-4"), kid: "k9", key: OIDCMint.attacker), nonce: "n-4")
        #expect(madeUp.status == 401)
        let withdrawn = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now, nonce: "n-5")), nonce: "n-5")
        #expect(withdrawn.status == 401)
        #expect(try await f.fetches() == 2)
    }

    @Test("the key-set cache honours Cache-Control max-age: no fetch before it runs out, one at it")
    func cacheMaxAge() async throws {
        let f = try await OIDCFixture.make(maxAge: 600)
        var n = 0
        func signIn() async -> Int {
            n += 1
            return await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now, nonce: "n-\(n)")), nonce: "n-\(n)").status
        }
        #expect(await signIn() == 201)
        f.h.clock.advance(by: 599_000)
        #expect(await signIn() == 200)
        #expect(try await f.fetches() == 1)
        f.h.clock.advance(by: 1_000)
        #expect(await signIn() == 200)
        #expect(try await f.fetches() == 2)
    }

    @Test("the provider down: 503 with Retry-After, no fetch storm; the stale set is used once it has one")
    func providerDown() async throws {
        let f = try await OIDCFixture.make(maxAge: 300)
        try await f.serve([(OIDCMint.k1, "k1")], fail: true)
        let down = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now)))
        #expect(down.status == 503 && down.header("retry-after") == "60", "\(down.text)")
        #expect(await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now))).status == 503)
        #expect(try await f.fetches() == 1, "a second attempt within the minute fetches nothing")
        f.h.clock.advance(by: 60_000)
        try await f.serve([(OIDCMint.k1, "k1")], maxAge: 300)
        #expect(await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now))).status == 201)
        try await f.serve([(OIDCMint.k1, "k1")], fail: true)
        f.h.clock.advance(by: 300_000)
        let stale = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now, nonce: "n-2")), nonce: "n-2")
        #expect(stale.status == 200, "the expired set is still used while the provider fails: \(stale.text)")
        #expect(try await f.fetches() == 3)
    }

    @Test("Cache-Control lifetimes are clamped to 5 min … 24 h; none, no-cache or garbage: 5 min")
    func lifetimes() {
        let life = KeySetCache.lifetimeMilliseconds(cacheControl:)
        #expect(life(nil) == 300_000)
        #expect(life("public, max-age=600") == 600_000)
        #expect(life("max-age=10") == 300_000)
        #expect(life("max-age=21054, must-revalidate") == 21_054_000)
        #expect(life("max-age=604800") == 86_400_000)
        #expect(life("max-age=99999999999999999999") == 86_400_000)
        #expect(life("no-store, max-age=600") == 300_000)
        #expect(life("max-age=-5") == 300_000)
    }

    @Test("a provider without client ids answers 404 CA055; an unknown provider and oversize fields 422")
    func disabledAndValidation() async throws {
        let f = try await OIDCFixture.make(providers: [.google])
        let apple = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now)), provider: "apple")
        #expect(apple.status == 404 && apple.errorCode == "CA055" && apple.errorName == "OIDC_PROVIDER_DISABLED", "\(apple.text)")
        let other = await f.signIn("x.y.z", provider: "facebook")
        #expect(other.status == 422 && other.errorField == "provider")
        let nonce = String(repeating: "n", count: IdentityRoutes.Limits.maxNonceBytes + 1)
        #expect(await f.signIn("x.y.z", nonce: nonce).errorField == "nonce")
        #expect(await f.signIn("x.y.z", nonce: String(nonce.dropLast())).status == 401, "exactly at the limit is verified")
        #expect(await f.signIn("", nonce: "n").errorField == "id_token")
        let none = try AppHarness()
        let off = await none.send(.post, "/v1/auth/oidc", json: #"{"provider":"google","id_token":"a.b.c","nonce":"n"}"#)
        #expect(off.status == 404 && off.errorCode == "CA055")
        #expect(try await f.fetches() == 1)
    }

    @Test("a token without an email cannot create an account (422 id_token)")
    func noEmail() async throws {
        let f = try await OIDCFixture.make()
        let reply = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now, email: nil)))
        #expect(reply.status == 422 && reply.errorField == "id_token", "\(reply.text)")
        #expect(try f.count("SELECT COUNT(*) AS n FROM users") == 0)
    }

    @Test("the last way to sign in cannot be removed (409 CA058); a password-less account cannot change a password (409 CA059)")
    func lastSignInMethod() async throws {
        let f = try await OIDCFixture.make()
        let created = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now)))
        let token = try #require(created.json["token"] as? String)
        let last = await f.h.send(.delete, "/v1/me/identities/google", token: token)
        #expect(last.status == 409 && last.errorCode == "CA058" && last.errorName == "LAST_SIGN_IN_METHOD", "\(last.text)")
        #expect(try f.count("SELECT COUNT(*) AS n FROM identities") == 1)
        let change = await f.h.send(
            .post, "/v1/me/password", json: #"{"current_password":"","new_password":"a new password"}"#, token: token)
        #expect(change.status == 409 && change.errorCode == "CA059" && change.errorName == "PASSWORD_NOT_SET", "\(change.text)")
        // No password signs in to it, the empty one included.
        #expect(await f.h.login("ana@example.com", password: "").status == 401)
        #expect(await f.h.send(.delete, "/v1/me/identities/apple", token: token).status == 404)
        #expect(await f.h.send(.delete, "/v1/me/identities/facebook", token: token).status == 404)
        // With a second identity (Apple, same verified address) either one may go.
        let apple = OIDCMint.claims(
            now: f.now, subject: "001.apple", nonce: Hex.encode(SHA256.hash(Array("n-a".utf8))),
            overrides: ["iss": "https://appleid.apple.com", "aud": OIDCMint.appleClient])
        #expect(await f.signIn(OIDCMint.rs256(apple), provider: "apple", nonce: "n-a").status == 200)
        try await f.h.expect(204, .delete, "/v1/me/identities/google", token: token)
        let listed = try await f.h.expect(200, .get, "/v1/me/identities", token: token)
        #expect((listed.json["identities"] as? [[String: Any]])?.map { $0["provider"] as? String } == ["apple"])
        #expect(await f.h.send(.delete, "/v1/me/identities/apple", token: token).errorCode == "CA058")
    }

    @Test("password reset (proof by mail) gives a password-less account its password; then its identity may go")
    func passwordThroughReset() async throws {
        let f = try await OIDCFixture.make()
        let created = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now)))
        let id = try #require((created.json["user"] as? [String: Any])?["id"] as? String)
        // The mailed link's token, issued as `chronir-admin users reset-link` issues it.
        let raw = SecureRandom.bytes(32)
        let now = f.now
        try await f.h.database.write { db in
            try EmailTokens.issue(
                .passwordReset, tokenHash: SHA256.hash(raw), userID: id, email: "ana@example.com", at: now,
                expiresAt: now + 3_600_000, on: db)
        }
        try await f.h.expect(
            204, .post, "/v1/auth/password-reset/confirm",
            json: #"{"token":"\#(Base64URL.encode(raw))","password":"a brand new password"}"#)
        let login = await f.h.login("ana@example.com", password: "a brand new password")
        #expect(login.status == 200, "\(login.text)")
        let token = try #require(login.json["token"] as? String)
        #expect(try await f.h.expect(200, .get, "/v1/me/identities", token: token).json["has_password"] as? Bool == true)
        try await f.h.expect(204, .delete, "/v1/me/identities/google", token: token)
    }

    @Test("an account with a password may unlink its only identity; signing in again links it again")
    func unlinkWithPassword() async throws {
        let f = try await OIDCFixture.make()
        let (token, id) = try await f.h.register("ana@example.com")
        #expect(await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now))).status == 200)
        try await f.h.expect(204, .delete, "/v1/me/identities/google", token: token)
        #expect(await f.h.send(.delete, "/v1/me/identities/google", token: token).status == 404)
        let again = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now, nonce: "n-2")), nonce: "n-2")
        #expect((again.json["user"] as? [String: Any])?["id"] as? String == id)
    }

    @Test("account deletion removes the identities: the same Google account then signs up afresh")
    func accountDeletion() async throws {
        let f = try await OIDCFixture.make()
        let created = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now)))
        let token = try #require(created.json["token"] as? String)
        try await f.h.expect(204, .delete, "/v1/me", token: token)
        #expect(try f.count("SELECT COUNT(*) AS n FROM identities") == 0)
        let again = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now, nonce: "n-2")), nonce: "n-2")
        #expect(again.status == 201, "\(again.text)")
        #expect((again.json["user"] as? [String: Any])?["id"] as? String != (created.json["user"] as? [String: Any])?["id"] as? String)
    }

    @Test("registration limits apply to accounts created by sign-in; signing in to an existing one is not limited")
    func registrationLimits() async throws {
        let f = try await OIDCFixture.make { $0.registrationLimits = RegistrationLimits(perNetworkPerHour: 1, totalPerHour: 100) }
        #expect(await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now))).status == 201)
        let second = await f.signIn(
            OIDCMint.rs256(OIDCMint.claims(now: f.now, subject: "g-2", email: "bo@example.com", nonce: "n-2")), nonce: "n-2")
        #expect(second.status == 429 && second.header("retry-after") != nil, "\(second.text)")
        #expect(try f.count("SELECT COUNT(*) AS n FROM users") == 1)
        #expect(try f.count("SELECT COUNT(*) AS n FROM oidc_nonces") == 1, "the refused attempt's nonce is not spent")
        #expect(await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now, nonce: "n-3")), nonce: "n-3").status == 200)
    }

    @Test("a suspended account's identity does not sign in (403 CA024)")
    func suspended() async throws {
        let f = try await OIDCFixture.make()
        let created = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now)))
        let id = try #require((created.json["user"] as? [String: Any])?["id"] as? String)
        try await f.h.database.write { db in try db.run("UPDATE users SET status = 'suspended' WHERE id = ?1", [.text(id)]) }
        let reply = await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now, nonce: "n-2")), nonce: "n-2")
        #expect(reply.status == 403 && reply.errorCode == "CA024", "\(reply.text)")
    }

    @Test("the retention sweep deletes nonces once their token expired")
    func noncePurge() async throws {
        let f = try await OIDCFixture.make()
        #expect(await f.signIn(OIDCMint.rs256(OIDCMint.claims(now: f.now))).status == 201)
        let now = f.now
        let early = try await f.h.database.write { db in try Retention.sweep(at: now + 3_600_000, on: db) }
        #expect(early.expiredNonces == 0)
        let late = try await f.h.database.write { db in try Retention.sweep(at: now + 3_661_000, on: db) }
        #expect(late.expiredNonces == 1)
    }
}
