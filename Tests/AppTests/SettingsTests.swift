import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// Synced settings (docs/personal-sync.md#settings): one document per account, versions,
/// strict bodies, limits, and the change reaching the user's other sessions over the change log.
@Suite("Settings — defaults, PATCH with versions, limits, sync to the user topic")
struct SettingsTests {
    @Test("an account that never wrote reads the defaults at version 0; PATCH changes only what it names")
    func defaultsAndPatch() async throws {
        let h = try AppHarness()
        let (phone, _) = try await h.register("ana@example.com")
        let fresh = try await h.expect(200, .get, "/v1/me/settings", token: phone)
        #expect(fresh.json["version"] as? Int == 0)
        #expect(fresh.json["updated_at"] is NSNull)
        #expect(fresh.json["default_snooze_minutes"] as? Int == 60)
        #expect(fresh.json["theme_mode"] as? String == "system")
        #expect(fresh.json["alarm_volume_override"] is NSNull)

        let changed = try await h.expect(
            200, .patch, "/v1/me/settings",
            json: #"{"theme_mode":"dark","alarm_volume_override":0.5,"default_persistence":"notification_only"}"#, token: phone)
        #expect(changed.json["version"] as? Int == 1)
        #expect(changed.json["theme_mode"] as? String == "dark")
        #expect(changed.json["alarm_volume_override"] as? Double == 0.5)
        #expect(changed.json["default_persistence"] as? String == "notification", "the seed's alias reads as its canonical name")
        #expect(changed.json["default_snooze_minutes"] as? Int == 60, "fields the PATCH did not name stay")

        // The other device reads the same document.
        let tablet = try #require(await h.login("ana@example.com").json["token"] as? String)
        let other = try await h.expect(200, .get, "/v1/me/settings", token: tablet)
        #expect(other.json["theme_mode"] as? String == "dark")
        #expect(other.json["version"] as? Int == 1)

        // null clears the override; an unchanged PATCH writes nothing (version stays).
        let cleared = try await h.expect(200, .patch, "/v1/me/settings", json: #"{"alarm_volume_override":null}"#, token: tablet)
        #expect(cleared.json["alarm_volume_override"] is NSNull)
        #expect(cleared.json["version"] as? Int == 2)
        let same = try await h.expect(200, .patch, "/v1/me/settings", json: #"{"theme_mode":"dark"}"#, token: phone)
        #expect(same.json["version"] as? Int == 2)

        // Another account's settings are untouched.
        let (bo, _) = try await h.register("bo@example.com")
        #expect(try await h.expect(200, .get, "/v1/me/settings", token: bo).json["theme_mode"] as? String == "system")
    }

    @Test("a stale version is 409 CA010 with the current document, and changes nothing")
    func staleVersion() async throws {
        let h = try AppHarness()
        let (phone, _) = try await h.register("ana@example.com")
        _ = try await h.expect(200, .patch, "/v1/me/settings", json: #"{"version":0,"use_24_hour_format":true}"#, token: phone)
        let stale = try await h.expect(409, .patch, "/v1/me/settings", json: #"{"version":0,"use_24_hour_format":false}"#, token: phone)
        #expect(stale.errorCode == "CA010")
        #expect(stale.text.contains(#""use_24_hour_format":true"#))
        let now = try await h.expect(200, .get, "/v1/me/settings", token: phone)
        #expect(now.json["use_24_hour_format"] as? Bool == true)
        #expect(now.json["version"] as? Int == 1)
    }

    @Test("limits and strict bodies: each bad or unknown field is 422 naming it, and nothing is written")
    func limits() async throws {
        let h = try AppHarness()
        let (phone, _) = try await h.register("ana@example.com")
        let bad: [(String, Int, String)] = [
            (#"{"default_snooze_minutes":0}"#, 422, "default_snooze_minutes"),
            (#"{"default_snooze_minutes":525601}"#, 422, "default_snooze_minutes"),
            (#"{"pre_alarm_warning_hours":721}"#, 422, "pre_alarm_warning_hours"),
            (#"{"alarm_volume_override":1.5}"#, 422, "alarm_volume_override"),
            (#"{"sound_id":""}"#, 422, "sound_id"),
            (#"{"sound_id":"\#(String(repeating: "s", count: 101))"}"#, 422, "sound_id"),
            (#"{"theme_mode":"sepia"}"#, 422, "theme_mode"),
            (#"{"timezone":"Europe/Paris"}"#, 422, "timezone"),
            (#"{"haptic_feedback":"yes"}"#, 422, "haptic_feedback"),
        ]
        for (json, status, field) in bad {
            let answer = try await h.expect(status, .patch, "/v1/me/settings", json: json, token: phone)
            if !field.isEmpty { #expect(answer.errorField == field, "\(json)") }
        }
        let after = try await h.expect(200, .get, "/v1/me/settings", token: phone)
        #expect(after.json["version"] as? Int == 0, "no rejected PATCH wrote anything")
    }

    @Test(
        "every write appends a settings change on the user's topic; account deletion erases settings and personal alarms, log documents too"
    )
    func changeLogAndErasure() async throws {
        let h = try AppHarness(defaultTier: .plus)
        let (phone, userID) = try await h.register("ana@example.com")
        _ = try await h.expect(200, .patch, "/v1/me/settings", json: #"{"theme_mode":"light"}"#, token: phone)
        _ = try await h.expect(200, .patch, "/v1/me/settings", json: #"{"theme_mode":"dark"}"#, token: phone)
        _ = try await h.expect(
            201, .put, "/v1/me/alarms/\(PersonalAlarmTests.alarmA)", json: PersonalAlarmTests.body("Secret pills"), token: phone)
        let ops = try await h.database.read { db in
            try db.query(
                "SELECT op, document FROM change_log WHERE topic = ?1 AND kind = 'settings' ORDER BY seq",
                [.text("user:\(userID)")]
            ).map { "\($0.string("op") ?? "") \($0.string("document")?.contains(#""theme_mode":"dark""#) == true)" }
        }
        #expect(ops == ["added false", "modified true"])

        _ = try await h.expect(204, .delete, "/v1/me", token: phone)
        func count(_ sql: String) async throws -> Int64? {
            try await h.database.read { db in try db.queryOne(sql, [.text(userID), .text("user:\(userID)")])?.int("n") }
        }
        #expect(try await count("SELECT COUNT(*) AS n FROM user_settings WHERE user_id = ?1 OR ?2 = ''") == 0)
        #expect(try await count("SELECT COUNT(*) AS n FROM personal_alarms WHERE user_id = ?1 OR ?2 = ''") == 0)
        #expect(
            try await count(
                "SELECT COUNT(*) AS n FROM change_log WHERE (topic = ?2 OR ?1 = '') AND document IS NOT NULL AND kind <> 'user'") == 0,
            "the alarms' and settings' documents leave the change log too")
        #expect(try await count("SELECT COUNT(*) AS n FROM change_log WHERE document LIKE '%Secret pills%' AND ?1 <> ?2") == 0)
        let report = try h.database.readSync { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == nil, "\(report)")
    }
}
