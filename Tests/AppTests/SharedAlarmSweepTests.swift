import Domain
import Foundation
import SQLite
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// The overdue sweep (`SharedAlarmStore.sweepOverdue`) driven by the ManualClock: an occurrence still
/// open `grace_minutes` after its time is marked missed exactly once, logged as
/// `missed_alarm_followup`, and the alarm moves to its next occurrence.
@Suite("Shared alarms — overdue sweep", .serialized)
struct SharedAlarmSweepTests {
    typealias F = SharedAlarmFixture

    /// 2026-02-06T10:00:00Z.
    static let firstFireMs: Int64 = 1_770_372_000_000

    func sweep(_ f: F, at ms: Int64) throws -> Int {
        try f.h.database.writeSync { db in try SharedAlarmStore.sweepOverdue(at: ms, on: db) }
    }

    @Test("default grace 24 h: nothing before, one missed at the edge, never twice")
    func defaultGrace() async throws {
        let f = try await F.make(members: 2)
        let alarm = try await f.createAlarm(rule: "all", assignees: [f.members[0], f.members[1]])
        let id = try #require(alarm["id"] as? String)
        #expect(alarm["grace_minutes"] as? Int == 1440)
        #expect(await f.answer(id, by: f.members[0]).status == 201)
        let edge = Self.firstFireMs + 24 * 3_600_000
        #expect(try sweep(f, at: edge - 1) == 0)
        #expect(try sweep(f, at: edge) == 1)
        let batch = try f.h.lastBatch()
        #expect(batch.first?.string("event") == "missed_alarm_followup")
        #expect(batch.first?.string("actor") == "system")
        #expect(batch.map { $0.string("kind") } == ["missed_occurrence", "shared_alarm"])
        #expect(batch.first?.string("entity_id") == "\(id):\(Self.firstFireMs)")
        let missed = try #require(batch.first?.string("document"))
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(missed.utf8)) as? [String: Any])
        let occ = try #require(doc["occurrence"] as? [String: Any])
        #expect(occ["status"] as? String == "missed")
        #expect(occ["pending_uids"] as? [String] == [f.members[1].id])
        #expect(try sweep(f, at: edge) == 0)
        let now = try await f.alarm(id)
        #expect(now["next_fire_at"] as? String == F.secondFire)
        #expect(now["last_missed_at"] as? String == F.firstFire)
        #expect(now.occurrence["status"] as? String == "open")
        #expect((now.occurrence["answered"] as? [Any])?.isEmpty == true)
        // The missed occurrence no longer takes answers.
        let late = await f.answer(id, by: f.members[1], scheduledAt: F.firstFire)
        #expect(late.errorName == "OCCURRENCE_CLOSED")
        // The next one is missed a day later.
        #expect(try sweep(f, at: edge + 24 * 3_600_000) == 1)
        #expect(try await f.alarm(id)["next_fire_at"] as? String == F.thirdFire)
    }

    @Test("per-alarm grace, closed occurrences and deleted alarms are not swept")
    func perAlarmGrace() async throws {
        let f = try await F.make(members: 1)
        let short = try #require(try await f.createAlarm(extra: #","grace_minutes":30"#)["id"] as? String)
        let answered = try #require(try await f.createAlarm()["id"] as? String)
        let deleted = try #require(try await f.createAlarm()["id"] as? String)
        #expect(await f.answer(answered, by: f.members[0]).status == 201)
        try await f.h.expect(204, .delete, "\(f.g)/alarms/\(deleted)", token: f.owner.token)
        #expect(try sweep(f, at: Self.firstFireMs + 30 * 60_000 - 1) == 0)
        #expect(try sweep(f, at: Self.firstFireMs + 30 * 60_000) == 1)
        #expect(try await f.alarm(short)["last_missed_at"] as? String == F.firstFire)
        // `answered` moved on to the second fire; its grace ends a day after that.
        #expect(try sweep(f, at: Self.firstFireMs + 24 * 3_600_000) == 0)
    }

    @Test("a one-time alarm that is missed becomes inactive")
    func oneTimeMissed() async throws {
        let f = try await F.make(members: 1)
        let json =
            #"{"title":"Vet","schedule":{"type":"one_time","date":"2026-02-06"},"times_of_day":[{"hour":10,"minute":0}],"timezone":"UTC"}"#
        let alarm = try await f.h.expect(201, .post, "\(f.g)/alarms", json: json, token: f.owner.token).json
        let id = try #require(alarm["id"] as? String)
        #expect(try sweep(f, at: Self.firstFireMs + 24 * 3_600_000) == 1)
        let now = try await f.alarm(id)
        #expect(now["next_fire_at"] is NSNull)
        #expect(now["is_active"] as? Bool == false)
        #expect(now.occurrence["status"] as? String == "missed")
        let late = await f.answer(id, by: f.members[0])
        #expect(late.status == 409)
    }
}
