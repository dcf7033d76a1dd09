import Domain
import Foundation
import Logging
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// The shared-alarm controls, driven by the ManualClock: `paused_until` and `is_enabled` stop
/// fires (the scheduler stages nothing), answers and the overdue sweep, and resuming opens the next
/// occurrence from now; the lead window (`answer_lead_minutes`, 409 ANSWER_TOO_EARLY) and the
/// occurrence states (`occurrence_state`, `answerable_from`).
@Suite("Shared alarms — pause, disable, lead window, occurrence states")
struct SharedAlarmControlsTests {
    typealias F = SharedAlarmFixture

    static let hour: Int64 = 3_600_000
    static let day: Int64 = 86_400_000
    /// 2026-02-06T09:00:00Z, where the fixture's clock starts.
    static let start: Int64 = 1_770_368_400_000
    /// 2026-02-06T10:00:00Z, the first fire of `dailyTen`.
    static let firstFire: Int64 = 1_770_372_000_000

    static let quiet = Logger.quiet

    static func text(_ ms: Int64) -> String { Timestamp(milliseconds: ms).description }

    /// What the fire scheduler queues (or skips) at `now`, as outbox keys.
    func stage(_ f: F, at now: Int64) throws -> [String] {
        _ = try FireScheduler.runOnce(database: f.h.database, at: now, logger: Self.quiet)
        return try f.h.database.readSync { db in try NotificationOutbox.entries(on: db) }
            .filter { $0.type == .alarmFired || $0.type == .preAlarm }.map(\.key)
    }

    func sweep(_ f: F, at now: Int64) throws -> Int {
        try f.h.database.writeSync { db in try SharedAlarmStore.sweepOverdue(at: now, on: db) }
    }

    func missedRows(_ f: F) throws -> Int {
        try f.h.database.readSync { db in
            try db.query("SELECT seq FROM change_log WHERE kind = 'missed_occurrence'", []).count
        }
    }

    func patch(_ f: F, _ id: String, _ json: String, token: String? = nil) async -> Reply {
        await f.h.send(.patch, "\(f.g)/alarms/\(id)", json: json, token: token ?? f.owner.token)
    }

