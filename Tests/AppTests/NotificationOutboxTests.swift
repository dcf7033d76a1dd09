import Domain
import Foundation
import Logging
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// The transactional outbox and the fire scheduler (issue 17; docs/notifications.md#pipeline): who is
/// queued for what, in the mutation's own transaction, exactly once.
@Suite("Notification outbox — producers and the fire scheduler")
struct NotificationOutboxTests {
    static let quiet: Logger = {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }()

    func entries(_ h: AppHarness, _ type: NotificationType? = nil) throws -> [NotificationOutbox.Entry] {
        try h.database.readSync { db in try NotificationOutbox.entries(on: db) }.filter { type == nil || $0.type == type }
    }

    /// Epoch ms of an ISO timestamp of the fixture.
    func ms(_ iso: String) -> Int64 {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return Int64((formatter.date(from: iso)!.timeIntervalSince1970 * 1000).rounded())
    }

    @Test("create, edit, answer, join: one row each, to the listening members except the actor")
    func producers() async throws {
        let f = try await SharedAlarmFixture.make(members: 3)
        let h = f.h
        let (m0, m1, m2) = (f.members[0], f.members[1], f.members[2])
        try await h.expect(200, .patch, "\(f.g)/membership", json: #"{"notification_enabled":false}"#, token: m2.token)

        let alarm = try await f.createAlarm()
        let alarmID = try #require(alarm["id"] as? String)
        let created = try #require(try entries(h, .sharedAlarmCreated).first)
        #expect(created.recipients == [m0.id, m1.id], "not the creator (owner), not the muted m2")
        #expect(created.actorID == f.owner.id)
        #expect(created.content.title == "Feed the cat")
        #expect(created.content.data == ["type": "shared_alarm_created", "group_id": f.groupID, "alarm_id": alarmID])
        #expect(created.key == "shared_alarm_created:\(alarmID):1")
        #expect(created.state == .pending)

        try await h.expect(200, .patch, "\(f.g)/alarms/\(alarmID)", json: #"{"title":"Feed both cats"}"#, token: f.owner.token)
        #expect(try entries(h, .sharedAlarmUpdated).map(\.content.title) == ["Feed both cats"])

        h.clock.set(ms(SharedAlarmFixture.firstFire) + 60_000)
        let answered = await f.answer(alarmID, by: m0)
        #expect(answered.status == 201, "\(answered.text)")
        let completion = try #require(try entries(h, .sharedCompletion).first)
        #expect(completion.recipients == [f.owner.id, m1.id], "everyone listening but the one who answered")
        #expect(completion.content.body.hasPrefix("M0 completed it"))
        #expect(completion.expiresAt - completion.createdAt == NotificationType.sharedCompletion.policy.timeToLiveMilliseconds)

        // A retry of the same answer is not a new notification.
        let retry = await f.answer(alarmID, by: m0, scheduledAt: SharedAlarmFixture.firstFire)
        #expect(retry.status == 200, "\(retry.text)")
        #expect(try entries(h, .sharedCompletion).count == 1)

        let (newcomer, newcomerID) = try await h.register("new@example.com", name: "Nia")
        let code = try await h.inviteCode(f.groupID, token: f.owner.token)
        #expect(await h.join(code, token: newcomer).status == 200)
        let joined = try #require(try entries(h, .groupMemberJoined).last)
        #expect(joined.recipients == [f.owner.id, m0.id, m1.id])
        #expect(joined.content.body == "Nia joined")
        #expect(joined.content.data["user_id"] == newcomerID)
    }

    @Test("an email invitation reaches an existing account; an unknown address or a link queues nothing")
    func invitations() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        try await h.expect(
            201, .post, "/v1/groups/\(f.groupID)/invitations", json: #"{"invitee_email":"outsider@example.com"}"#, token: f.owner.token)
        try await h.expect(
            201, .post, "/v1/groups/\(f.groupID)/invitations", json: #"{"invitee_email":"nobody@example.com"}"#, token: f.owner.token)
        try await h.expect(201, .post, "/v1/groups/\(f.groupID)/invitations", json: "{}", token: f.owner.token)
        let invitations = try entries(h, .groupInvitation)
        #expect(invitations.map(\.recipients) == [[f.outsider.id]])
        #expect(invitations.first?.groupID == nil, "the invitee is not a member: no membership filter")
        #expect(invitations.first?.content.body == "Owner invited you")
    }

    @Test("a rolled-back mutation queues nothing")
    func rollback() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let h = f.h
        struct Abort: Error {}
        let schedule = Schedule(.customDays(intervalDays: 1), startDate: try #require(LocalDate(year: 2026, month: 2, day: 1)))
        let settings = AlarmSettings(
            title: "Never",
            timing: AlarmTiming(schedule: schedule, timesOfDay: [try #require(TimeOfDay(hour: 10, minute: 0))], timezone: "UTC"))
        let now = h.clock.nowMilliseconds()
        let groupID = f.groupID
        let ownerID = f.owner.id
        await #expect(throws: Abort.self) {
            try await h.database.write { db in
                _ = try SharedAlarmStore.create(groupID: groupID, actorID: ownerID, settings: settings, at: now, on: db)
                #expect(try NotificationOutbox.entries(on: db).contains { $0.type == .sharedAlarmCreated })
                throw Abort()
            }
        }
        #expect(try entries(h, .sharedAlarmCreated).isEmpty)
    }

    @Test("a fire is queued once at its instant, to who has not answered and listens; pre-alarms before it")
    func fires() async throws {
        let f = try await SharedAlarmFixture.make(members: 3)
        let h = f.h
        let (m0, m1, m2) = (f.members[0], f.members[1], f.members[2])
        try await h.expect(200, .patch, "\(f.g)/membership", json: #"{"notification_enabled":false}"#, token: m2.token)
        let alarm = try await f.createAlarm(
            rule: "all", assignees: [m0, m1, m2], extra: #","pre_alarm_enabled":true,"pre_alarm_offset":30"#)
        let alarmID = try #require(alarm["id"] as? String)
        let fire = ms(SharedAlarmFixture.firstFire)

        func run(at now: Int64) throws -> NotificationScheduler.Pass {
            try FireScheduler.runOnce(database: h.database, at: now, logger: Self.quiet)
        }
        #expect(try run(at: fire - 30 * 60_000 - 1).total == 0, "nothing before the pre-alarm")
        #expect(try run(at: fire - 30 * 60_000) == NotificationScheduler.Pass(queued: 1, skipped: 0))
        let pre = try #require(try entries(h, .preAlarm).first)
        #expect(pre.recipients == [m0.id, m1.id])
        #expect(pre.expiresAt == fire, "a pre-alarm is worth nothing once the occurrence is due")
        #expect(pre.content.body.hasPrefix("In 30 min"))

        #expect(try run(at: fire - 1).total == 0)
        h.clock.set(fire)
        // m1 answers exactly at the fire: they are no longer pending.
        #expect(await f.answer(alarmID, by: m1).status == 201)
        #expect(try run(at: fire) == NotificationScheduler.Pass(queued: 1, skipped: 0))
        #expect(try run(at: fire + 500).total == 0, "exactly once")
        let fired = try #require(try entries(h, .alarmFired).first)
        #expect(fired.key == "alarm_fired:\(alarmID):\(fire)")
        #expect(fired.recipients == [m0.id])
        #expect(fired.notBefore == fire)
        #expect(fired.expiresAt == fire + 15 * 60_000)
        #expect(fired.content.data["scheduled_at"] == SharedAlarmFixture.firstFire)

        // A second handle (another process or instance) finds nothing left to do.
        let other = try h.openAnotherHandle()
        defer { other.close() }
        #expect(try FireScheduler.runOnce(database: other, at: fire + 1_000, logger: Self.quiet).total == 0)
    }

    @Test("after downtime a fire more than 15 minutes late is recorded skipped, not sent; deleted alarms and frozen groups do not fire")
    func staleDeletedFrozen() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let h = f.h
        let late = try #require(try await f.createAlarm()["id"] as? String)
        let deleted = try #require(try await f.createAlarm()["id"] as? String)
        try await h.expect(204, .delete, "\(f.g)/alarms/\(deleted)", token: f.owner.token)
        let fire = ms(SharedAlarmFixture.firstFire)
        let pass = try FireScheduler.runOnce(database: h.database, at: fire + 15 * 60_000 + 1, logger: Self.quiet)
        #expect(pass == NotificationScheduler.Pass(queued: 0, skipped: 1))
        let fired = try entries(h, .alarmFired)
        #expect(fired.map(\.key) == ["alarm_fired:\(late):\(fire)"])
        #expect(fired.first?.state == .skipped)

        // Exactly 15 minutes late is still fresh.
        let g2 = try await SharedAlarmFixture.make(members: 1)
        _ = try await g2.createAlarm()
        #expect(try FireScheduler.runOnce(database: g2.h.database, at: fire + 15 * 60_000, logger: Self.quiet).queued == 1)

        let g3 = try await SharedAlarmFixture.make(members: 1)
        _ = try await g3.createAlarm()
        let groupID = g3.groupID
        try await g3.h.database.write { db in
            _ = try GroupStore.adminSetFrozen(groupID: groupID, frozen: true, reason: "test", at: fire - 1, on: db)
        }
        #expect(try FireScheduler.runOnce(database: g3.h.database, at: fire, logger: Self.quiet).total == 0)
    }

    @Test("the overdue sweep queues missed_alarm_followup to who did not answer, the owner and the admins")
    func missed() async throws {
        let f = try await SharedAlarmFixture.make(members: 2)
        let h = f.h
        let alarmID = try #require(try await f.createAlarm(rule: "all")["id"] as? String)
        let fire = ms(SharedAlarmFixture.firstFire)
        h.clock.set(fire + 1)
        #expect(await f.answer(alarmID, by: f.members[0]).status == 201)
        let after = fire + 24 * 3_600_000
        _ = try await h.database.write { db in try SharedAlarmStore.sweepOverdue(at: after, on: db) }
        let missed = try #require(try entries(h, .missedAlarmFollowup).first)
        #expect(Set(missed.recipients) == [f.owner.id, f.members[1].id])
        #expect(missed.key == "missed_alarm_followup:\(alarmID):\(fire)")
    }
}
