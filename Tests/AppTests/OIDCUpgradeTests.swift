import Domain
import Foundation
import Identity
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// Upgrading an anonymous account by Sign in with Apple/Google (docs/apps.md#anonymous-start):
/// `POST /v1/auth/oidc` with the anonymous session keeps the account, against the loopback JWKS fake.
@Suite("Anonymous upgrade by Sign in with Apple/Google — same account, or 409 when the identity has one")
struct OIDCUpgradeTests {
    /// `POST /v1/auth/oidc` with `token` as the bearer.
    func signIn(_ f: OIDCFixture, _ idToken: String, nonce: String, bearer: String?) async -> Reply {
        let body = try! JSONSerialization.data(withJSONObject: ["provider": "google", "id_token": idToken, "nonce": nonce])
        return await f.h.send(.post, "/v1/auth/oidc", json: String(decoding: body, as: UTF8.self), token: bearer)
    }

    func start(_ h: AppHarness) async throws -> (token: String, id: String) {
        let reply = try await h.expect(201, .post, "/v1/auth/anonymous", json: "{}")
        let token = try #require(reply.json["token"] as? String)
        let id = try #require((reply.json["user"] as? [String: Any])?["id"] as? String)
        return (token, id)
    }

    @Test("with the anonymous session: the same id, memberships, alarms, devices, settings; migrated_at; then it signs in by Google")
    func upgradeInPlace() async throws {
        let f = try await OIDCFixture.make { $0.defaultTier = .premium }
        let h = f.h
        let (token, id) = try await start(h)
        try await h.expect(201, .put, "/v1/me/alarms/\(PersonalAlarmTests.alarmA)", json: PersonalAlarmTests.body("Rent"), token: token)
        try await h.expect(
            201, .put, "/v1/me/devices/phone",
            json: #"{"platform":"ios","provider":"apns","token":"\#(String(repeating: "ab", count: 32))"}"#, token: token)
        try await h.expect(200, .patch, "/v1/me/settings", json: #"{"default_snooze_minutes":15}"#, token: token)
        let owner = try await h.register("owner@example.com")
        let groupID = try await h.createGroup(token: owner.token)
        #expect(await h.join(try await h.inviteCode(groupID, token: owner.token), token: token).status == 200)

        h.clock.advance(by: 5_000)
        let reply = await signIn(f, OIDCMint.rs256(OIDCMint.claims(now: f.now, nonce: "up-1")), nonce: "up-1", bearer: token)
        #expect(reply.status == 200, "\(reply.text)")
        let user = try #require(reply.json["user"] as? [String: Any])
        #expect(user["id"] as? String == id)
        #expect(user["anonymous"] as? Bool == false)
        #expect(user["email"] as? String == "ana@example.com")
        #expect(user["email_verified"] as? Bool == true, "Google vouched for the address")
        #expect(user["migrated_at"] as? String == Timestamp(milliseconds: h.clock.nowMilliseconds()).description)
        let newToken = try #require(reply.json["token"] as? String)

        for session in [token, newToken] {
            #expect(
                try await h.expect(200, .get, "/v1/me/alarms/\(PersonalAlarmTests.alarmA)", token: session).json["title"] as? String
                    == "Rent")
            #expect(try await h.expect(200, .get, "/v1/groups", token: session).text.contains(groupID))
            #expect(try await h.expect(200, .get, "/v1/me/settings", token: session).json["default_snooze_minutes"] as? Int == 15)
        }
        #expect(try h.database.readSync { db in try DeviceStore.devices(userID: id, on: db) }.count == 1)
        let identities = try await h.expect(200, .get, "/v1/me/identities", token: token).json
        #expect((identities["identities"] as? [[String: Any]])?.map { $0["provider"] as? String } == ["google"])
        #expect(identities["has_password"] as? Bool == false)

        // A later sign-in (another phone, no session) reaches the same account.
        let again = await signIn(f, OIDCMint.rs256(OIDCMint.claims(now: f.now, nonce: "up-2")), nonce: "up-2", bearer: nil)
        #expect(again.status == 200 && (again.json["user"] as? [String: Any])?["id"] as? String == id)
        // Once upgraded, the session is no anonymous one: a sign-in with it is a plain sign-in.
        let plain = await signIn(f, OIDCMint.rs256(OIDCMint.claims(now: f.now, nonce: "up-3")), nonce: "up-3", bearer: token)
        #expect(plain.status == 200 && (plain.json["user"] as? [String: Any])?["id"] as? String == id)
        #expect(try f.count("SELECT COUNT(*) AS n FROM users") == 2)
    }

    @Test("an unverified address from the provider: upgraded with the address unverified")
    func unverified() async throws {
        let f = try await OIDCFixture.make()
        let (token, id) = try await start(f.h)
        let claims = OIDCMint.claims(now: f.now, email: "bo@example.com", verified: false, nonce: "u-1")
        let reply = await signIn(f, OIDCMint.rs256(claims), nonce: "u-1", bearer: token)
        #expect(reply.status == 200, "\(reply.text)")
        let user = try #require(reply.json["user"] as? [String: Any])
        #expect(user["id"] as? String == id && user["email_verified"] as? Bool == false && user["anonymous"] as? Bool == false)
        #expect(try f.count("SELECT COUNT(*) AS n FROM users WHERE email = 'bo@example.com' AND email_verified_ms IS NULL") == 1)
    }

    @Test("the identity or its email already has an account: 409 CA075 ACCOUNT_EXISTS and the anonymous account stays as it was")
    func exists() async throws {
        let f = try await OIDCFixture.make()
        let h = f.h
        // g-1001 (ana@) signs up by Google; carol@ registers with a password.
        #expect(await signIn(f, OIDCMint.rs256(OIDCMint.claims(now: f.now, nonce: "s-1")), nonce: "s-1", bearer: nil).status == 201)
        _ = try await h.register("carol@example.com")
        let (token, id) = try await start(h)
        let users = try f.count("SELECT COUNT(*) AS n FROM users")

        let cases: [(claims: [String: Any], nonce: String)] = [
            (OIDCMint.claims(now: f.now, nonce: "x-1"), "x-1"),  // the identity is linked
            (OIDCMint.claims(now: f.now, subject: "g-2002", email: "carol@example.com", nonce: "x-2"), "x-2"),  // the email
        ]
        for (claims, nonce) in cases {
            let reply = await signIn(f, OIDCMint.rs256(claims), nonce: nonce, bearer: token)
            #expect(reply.status == 409 && reply.errorCode == "CA075", "\(reply.text)")
            #expect(reply.json["error"] != nil || reply.json["code"] != nil)
        }
        let me = try await h.expect(200, .get, "/v1/me", token: token).json
        #expect(me["id"] as? String == id && me["anonymous"] as? Bool == true && me["migrated_at"] is NSNull)
        #expect(try f.count("SELECT COUNT(*) AS n FROM users") == users)
        #expect(try f.count("SELECT COUNT(*) AS n FROM identities") == 1)
        #expect(try f.count("SELECT COUNT(*) AS n FROM sessions WHERE user_id = '\(id)'") == 1, "no new session")
    }
}
