import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// Merging an anonymous account into an existing one (docs/apps.md#merging-into-an-existing-account):
/// the explicit `merge: true` step, by the existing account's password or its Apple/Google identity.
@Suite("Anonymous merge — into the account the email or identity already has, in one transaction")
struct AccountMergeTests {
    static let alarmB = PersonalAlarmTests.alarmB

    func start(_ h: AppHarness) async throws -> (token: String, id: String) {
        let reply = try await h.expect(201, .post, "/v1/auth/anonymous", json: "{}")
        return (try #require(reply.json["token"] as? String), try #require((reply.json["user"] as? [String: Any])?["id"] as? String))
    }

    func device(_ h: AppHarness, _ id: String, byte: String, token: String) async throws {
        try await h.expect(
            201, .put, "/v1/me/devices/\(id)",
            json: #"{"platform":"ios","provider":"apns","token":"\#(String(repeating: byte, count: 32))"}"#, token: token)
    }

    @Test("by password: alarms by last-write-wins, newer settings, devices, memberships move; the anonymous account is gone")
    func byPassword() async throws {
        let h = try AppHarness(defaultTier: .premium)
        h.clock.set(Timestamp.parse("2026-02-06T09:00:00.000Z")!)
        let ana = try await h.register("ana@example.com")
        let owner = try await h.register("owner@example.com")
        let household = try await h.createGroup(token: owner.token)
        let both = try await h.createGroup(token: owner.token, name: "Both")
        #expect(await h.join(try await h.inviteCode(both, token: owner.token), token: ana.token).status == 200)
        try await h.expect(201, .put, "/v1/me/alarms/\(Self.alarmB)", json: PersonalAlarmTests.body("Gym"), token: ana.token)
        try await h.expect(200, .patch, "/v1/me/settings", json: #"{"default_snooze_minutes":10}"#, token: ana.token)
        try await device(h, "tablet", byte: "cd", token: ana.token)

        h.clock.advance(by: 60_000)
        let (anon, anonID) = try await start(h)
        try await h.expect(201, .put, "/v1/me/alarms/\(PersonalAlarmTests.alarmA)", json: PersonalAlarmTests.body("Rent"), token: anon)
        try await h.expect(201, .put, "/v1/me/alarms/\(Self.alarmB)", json: PersonalAlarmTests.body("Gym (phone)"), token: anon)
        try await h.expect(200, .patch, "/v1/me/settings", json: #"{"default_snooze_minutes":15}"#, token: anon)
        try await device(h, "phone", byte: "ab", token: anon)
        #expect(await h.join(try await h.inviteCode(household, token: owner.token), token: anon).status == 200)
        #expect(await h.join(try await h.inviteCode(both, token: owner.token), token: anon).status == 200)
        let mine = try await h.createGroup(token: anon, name: "Mine")

        // Without merge: 409 EMAIL_TAKEN offering it; a wrong password: 401 and nothing changes.
        let taken = await h.send(.post, "/v1/me/upgrade", json: #"{"email":"ana@example.com","password":"whatever1"}"#, token: anon)
        #expect(taken.status == 409 && taken.errorCode == "CA022" && taken.text.contains("merge"))
        let wrong = await h.send(
            .post, "/v1/me/upgrade", json: #"{"email":"ana@example.com","password":"wrong horse","merge":true}"#, token: anon)
        #expect(wrong.status == 401 && wrong.errorCode == "CA021")
        #expect(try await h.expect(200, .get, "/v1/me", token: anon).json["anonymous"] as? Bool == true)

        // As a phone's offline queue sends it: with an Idempotency-Key.
        let merged = await h.send(
            .post, "/v1/me/upgrade", json: #"{"email":"Ana@example.com","password":"correct horse","merge":true}"#, token: anon,
            headers: [("Idempotency-Key", "merge-1")])
        #expect(merged.status == 200, "\(merged.text)")
        #expect((merged.json["user"] as? [String: Any])?["id"] as? String == ana.id)
        let token = try #require(merged.json["token"] as? String)
        #expect(await h.send(.get, "/v1/me", token: anon).status == 401, "the anonymous account and its sessions are gone")
        #expect(try h.database.readSync { db in try AccountStore.user(id: anonID, on: db) } == nil)

        let alarms = try await h.expect(200, .get, "/v1/me/alarms", token: token).text
        #expect(alarms.contains("Rent") && alarms.contains("Gym (phone)"), "the later edit wins")
        let conflicts = try await h.expect(200, .get, "/v1/me/alarms/\(Self.alarmB)/conflicts", token: token).text
        #expect(conflicts.contains(#""Gym""#), "the loser is archived")
        #expect(try await h.expect(200, .get, "/v1/me/settings", token: token).json["default_snooze_minutes"] as? Int == 15)
        let devices = try h.database.readSync { db in try DeviceStore.devices(userID: ana.id, on: db) }.map(\.deviceID)
        #expect(Set(devices) == ["phone", "tablet"])
        let groups = try await h.expect(200, .get, "/v1/groups", token: token).text
        #expect(groups.contains(household) && groups.contains(both))
        let detail = try await h.expect(200, .get, "/v1/groups/\(both)", token: owner.token)
        #expect(detail.object("group")?["member_count"] as? Int == 2, "already a member: one seat, the anonymous one's freed")
        let joined = try await h.expect(200, .get, "/v1/groups/\(household)", token: owner.token)
        #expect(joined.object("group")?["member_count"] as? Int == 2)
        // The group the anonymous account owned is the existing account's now, with one member.
        let owned = try await h.expect(200, .get, "/v1/groups/\(mine)", token: token)
        #expect(owned.object("group")?["owner_id"] as? String == ana.id, "\(owned.text)")
        #expect(owned.object("group")?["member_count"] as? Int == 1)
    }

    @Test("by Apple/Google: merge: true with the identity's token merges into its account, or into the verified email's and links it")
    func byIdentity() async throws {
        let f = try await OIDCFixture.make { $0.defaultTier = .plus }
        let h = f.h
        func signIn(_ claims: [String: Any], _ nonce: String, bearer: String?, merge: Bool) async -> Reply {
            var object: [String: Any] = ["provider": "google", "id_token": OIDCMint.rs256(claims), "nonce": nonce]
            if merge { object["merge"] = true }
            let body = try! JSONSerialization.data(withJSONObject: object)
            return await h.send(.post, "/v1/auth/oidc", json: String(decoding: body, as: UTF8.self), token: bearer)
        }
        let signedUp = await signIn(OIDCMint.claims(now: f.now, nonce: "s-1"), "s-1", bearer: nil, merge: false)
        let anaID = try #require((signedUp.json["user"] as? [String: Any])?["id"] as? String)

        let (anon, _) = try await start(h)
        try await h.expect(201, .put, "/v1/me/alarms/\(PersonalAlarmTests.alarmA)", json: PersonalAlarmTests.body("Rent"), token: anon)
        let merged = await signIn(OIDCMint.claims(now: f.now, nonce: "m-1"), "m-1", bearer: anon, merge: true)
        #expect(merged.status == 200, "\(merged.text)")
        #expect((merged.json["user"] as? [String: Any])?["id"] as? String == anaID)
        let token = try #require(merged.json["token"] as? String)
        #expect(try await h.expect(200, .get, "/v1/me/alarms", token: token).text.contains("Rent"))
        #expect(await h.send(.get, "/v1/me", token: anon).status == 401)

        // By email: carol has a verified password account; Google vouches for the same address.
        let carol = try await h.register("carol@example.com")
        let (anon2, _) = try await start(h)
        let claims = OIDCMint.claims(now: f.now, subject: "g-3003", email: "carol@example.com", nonce: "m-2")
        #expect(await signIn(claims, "m-2", bearer: anon2, merge: false).errorCode == "CA075")
        let byEmail = await signIn(claims, "m-2", bearer: anon2, merge: true)
        #expect(byEmail.status == 200 && (byEmail.json["user"] as? [String: Any])?["id"] as? String == carol.id, "\(byEmail.text)")
        let identities = try await h.expect(200, .get, "/v1/me/identities", token: carol.token).json
        #expect((identities["identities"] as? [[String: Any]])?.map { $0["provider"] as? String } == ["google"])
        #expect(try f.count("SELECT COUNT(*) AS n FROM users WHERE anonymous_ms IS NOT NULL AND deleted_ms IS NULL") == 0)
    }

    @Test("one transaction: a merge refused part-way (the existing account's alarm limit) leaves both accounts as they were")
    func atomic() async throws {
        let h = try AppHarness(defaultTier: .plus)
        h.clock.set(Timestamp.parse("2026-02-06T09:00:00.000Z")!)
        let ana = try await h.register("ana@example.com")
        let (anon, anonID) = try await start(h)
        try await h.expect(200, .patch, "/v1/me/settings", json: #"{"default_snooze_minutes":15}"#, token: anon)
        try await device(h, "phone", byte: "ab", token: anon)
        try await h.expect(201, .put, "/v1/me/alarms/\(PersonalAlarmTests.alarmA)", json: PersonalAlarmTests.body("Rent"), token: anon)
        try await h.expect(201, .put, "/v1/me/alarms/\(Self.alarmB)", json: PersonalAlarmTests.body("Gym"), token: anon)
        // The existing account one alarm short of its limit: the anonymous account's second does not fit.
        let now = h.clock.nowMilliseconds()
        let anaID = ana.id
        let timing = AlarmTiming(
            schedule: Schedule(.customDays(intervalDays: 1), startDate: try #require(LocalDate(year: 2026, month: 2, day: 1))),
            timesOfDay: [try #require(TimeOfDay(hour: 10, minute: 0))], timezone: "UTC")
        let edit = PersonalAlarmStore.Edit(
            settings: AlarmSettings(title: "Filler", timing: timing), isEnabled: true, vibrationEnabled: true, sortOrder: 0,
            editedAt: Timestamp(milliseconds: now))
        try await h.database.write { db in
            for _ in 0..<(PersonalAlarmRules.maxAlarmsPerUser - 1) {
                _ = try PersonalAlarmStore.put(
                    userID: anaID, alarmID: UUID().uuidString.lowercased(), edit: edit, expectedVersion: nil, at: now, on: db)
            }
        }
        let refused = await h.send(
            .post, "/v1/me/upgrade", json: #"{"email":"ana@example.com","password":"correct horse","merge":true}"#, token: anon)
        #expect(refused.status == 403 && refused.errorCode == "CA001", "\(refused.text)")
        #expect(try await h.expect(200, .get, "/v1/me", token: anon).json["id"] as? String == anonID)
        #expect(try await h.expect(200, .get, "/v1/me/settings", token: anon).json["default_snooze_minutes"] as? Int == 15)
        #expect(try h.database.readSync { db in try DeviceStore.devices(userID: anonID, on: db) }.count == 1)
        #expect(try h.database.readSync { db in try DeviceStore.devices(userID: anaID, on: db) }.isEmpty)
        let anaAlarms = try h.database.readSync { db in try PersonalAlarmStore.live(userID: anaID, on: db) }
        #expect(anaAlarms.count == PersonalAlarmRules.maxAlarmsPerUser - 1 && !anaAlarms.contains { $0.settings.title == "Rent" })
        #expect(try h.database.readSync { db in try PersonalAlarmStore.live(userID: anonID, on: db) }.count == 2)
    }
}
