import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// Anonymous start and upgrade in place (docs/apps.md#anonymous-start): what an anonymous account may
/// and may not do, the per-address registration limit, the upgrade keeping the id and everything the
/// account holds, a taken address refused with nothing changed, and the idle purge on the injected
/// clock. Runs on both engines (`CHRONIR_TEST_BACKEND`).
@Suite("Anonymous accounts — start, limits, upgrade in place, idle purge")
struct AnonymousAccountTests {
    /// `POST /v1/auth/anonymous` with `json` (none: an empty body) → (token, user document).
    static func start(_ h: AppHarness, json: String? = nil, ip: String = "127.0.0.1") async throws -> (String, [String: Any]) {
        let reply = await h.send(.post, "/v1/auth/anonymous", json: json, remoteAddress: ip)
        guard reply.status == 201, let token = reply.json["token"] as? String, let user = reply.object("user") else {
            throw AppHarness.HarnessError.unexpected(reply.text)
        }
        return (token, user)
    }

    @Test("an empty body starts an account with no email; it keeps personal alarms and joins by code, but cannot invite")
    func start() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let (token, user) = try await Self.start(h)
        #expect(user["anonymous"] as? Bool == true)
        #expect(user["email"] is NSNull)
        #expect(user["display_name"] as? String == "Guest")
        #expect(user["migrated_at"] is NSNull)
        let me = try await h.expect(200, .get, "/v1/me", token: token).json
        #expect(me["id"] as? String == user["id"] as? String && me["anonymous"] as? Bool == true)
        let (_, named) = try await Self.start(h, json: #"{"display_name":"Ana","timezone":"Europe/Lisbon"}"#)
        #expect(named["display_name"] as? String == "Ana" && named["timezone"] as? String == "Europe/Lisbon")
        #expect(await h.send(.post, "/v1/auth/anonymous", json: #"{"email":"x@example.com"}"#).status == 422)

        try await h.expect(201, .put, "/v1/me/alarms/\(PersonalAlarmTests.alarmA)", json: PersonalAlarmTests.body("Rent"), token: token)
        let owner = try await h.register("owner@example.com")
        let groupID = try await h.createGroup(token: owner.token)
        let code = try await h.inviteCode(groupID, token: owner.token)
        #expect(await h.join(code, token: token).status == 200)
        let invite = await h.send(.post, "/v1/groups/\(groupID)/invitations", json: #"{"role":"member"}"#, token: token)
        #expect(invite.status == 403 && invite.errorCode == "CA007", "\(invite.text)")
        let verify = await h.send(.post, "/v1/me/email/verification", token: token)
        #expect(verify.status == 403 && verify.errorCode == "CA007")
        // No address: nobody can sign in as it with a password.
        let placeholder = "anonymous+\(user["id"] as? String ?? "")@invalid"
        #expect(await h.login(placeholder, password: "").status != 200)
    }

    @Test("the per-address registration limit counts anonymous starts: past it, 429 for starts and registrations alike")
    func limit() async throws {
        let h = try AppHarness(defaultTier: .premium) { $0.registrationLimits = RegistrationLimits(perNetworkPerHour: 3) }
        for _ in 0..<3 { _ = try await Self.start(h, ip: "198.51.100.7") }
        let refused = await h.send(.post, "/v1/auth/anonymous", remoteAddress: "198.51.100.7")
        #expect(refused.status == 429 && refused.errorCode == "CA020" && refused.header("Retry-After") != nil)
        let register = await h.send(
            .post, "/v1/auth/register", json: #"{"email":"r@example.com","password":"correct horse","display_name":"R"}"#,
            remoteAddress: "198.51.100.7")
        #expect(register.status == 429)
        _ = try await Self.start(h, ip: "198.51.100.8")
    }

    @Test("upgrade keeps the id, memberships, alarms, devices and session; records migrated_at; then inviting works")
    func upgrade() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let (token, user) = try await Self.start(h)
        let id = try #require(user["id"] as? String)
        try await h.expect(201, .put, "/v1/me/alarms/\(PersonalAlarmTests.alarmA)", json: PersonalAlarmTests.body("Rent"), token: token)
        try await h.expect(
            201, .put, "/v1/me/devices/phone",
            json: #"{"platform":"ios","provider":"apns","token":"\#(String(repeating: "ab", count: 32))"}"#, token: token)
        let owner = try await h.register("owner@example.com")
        let groupID = try await h.createGroup(token: owner.token)
        #expect(await h.join(try await h.inviteCode(groupID, token: owner.token), token: token).status == 200)

        h.clock.advance(by: 5_000)
        let upgraded = try await h.expect(
            200, .post, "/v1/me/upgrade", json: #"{"email":"Ana@Example.com","password":"correct horse","display_name":"Ana"}"#,
            token: token
        ).json
        #expect(upgraded["id"] as? String == id)
        #expect(upgraded["anonymous"] as? Bool == false)
        #expect(upgraded["email"] as? String == "ana@example.com")
        #expect(upgraded["email_verified"] as? Bool == false)
        #expect(upgraded["migrated_at"] as? String == Timestamp(milliseconds: h.clock.nowMilliseconds()).description)
        #expect(upgraded["display_name"] as? String == "Ana")

        // Same session, same data.
        let alarm = try await h.expect(200, .get, "/v1/me/alarms/\(PersonalAlarmTests.alarmA)", token: token).json
        #expect(alarm["title"] as? String == "Rent")
        #expect(try await h.expect(200, .get, "/v1/groups", token: token).text.contains(groupID))
        let detail = try await h.expect(200, .get, "/v1/groups/\(groupID)", token: owner.token).text
        #expect(detail.contains(#""display_name":"Ana""#), "the member name follows the new display name")
        #expect(try h.database.readSync { db in try DeviceStore.devices(userID: id, on: db) }.count == 1)
        // A password sign-in works now; the placeholder is gone; inviting is allowed.
        let login = await h.login("ana@example.com")
        #expect(login.status == 200 && (login.json["user"] as? [String: Any])?["id"] as? String == id)
        let own = try await h.createGroup(token: token, name: "Mine")
        try await h.expect(201, .post, "/v1/groups/\(own)/invitations", json: #"{"role":"member"}"#, token: token)
        // Only once: the account is no longer anonymous.
        let again = await h.send(.post, "/v1/me/upgrade", json: #"{"email":"b@example.com","password":"correct horse"}"#, token: token)
        #expect(again.status == 403 && again.errorCode == "CA007")
    }

    @Test("an address that has an account: 409 CA022 EMAIL_TAKEN and nothing changes")
    func taken() async throws {
        let h = try AppHarness(defaultTier: .premium)
        _ = try await h.register("ana@example.com")
        let (token, user) = try await Self.start(h)
        let refused = await h.send(.post, "/v1/me/upgrade", json: #"{"email":"ana@example.com","password":"correct horse"}"#, token: token)
        #expect(refused.status == 409 && refused.errorCode == "CA022" && refused.errorField == "email", "\(refused.text)")
        let me = try await h.expect(200, .get, "/v1/me", token: token).json
        #expect(me["anonymous"] as? Bool == true && me["version"] as? Int == user["version"] as? Int)
        let short = await h.send(.post, "/v1/me/upgrade", json: #"{"email":"new@example.com","password":"short"}"#, token: token)
        #expect(short.status == 422)
    }

    @Test("idle anonymous accounts are deleted after exactly 90 days unused; used or real accounts stay")
    func idlePurge() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let started = h.clock.nowMilliseconds()
        let (_, idle) = try await Self.start(h)
        let (activeToken, active) = try await Self.start(h)
        let real = try await h.register("real@example.com")
        h.clock.advance(by: 10 * 86_400_000)
        #expect(await h.send(.get, "/v1/me", token: activeToken).status == 200)  // refreshes last_seen
        let cutoff = started + AccountStore.anonymousIdleMilliseconds
        let kept = try h.database.writeSync { db in try Retention.sweep(at: cutoff, on: db) }
        #expect(kept.idleAnonymousAccounts == 0)
        let swept = try h.database.writeSync { db in try Retention.sweep(at: cutoff + 1, on: db) }
        #expect(swept.idleAnonymousAccounts == 1)
        let live = try h.database.readSync { db in
            try db.query("SELECT id FROM users WHERE deleted_ms IS NULL ORDER BY id").compactMap { $0.string("id") }
        }
        #expect(Set(live) == Set([active["id"] as? String ?? "", real.id]))
        #expect(!live.contains(idle["id"] as? String ?? ""))
    }
}
