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

    @Test("eight creations by one account at once on two instances: five created, three refused by its 5-a-minute window")
    func creationsByOneAccountKeepItsWindow() async throws {
        let f = try await SharedAlarmFixture.make(members: 0)
        let outcomes = try await Self.createAtOnce(8, f, actors: [f.owner, f.owner])
        #expect(outcomes.filter { $0 == "created" }.count == 5, "\(outcomes)")
        #expect(outcomes.filter { $0 == "RATE_LIMITED" }.count == 3, "\(outcomes)")
        #expect(try await Self.liveAlarms(f) == 5)
    }

    @Test("two admins creating six alarms at once, on two instances, in a group two short of its limit: two created, four refused")
    func creationsInOneGroupKeepItsLimit() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let admin = f.members[0]
        try await f.h.expect(200, .patch, "\(f.g)/members/\(admin.id)", json: #"{"role":"admin"}"#, token: f.owner.token)
        let (group, owner) = (f.groupID, f.owner.id)
        try await f.h.database.write { db in
            for i in 0..<(SharedAlarmRules.maxAlarmsPerGroup - 2) {
                try db.run(
                    """
                    INSERT INTO shared_alarms (id, group_id, created_by, document, grace_ms, version, created_ms, updated_ms)
                    VALUES (?1, ?2, ?3, '{}', 1, 1, 0, 0)
                    """, [.text("00000000-0000-4000-8000-\(String(format: "%012d", i))"), .text(group), .text(owner)])
            }
        }
        let outcomes = try await Self.createAtOnce(6, f, actors: [f.owner, admin])
        #expect(outcomes.filter { $0 == "created" }.count == 2, "\(outcomes)")
        #expect(outcomes.filter { $0 == "ALARM_LIMIT_REACHED" }.count == 4, "\(outcomes)")
        #expect(try await Self.liveAlarms(f) == Int64(SharedAlarmRules.maxAlarmsPerGroup))
        let created = try await f.h.database.read { db in
            try db.scalar("SELECT COUNT(*) FROM change_log WHERE kind = 'shared_alarm' AND op = 'added'")
        }
        #expect(created == .integer(2), "one change per alarm created")
    }

    /// `count` creations at once in the fixture's group, taking turns through the API and through
    /// another instance's writer (the store call the route makes), by `actors` in turn: each
    /// "created" or the error's wire name.
    static func createAtOnce(_ count: Int, _ f: SharedAlarmFixture, actors: [GroupFixture.Account]) async throws -> [String] {
        let other = try f.h.openAnotherHandle()
        defer { other.close() }
        let now = f.h.clock.nowMilliseconds()
        let timing = AlarmTiming(
            schedule: Schedule(.customDays(intervalDays: 1), startDate: try #require(LocalDate(year: 2026, month: 2, day: 1))),
            timesOfDay: [try #require(TimeOfDay(hour: 10, minute: 0))], timezone: "UTC")
        let settings = AlarmSettings(title: "Other instance", timing: timing)
        let creations = (0..<count).map { index in
            Task { () -> String in
                let actor = actors[index % actors.count]
                if index % 2 == 0 {
                    let json = #"{"title":"API \#(index)",\#(SharedAlarmFixture.dailyTen)}"#
                    let reply = await f.h.send(.post, "\(f.g)/alarms", json: json, token: actor.token)
                    return reply.status == 201 ? "created" : reply.errorName ?? "\(reply.status)"
                }
                do {
                    _ = try await other.write(.concurrent) { db in
                        try SharedAlarmStore.create(groupID: f.groupID, actorID: actor.id, settings: settings, at: now, on: db)
                    }
                    return "created"
                } catch DomainError.rateLimited {
                    return "RATE_LIMITED"
                } catch DomainError.alarmLimitReached {
                    return "ALARM_LIMIT_REACHED"
                }
            }
        }
        var outcomes: [String] = []
        for creation in creations { outcomes.append(try await creation.value) }
        return outcomes
    }

    static func liveAlarms(_ f: SharedAlarmFixture) async throws -> Int64? {
        let group = f.groupID
        return try await f.h.database.read { db in
            try db.queryOne("SELECT COUNT(*) AS n FROM shared_alarms WHERE group_id = ?1 AND deleted_ms IS NULL", [.text(group)])?
                .int("n")
        }
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
