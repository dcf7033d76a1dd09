import Domain
import Foundation
import Logging
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// Up to three pre-alarms per alarm (docs/api.md#shared-alarms-and-occurrences, docs/notifications.md#pipeline): the
/// `pre_alarm_offsets` field beside the legacy `pre_alarm_offset`, and the fire scheduler queuing one
/// warning per offset, exactly once, on the injected clock.
@Suite("Pre-alarms — several offsets, the legacy single field, one warning per offset")
struct PreAlarmTests {
    static let quiet = Logger.quiet

    func preAlarms(_ h: AppHarness) throws -> [NotificationOutbox.Entry] {
        try h.database.readSync { db in try NotificationOutbox.entries(on: db) }.filter { $0.type == .preAlarm }
            .sorted { $0.notBefore < $1.notBefore }
    }

    func run(_ h: AppHarness, at now: Int64) throws -> NotificationScheduler.Pass {
        try FireScheduler.runOnce(database: h.database, at: now, logger: Self.quiet)
    }

    @Test("pre_alarm_offsets: stored largest first with pre_alarm_offset their smallest; an old client's single value replaces them")
    func fields() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let h = f.h
        let alarm = try await f.createAlarm(extra: #","pre_alarm_enabled":true,"pre_alarm_offsets":[1440,10080,4320]"#)
        let id = try #require(alarm["id"] as? String)
        #expect(alarm["pre_alarm_offsets"] as? [Int] == [10080, 4320, 1440])
        #expect(alarm["pre_alarm_offset"] as? Int == 1440)

        // A client echoing the document sends both: they agree.
        var reply = try await h.expect(
            200, .patch, "\(f.g)/alarms/\(id)", json: #"{"pre_alarm_offsets":[60,30],"pre_alarm_offset":30}"#, token: f.owner.token)
        #expect(reply.json["pre_alarm_offsets"] as? [Int] == [60, 30])
        // An old client knows one pre-alarm: its value is the only one.
        reply = try await h.expect(200, .patch, "\(f.g)/alarms/\(id)", json: #"{"pre_alarm_offset":45}"#, token: f.owner.token)
        #expect(reply.json["pre_alarm_offsets"] as? [Int] == [45])
        #expect(reply.json["pre_alarm_offset"] as? Int == 45)

        // A legacy create gets a one-element list.
        let legacy = try await f.createAlarm(extra: #","pre_alarm_offset":90"#)
        #expect(legacy["pre_alarm_offsets"] as? [Int] == [90])

        let max = SharedAlarmRules.maxPreAlarmOffset
        let refused: [(String, String)] = [
            (#"{"pre_alarm_offsets":[10080,4320,1440,60]}"#, "pre_alarm_offsets"),  // four: one over the limit
            (#"{"pre_alarm_offsets":[60,60]}"#, "pre_alarm_offsets"),
            (#"{"pre_alarm_offsets":[]}"#, "pre_alarm_offsets"),
            (#"{"pre_alarm_offsets":[60,\#(max + 1)]}"#, "pre_alarm_offsets"),
            (#"{"pre_alarm_offsets":[60,0]}"#, "pre_alarm_offsets"),
            (#"{"pre_alarm_offsets":[60,30],"pre_alarm_offset":60}"#, "pre_alarm_offset"),
            (#"{"pre_alarm_offset":\#(max + 1)}"#, "pre_alarm_offset"),
        ]
        for (body, field) in refused {
            let bad = await h.send(.patch, "\(f.g)/alarms/\(id)", json: body, token: f.owner.token)
            #expect(bad.status == 422, "\(body): \(bad.text)")
            #expect(bad.errorField == field, "\(body)")
        }
        let after = try await f.alarm(id)
        #expect(after["pre_alarm_offsets"] as? [Int] == [45], "a refused edit changes nothing")
        // Exactly at the limits.
        reply = try await h.expect(
            200, .patch, "\(f.g)/alarms/\(id)", json: #"{"pre_alarm_offsets":[1,\#(max),720]}"#, token: f.owner.token)
        #expect(reply.json["pre_alarm_offsets"] as? [Int] == [max, 720, 1])
    }

    @Test("personal alarms keep the same field (their device schedules them)")
    func personal() async throws {
        let (h, phone, _) = try await PersonalAlarmTests.twoDevices()
        let id = PersonalAlarmTests.alarmA
        let created = try await h.expect(
            201, .put, "/v1/me/alarms/\(id)",
            json: PersonalAlarmTests.body("Rent", extra: #","pre_alarm_enabled":true,"pre_alarm_offsets":[1440,10080,4320]"#),
            token: phone)
        #expect(created.json["pre_alarm_offsets"] as? [Int] == [10080, 4320, 1440])
        #expect(created.json["pre_alarm_offset"] as? Int == 1440)
        let bad = await h.send(
            .put, "/v1/me/alarms/\(id)", json: PersonalAlarmTests.body("Rent", extra: #","pre_alarm_offsets":[1,2,3,4]"#),
            token: phone)
        #expect(bad.status == 422)
        let read = try await h.expect(200, .get, "/v1/me/alarms/\(id)", token: phone)
        #expect(read.json["pre_alarm_offsets"] as? [Int] == [10080, 4320, 1440])
    }

    @Test("three offsets: three warnings, each queued once at its own instant, across restarts and a second handle")
    func threeWarnings() async throws {
        let f = try await SharedAlarmFixture.make(members: 2)
        let h = f.h
        let (m0, m1) = (f.members[0], f.members[1])
        // The clock stands at 09:00; the first fire is at 10:00: warnings at 09:10, 09:30, 09:50.
        let alarm = try await f.createAlarm(
            assignees: [m0, m1], extra: #","pre_alarm_enabled":true,"pre_alarm_offsets":[10,50,30]"#)
        let alarmID = try #require(alarm["id"] as? String)
        let fire = Timestamp.parse(SharedAlarmFixture.firstFire)!
        let ahead = NotificationScheduler.lookaheadMilliseconds
        let instants = [50, 30, 10].map { fire - Int64($0) * 60_000 }

        #expect(try run(h, at: instants[0] - ahead - 1).total == 0, "nothing before the first warning's look-ahead")
        for (index, instant) in instants.enumerated() {
            #expect(try run(h, at: instant - ahead) == NotificationScheduler.Pass(queued: 1, skipped: 0), "warning \(index)")
            #expect(try run(h, at: instant - ahead).total == 0, "exactly once")
            #expect(try run(h, at: instant).total == 0, "exactly once")
            let other = try h.openAnotherHandle()
            #expect(try FireScheduler.runOnce(database: other, at: instant + 1_000, logger: Self.quiet).total == 0)
            other.close()
        }
        let rows = try preAlarms(h)
        #expect(rows.map(\.notBefore) == instants)
        #expect(rows.map(\.key) == [50, 30, 10].map { "pre_alarm:\(alarmID):\(fire):\($0)" })
        #expect(rows.allSatisfy { $0.expiresAt == fire && $0.recipients == [m0.id, m1.id] && $0.state == .pending })
        #expect(rows.map { NotificationText.body($0.content).hasPrefix("In 50 min") } == [true, false, false])
        #expect(NotificationText.body(rows[2].content).hasPrefix("In 10 min"))
        #expect([10080, 4320, 1440, 90, 60].map { NotificationText.lead("\($0)") } == ["7 d", "3 d", "1 d", "90 min", "1 h"])
        let stored = try h.database.readSync { db in
            try db.query("SELECT pre_alarm_ms FROM shared_alarms WHERE id = ?1", [.text(alarmID)]).first?.int("pre_alarm_ms")
        }
        #expect(stored == nil, "after the last warning nothing is left to queue for this occurrence")

        // An edit that rewrites the alarm (its pre_alarm_ms back to the earliest warning) sends nothing again.
        try await h.expect(200, .patch, "\(f.g)/alarms/\(alarmID)", json: #"{"title":"Feed both cats"}"#, token: f.owner.token)
        #expect(try run(h, at: instants[2] + 1_000).total == 0)
        #expect(try preAlarms(h).count == 3)
    }

    @Test("a scheduler that was down: a warning older than the freshness window is skipped, a fresh one queued, the rest in turn")
    func lateScheduler() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let h = f.h
        _ = try await f.createAlarm(assignees: [f.members[0]], extra: #","pre_alarm_enabled":true,"pre_alarm_offsets":[50,30,10]"#)
        let fire = Timestamp.parse(SharedAlarmFixture.firstFire)!
        // 09:40: the 09:10 warning is 30 minutes late (skipped), the 09:30 one 10 (sent), 09:50 not yet due.
        let now = fire - 20 * 60_000
        #expect(try run(h, at: now) == NotificationScheduler.Pass(queued: 1, skipped: 1))
        #expect(try preAlarms(h).map(\.state) == [.skipped, .pending])
        #expect(try run(h, at: fire - 10 * 60_000) == NotificationScheduler.Pass(queued: 1, skipped: 0))
        // At the fire itself the warnings are moot.
        #expect(try run(h, at: fire).queued == 1, "only the alarm_fired")
        #expect(try preAlarms(h).count == 3)
    }

    @Test("a staged warning of an occurrence that moved is cancelled at the claim; pre_alarm_enabled false queues none")
    func movedAndDisabled() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let h = f.h
        let alarm = try await f.createAlarm(
            assignees: [f.members[0]], extra: #","pre_alarm_enabled":true,"pre_alarm_offsets":[50,30]"#)
        let id = try #require(alarm["id"] as? String)
        let fire = Timestamp.parse(SharedAlarmFixture.firstFire)!
        let phone = String(repeating: "ab", count: 32)
        try await h.expect(
            201, .put, "/v1/me/devices/phone", json: #"{"platform":"ios","provider":"apns","token":"\#(phone)"}"#,
            token: f.members[0].token)
        let first = fire - 50 * 60_000
        #expect(try run(h, at: first - 30_000).queued == 1)
        // Moved to 11:00 before the staged warning is sent: it is cancelled, the new occurrence's are queued.
        try await h.expect(200, .patch, "\(f.g)/alarms/\(id)", json: #"{"times_of_day":[{"hour":11,"minute":0}]}"#, token: f.owner.token)
        let claim = try h.database.writeSync { db in
            _ = try NotificationDeliveries.expand(at: first, providers: [.apns], webhook: false, limit: 1_000, on: db)
            return try NotificationDeliveries.claim(owner: "test", at: first, leaseUntil: first + 60_000, limit: 1_000, on: db)
        }
        #expect(!claim.deliveries.contains { $0.key.hasPrefix("pre_alarm:") }, "the moved occurrence's warning is not sent")
        #expect(try run(h, at: first + 60 * 60_000 - 30_000).queued == 1, "11:00 minus 50 minutes")

        try await h.expect(200, .patch, "\(f.g)/alarms/\(id)", json: #"{"pre_alarm_enabled":false}"#, token: f.owner.token)
        #expect(try run(h, at: first + 80 * 60_000).total == 0)
    }
}
