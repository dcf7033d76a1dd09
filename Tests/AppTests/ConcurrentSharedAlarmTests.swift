import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// A shared alarm's edit and delete are `.concurrent` writes (`SharedAlarmStore.update`, `delete`):
/// the alarm row is locked before anything is decided, so writes to one alarm that arrive at once on
/// two instances still run one after the other — each on what the one before it committed — while
/// writes to other groups' alarms run beside them.
@Suite("Concurrent shared alarm writes: two instances writing one alarm at once lose nothing")
struct ConcurrentSharedAlarmTests {
    @Test("eight edits of one alarm at once, half through the API, half through another instance's writer: versions 2…9, once each")
    func editsOnTwoInstancesRunOneAfterTheOther() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let alarmID = try #require(try await f.createAlarm()["id"] as? String)
        let other = try f.h.openAnotherHandle()
        defer { other.close() }
        let now = f.h.clock.nowMilliseconds()
        let edits = (0..<8).map { index in
            Task { () -> Int64 in
                if index % 2 == 0 {
                    let reply = await f.h.send(
                        .patch, "\(f.g)/alarms/\(alarmID)", json: #"{"title":"API \#(index)"}"#, token: f.owner.token)
                    return (reply.json["version"] as? Int).map(Int64.init) ?? -Int64(reply.status)
                }
                // Another instance: its own writer connections, the same store call the route makes.
                let edited = try await other.write(.concurrent) { db in
                    try SharedAlarmStore.update(
                        groupID: f.groupID, alarmID: alarmID, actorID: f.owner.id, expectedVersion: nil, at: now, on: db
                    ) { $0.title = "Other \(index)" }
                }
                return edited.alarm.version
            }
        }
        var versions: [Int64] = []
        for edit in edits { versions.append(try await edit.value) }
        #expect(versions.sorted() == Array(2...9), "each edit read the one before it: \(versions)")
        #expect(try await f.alarm(alarmID)["version"] as? Int == 9)
        #expect(try await Self.loggedVersions(alarmID, f.h) == Array(1...9), "the change log holds every version once, in order")
        let report = try await f.h.database.read { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == nil)
    }

    @Test("a delete racing six edits on two instances: the alarm stays deleted, the change log ends with its removal")
    func deleteRacingEditsStaysDeleted() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let alarmID = try #require(try await f.createAlarm()["id"] as? String)
        let other = try f.h.openAnotherHandle()
        defer { other.close() }
        let now = f.h.clock.nowMilliseconds()
        let edits = (0..<6).map { index in
            Task { () -> Bool in
                if index % 2 == 0 {
                    let reply = await f.h.send(
                        .patch, "\(f.g)/alarms/\(alarmID)", json: #"{"title":"API \#(index)"}"#, token: f.owner.token)
                    #expect(reply.status == 200 || reply.status == 404, "\(reply.status) \(reply.text)")
                    return reply.status == 200
                }
                do {
                    _ = try await other.write(.concurrent) { db in
                        try SharedAlarmStore.update(
                            groupID: f.groupID, alarmID: alarmID, actorID: f.owner.id, expectedVersion: nil, at: now, on: db
                        ) { $0.title = "Other \(index)" }
                    }
                    return true
                } catch DomainError.alarmNotFound {
                    return false
                }
            }
        }
        let deleted = await f.h.send(.delete, "\(f.g)/alarms/\(alarmID)", token: f.owner.token)
        var applied = 0
        for edit in edits where try await edit.value { applied += 1 }
        #expect(deleted.status == 204)
        try await f.h.expect(404, .get, "\(f.g)/alarms/\(alarmID)", token: f.owner.token)
        let stored = try await f.h.database.read { db in
            try db.queryOne("SELECT deleted_ms FROM shared_alarms WHERE id = ?1", [.text(alarmID)])?.int("deleted_ms")
        }
        #expect(stored != nil, "no edit wrote the alarm back alive")
        let ops = try await f.h.database.read { db in
            try db.query("SELECT op FROM change_log WHERE kind = 'shared_alarm' AND entity_id = ?1 ORDER BY seq", [.text(alarmID)])
                .compactMap { $0.string("op") }
        }
        #expect(ops.last == "removed", "the removal is the alarm's last change: \(ops)")
        #expect(ops.count == applied + 2, "the creation, each applied edit once, the removal: \(ops)")
        #expect(try await Self.loggedVersions(alarmID, f.h) == Array(1...(applied + 1)))
    }

    /// The `version` of each `shared_alarm` document the change log holds for the alarm, in seq order
    /// (the removal carries none).
    static func loggedVersions(_ alarmID: String, _ h: AppHarness) async throws -> [Int] {
        try await h.database.read { db in
            try db.query(
                "SELECT document FROM change_log WHERE kind = 'shared_alarm' AND entity_id = ?1 AND document IS NOT NULL ORDER BY seq",
                [.text(alarmID)]
            ).compactMap { $0.string("document") }.map { text in
                let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
                return object?["version"] as? Int ?? -1
            }
        }
    }
}
