import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// A personal alarm's writes and the settings' are `.concurrent` (`PersonalAlarmStore.findLocked`,
/// `UserSettingsStore.update`): edits of one document that arrive at once on two instances still run
/// one after the other — each reads what the one before it committed — so none is lost and every
/// version is written once.
@Suite("Concurrent personal sync: two instances editing one alarm at once lose no edit")
struct ConcurrentPersonalSyncTests {
    @Test("eight edits of one alarm at once, half through the API, half through another instance's writer: versions 2…9, once each")
    func editsOnTwoInstancesRunOneAfterTheOther() async throws {
        let (h, phone, _) = try await PersonalAlarmTests.twoDevices()
        let alarmID = PersonalAlarmTests.alarmA
        try await h.expect(201, .put, "/v1/me/alarms/\(alarmID)", json: PersonalAlarmTests.body("Rent"), token: phone)
        let userID = try #require(try await h.expect(200, .get, "/v1/me", token: phone).json["id"] as? String)
        let other = try h.openAnotherHandle()
        defer { other.close() }
        let now = h.clock.nowMilliseconds()
        let edits = (0..<8).map { index in
            Task { () -> Int64 in
                if index % 2 == 0 {
                    let reply = await h.send(.patch, "/v1/me/alarms/\(alarmID)", json: #"{"title":"API \#(index)"}"#, token: phone)
                    return (reply.json["version"] as? Int).map(Int64.init) ?? -Int64(reply.status)
                }
                // Another instance: its own writer connections, the same store call the route makes.
                let patched = try await other.write(.concurrent) { db in
                    try PersonalAlarmStore.patch(
                        userID: userID, alarmID: alarmID, expectedVersion: nil, editedAt: Timestamp(milliseconds: now), at: now,
                        on: db
                    ) { $0.settings.title = "Other \(index)" }
                }
                return patched.alarm.version
            }
        }
        var versions: [Int64] = []
        for edit in edits { versions.append(try await edit.value) }
        #expect(versions.sorted() == Array(2...9), "each edit read the one before it: \(versions)")
        let stored = try #require(try await h.database.read { try PersonalAlarmStore.find(userID: userID, alarmID: alarmID, on: $0) })
        #expect(stored.version == 9)
        let logged = try await h.database.read { db in
            try db.query(
                "SELECT document FROM change_log WHERE kind = 'personal_alarm' AND entity_id = ?1 ORDER BY seq", [.text(alarmID)]
            ).compactMap { $0.string("document") }.map { try DocumentCoding.decode(PersonalAlarm.self, from: Array($0.utf8)).version }
        }
        #expect(logged == Array(1...9), "the change log holds every version once, in order")
        let report = try await h.database.read { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == nil)
    }

    @Test("eight changes of the settings at once, half through the API, half through another instance's writer: versions 1…8, once each")
    func settingsChangesOnTwoInstancesRunOneAfterTheOther() async throws {
        let (h, phone, _) = try await PersonalAlarmTests.twoDevices()
        let userID = try #require(try await h.expect(200, .get, "/v1/me", token: phone).json["id"] as? String)
        let other = try h.openAnotherHandle()
        defer { other.close() }
        let now = h.clock.nowMilliseconds()
        let changes = (1...8).map { minutes in
            Task { () -> Int64 in
                if minutes % 2 == 0 {
                    let reply = await h.send(.patch, "/v1/me/settings", json: #"{"default_snooze_minutes":\#(minutes)}"#, token: phone)
                    return (reply.json["version"] as? Int).map(Int64.init) ?? -Int64(reply.status)
                }
                let changed = try await other.write(.concurrent) { db in
                    try UserSettingsStore.update(userID: userID, expectedVersion: nil, at: now, on: db) {
                        $0.defaultSnoozeMinutes = minutes
                    }
                }
                return changed.version
            }
        }
        var versions: [Int64] = []
        for change in changes { versions.append(try await change.value) }
        #expect(versions.sorted() == Array(1...8), "each change read the one before it: \(versions)")
        #expect(try await h.expect(200, .get, "/v1/me/settings", token: phone).json["version"] as? Int == 8)
        let logged = try await h.database.read { db in
            try db.query("SELECT document FROM change_log WHERE kind = 'settings' AND entity_id = ?1 ORDER BY seq", [.text(userID)])
                .compactMap { $0.string("document") }.map { try DocumentCoding.decode(UserSettings.self, from: Array($0.utf8)).version }
        }
        #expect(logged == Array(1...8), "the change log holds every version once, in order")
    }
}