    @Test("paused: nothing staged, answered or swept until the pause ends; then the first fire after it, once")
    func pauseLapses() async throws {
        let f = try await F.make(members: 2)
        let alarm = try await f.createAlarm(assignees: [f.members[0]], extra: #","pre_alarm_enabled":true"#)
        let id = try #require(alarm["id"] as? String)
        #expect(alarm["is_enabled"] as? Bool == true && alarm["paused_until"] is NSNull)
        #expect(alarm["answer_lead_minutes"] as? Int == 1440)
        // Pause until 2026-02-08T12:00Z: the occurrence moves to the first fire at or after it.
        let pauseEnd = Self.firstFire + 2 * Self.day + 2 * Self.hour
        let third = Self.firstFire + 3 * Self.day  // 2026-02-09T10:00Z
        let paused = await patch(f, id, #"{"paused_until":"\#(Self.text(pauseEnd))"}"#)
        #expect(paused.status == 200, "\(paused.text)")
        #expect(paused.json["paused_until"] as? String == Self.text(pauseEnd))
        #expect(paused.json["next_fire_at"] as? String == Self.text(third))
        #expect(paused.json["occurrence_state"] as? String == "upcoming")
        #expect(paused.json["answerable_from"] as? String == Self.text(pauseEnd), "the lead window starts inside the pause")
        #expect(paused.json.occurrence["required_uids"] as? [String] == [f.members[0].id])
        // Not a member's switch.
        #expect(await patch(f, id, #"{"paused_until":null}"#, token: f.members[0].token).status == 403)
        // Every minute's look of the fire scheduler and every sweep during the pause: nothing.
        var t = Self.firstFire - 60_000
        while t < pauseEnd {
            #expect(try stage(f, at: t).isEmpty, "staged at \(Self.text(t))")
            #expect(try sweep(f, at: t) == 0)
            t += 30 * 60_000
        }
        #expect(try missedRows(f) == 0)
        f.h.clock.set(Self.firstFire + Self.day + Self.hour)
        let early = await f.answer(id, by: f.members[0])
        #expect(early.status == 409 && early.errorName == "ANSWER_TOO_EARLY" && early.errorCode == "CA050")
        #expect(early.text.contains(Self.text(pauseEnd)), "the message says when answering opens")
        // The pause lapses with no write: the occurrence after it is staged at its time, exactly once;
        // its pre-alarm (24 h before, inside the pause) is not sent.
        #expect(try stage(f, at: third - 60_001).isEmpty)
        #expect(try stage(f, at: third - 60_000) == ["alarm_fired:\(id):\(third)"])
        #expect(try stage(f, at: third) == ["alarm_fired:\(id):\(third)"])
        f.h.clock.set(pauseEnd)
        #expect(await f.answer(id, by: f.members[0]).status == 201, "answerable from the end of the pause")
        let after = try await f.alarm(id)
        #expect(after["next_fire_at"] as? String == Self.text(third + Self.day))
        #expect(after["last_missed_at"] is NSNull)
    }

    @Test("resuming early opens the next occurrence from now: no burst of the skipped ones")
    func resumeEarly() async throws {
        let f = try await F.make(members: 1)
        let id = try #require(try await f.createAlarm()["id"] as? String)
        let pauseEnd = Self.firstFire + 14 * Self.day
        let paused = await patch(f, id, #"{"paused_until":"\#(Self.text(pauseEnd))"}"#)
        #expect(paused.json["next_fire_at"] as? String == Self.text(pauseEnd), "a fire at the pause's end is at or after it")
        // Four days later, at 11:00, the owner resumes.
        let now = Self.firstFire + 4 * Self.day + Self.hour
        f.h.clock.set(now)
        #expect(try sweep(f, at: now) == 0)
        let resumed = await patch(f, id, #"{"paused_until":null}"#)
        #expect(resumed.status == 200)
        #expect(resumed.json["paused_until"] is NSNull)
        #expect(resumed.json["next_fire_at"] as? String == Self.text(Self.firstFire + 5 * Self.day))
        #expect(try stage(f, at: now).isEmpty, "none of the four skipped days is fired")
        #expect(try sweep(f, at: now) == 0)
        #expect(try missedRows(f) == 0)
        // A pause already over is no pause; one more than 366 days ahead is refused.
        let past = await patch(f, id, #"{"paused_until":"\#(Self.text(now - 1))"}"#)
        #expect(past.status == 200 && past.json["paused_until"] is NSNull)
        #expect(past.json["version"] as? Int == resumed.json["version"] as? Int, "nothing changed, nothing written")
        let limit = SharedAlarmRules.maxPauseMilliseconds
        #expect(await patch(f, id, #"{"paused_until":"\#(Self.text(now + limit))"}"#).status == 200)
        let far = await patch(f, id, #"{"paused_until":"\#(Self.text(now + limit + 1))"}"#)
        #expect(far.status == 422 && far.errorField == "paused_until")
    }

    @Test("disabled: no occurrence, no next fire, nothing staged or swept; enabling opens from now")
    func disableEnable() async throws {
        let f = try await F.make(members: 2)
        let id = try #require(try await f.createAlarm(assignees: [f.members[1]])["id"] as? String)
        let off = await patch(f, id, #"{"is_enabled":false}"#)
        #expect(off.status == 200, "\(off.text)")
        #expect(off.json["is_enabled"] as? Bool == false)
        #expect(off.json["next_fire_at"] is NSNull && off.json["is_active"] as? Bool == false)
        #expect(off.json["answerable_from"] is NSNull && off.json["occurrence_state"] is NSNull)
        #expect(off.json.occurrence["status"] as? String == "closed", "the open occurrence ended unanswered")
        #expect(await patch(f, id, #"{"is_enabled":true}"#, token: f.members[0].token).status == 403)
        for t in stride(from: Self.firstFire - 60_000, to: Self.firstFire + 3 * Self.day, by: Int(6 * Self.hour)) {
            #expect(try stage(f, at: t).isEmpty)
            #expect(try sweep(f, at: t) == 0)
        }
        #expect(try missedRows(f) == 0)
        let closed = await f.answer(id, by: f.members[1])
        #expect(closed.status == 409 && closed.errorName == "OCCURRENCE_CLOSED")
        // Enabled again on 2026-02-09 at 10:30: the next occurrence is the 10th's, not the 7th's.
        let now = Self.firstFire + 3 * Self.day + Self.hour / 2
        f.h.clock.set(now)
        let on = await patch(f, id, #"{"is_enabled":true}"#)
        #expect(on.json["next_fire_at"] as? String == Self.text(Self.firstFire + 4 * Self.day))
        #expect(on.json.occurrence["status"] as? String == "open")
        #expect(on.json.occurrence["required_uids"] as? [String] == [f.members[1].id])
        #expect(try stage(f, at: now).isEmpty)
        #expect(try stage(f, at: Self.firstFire + 4 * Self.day).count == 1)
        // Created disabled: nothing opens.
        let created = try await f.createAlarm(extra: #","is_enabled":false"#)
        #expect(created["next_fire_at"] is NSNull && created["is_enabled"] as? Bool == false)
    }

    @Test("lead window: answering opens answer_lead_minutes before the occurrence, to the millisecond")
    func leadWindow() async throws {
        let f = try await F.make(members: 1)
        let id = try #require(try await f.createAlarm(extra: #","answer_lead_minutes":30"#)["id"] as? String)
        let opens = Self.firstFire - 30 * 60_000
        f.h.clock.set(opens - 1)
        let shown = try await f.alarm(id)
        #expect(shown["answerable_from"] as? String == Self.text(opens))
        #expect(shown["occurrence_state"] as? String == "upcoming")
        let early = await f.answer(id, by: f.members[0])
        #expect(early.status == 409 && early.errorName == "ANSWER_TOO_EARLY")
        let current = (early.json["error"] as? [String: Any])?["current"] as? [String: Any]
        #expect(current?["answerable_from"] as? String == Self.text(opens))
        #expect(try await f.alarm(id)["version"] as? Int == shown["version"] as? Int, "a refused answer writes nothing")
        f.h.clock.set(opens)
        #expect(await f.answer(id, by: f.members[0]).status == 201)
        // A second tap is the first answer's retry; past the retry window the next occurrence (tomorrow
        // 10:00) is still not answerable today.
        #expect(await f.answer(id, by: f.members[0]).status == 200)
        f.h.clock.set(opens + SharedAlarmRules.unnamedAnswerRetryWindowMilliseconds + 1)
        #expect(await f.answer(id, by: f.members[0]).errorName == "ANSWER_TOO_EARLY")
        // Bounds: 0 and 10,080 are allowed; -1 and 10,081 are not.
        #expect(
            await patch(f, id, #"{"answer_lead_minutes":0}"#).json["answerable_from"] as? String
                == Self.text(Self.firstFire + Self.day))
        #expect(await patch(f, id, #"{"answer_lead_minutes":10080}"#).status == 200)
        for bad in ["-1", "10081"] {
            let refused = await patch(f, id, #"{"answer_lead_minutes":\#(bad)}"#)
            #expect(refused.status == 422 && refused.errorField == "answer_lead_minutes")
        }
        // A weekly alarm's default window: a day, so next week's occurrence waits.
        let weekly = try await f.h.expect(
            201, .post, "\(f.g)/alarms",
            json: #"{"title":"Bins","schedule":{"type":"weekly","days_of_week":[4],"start_date":"2026-02-01"},"#
                + #""times_of_day":[{"hour":10,"minute":0}],"timezone":"UTC"}"#,
            token: f.owner.token
        ).json
        let weeklyID = try #require(weekly["id"] as? String)
        #expect(await f.answer(weeklyID, by: f.members[0]).errorName == "ANSWER_TOO_EARLY")
    }

    @Test("occurrence_state: upcoming before its time, due from it, missed after the grace")
    func states() async throws {
        let f = try await F.make(members: 1)
        let id = try #require(try await f.createAlarm(extra: #","grace_minutes":60"#)["id"] as? String)
        for (t, state) in [
            (Self.firstFire - 1, "upcoming"), (Self.firstFire, "due"), (Self.firstFire + Self.hour - 1, "due"),
            (Self.firstFire + Self.hour, "missed"),
        ] {
            f.h.clock.set(t)
            #expect(try await f.alarm(id)["occurrence_state"] as? String == state, "at \(Self.text(t))")
        }
        #expect(try sweep(f, at: Self.firstFire + Self.hour) == 1)
        #expect(try await f.alarm(id)["occurrence_state"] as? String == "upcoming", "the sweep opened the next one")
    }
    @Test("a fire staged before the switch is cancelled at its claim: paused or disabled within the look-ahead")
    func stagedFireCancelled() async throws {
        let f = try await F.make(members: 1)
        let m0 = f.members[0]
        let kept = try #require(try await f.createAlarm(assignees: [m0])["id"] as? String)
        let paused = try #require(try await f.createAlarm(assignees: [m0])["id"] as? String)
        let disabled = try #require(try await f.createAlarm(assignees: [m0])["id"] as? String)
        let now = f.h.clock.nowMilliseconds()
        _ = try f.h.database.writeSync { db in
            try NotificationDeliveries.expand(at: now, providers: [.apns], webhook: false, limit: 1_000, on: db)
        }
        try await f.h.expect(
            201, .put, "/v1/me/devices/phone",
            json: #"{"platform":"ios","provider":"apns","token":"\#(String(repeating: "ab", count: 32))"}"#, token: m0.token)
        let fire = Self.firstFire
        _ = try FireScheduler.runOnce(database: f.h.database, at: fire - 60_000, logger: Self.quiet)
        let expansion = try f.h.database.writeSync { db in
            try NotificationDeliveries.expand(
                at: fire - 60_000, lookahead: NotificationScheduler.lookaheadMilliseconds, providers: [.apns], webhook: false,
                limit: 1_000, on: db)
        }
        #expect(expansion.deliveries == 3, "one per alarm, made a minute ahead")
        f.h.clock.set(fire - 30_000)
        try await f.h.expect(
            200, .patch, "\(f.g)/alarms/\(paused)", json: #"{"paused_until":"\#(Self.text(fire + Self.day + Self.hour))"}"#,
            token: f.owner.token)
        try await f.h.expect(200, .patch, "\(f.g)/alarms/\(disabled)", json: #"{"is_enabled":false}"#, token: f.owner.token)
        let claim = try f.h.database.writeSync { db in
            try NotificationDeliveries.claim(owner: "test", at: fire, leaseUntil: fire + 60_000, limit: 1_000, on: db)
        }
        #expect(claim.deliveries.map(\.key).filter { $0.hasPrefix("alarm_fired") } == ["alarm_fired:\(kept):\(fire)"])
        #expect(claim.cancelled == 2, "the paused and the disabled alarm's fires")
    }
}
