import Domain
import Foundation
import Logging
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// The transactional outbox and the fire scheduler (docs/notifications.md#pipeline): who is
/// queued for what, in the mutation's own transaction, exactly once.
@Suite("Notification outbox — producers and the fire scheduler")
struct NotificationOutboxTests {
    static let quiet = Logger.quiet

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
        #expect(
            created.content.data == [
                "type": "shared_alarm_created", "group_id": f.groupID, "alarm_id": alarmID, "deep_link": "/alarm/\(alarmID)",
            ])
        #expect(created.key == "shared_alarm_created:\(alarmID):1")
        #expect(created.state == .pending)

        try await h.expect(200, .patch, "\(f.g)/alarms/\(alarmID)", json: #"{"title":"Feed both cats"}"#, token: f.owner.token)
        #expect(try entries(h, .sharedAlarmUpdated).map(\.content.title) == ["Feed both cats"])

        h.clock.set(ms(SharedAlarmFixture.firstFire) + 60_000)
        let answered = await f.answer(alarmID, by: m0)
        #expect(answered.status == 201, "\(answered.text)")
        let completion = try #require(try entries(h, .sharedCompletion).first)
        #expect(completion.recipients == [f.owner.id, m1.id], "everyone listening but the one who answered")
        #expect(NotificationText.body(completion.content).hasPrefix("M0 completed it"))
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
        #expect(NotificationText.body(joined.content) == "Nia joined")
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
        #expect(invitations.first.map { NotificationText.body($0.content) } == "Owner invited you")
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

    @Test("a fire is staged once, a look-ahead before its instant, to who has not answered and listens; pre-alarms before it")
    func fires() async throws {
        let f = try await SharedAlarmFixture.make(members: 3)
        let h = f.h
        let (m0, m1, m2) = (f.members[0], f.members[1], f.members[2])
        try await h.expect(200, .patch, "\(f.g)/membership", json: #"{"notification_enabled":false}"#, token: m2.token)
        let alarm = try await f.createAlarm(
            rule: "all", assignees: [m0, m1, m2], extra: #","pre_alarm_enabled":true,"pre_alarm_offset":30"#)
        let alarmID = try #require(alarm["id"] as? String)
        let fire = ms(SharedAlarmFixture.firstFire)
        let preFire = fire - 30 * 60_000
        let ahead = NotificationScheduler.lookaheadMilliseconds

        func run(at now: Int64) throws -> NotificationScheduler.Pass {
            try FireScheduler.runOnce(database: h.database, at: now, logger: Self.quiet)
        }
        #expect(try run(at: preFire - ahead - 1).total == 0, "nothing before the pre-alarm's look-ahead")
        #expect(try run(at: preFire - ahead) == NotificationScheduler.Pass(queued: 1, skipped: 0))
        let pre = try #require(try entries(h, .preAlarm).first)
        #expect(pre.recipients == [m0.id, m1.id])
        #expect(pre.notBefore == preFire, "staged: not sendable before its instant")
        #expect(pre.expiresAt == fire, "a pre-alarm is worth nothing once the occurrence is due")
        #expect(NotificationText.body(pre.content).hasPrefix("In 30 min"))

        #expect(try run(at: fire - ahead - 1).total == 0)
        #expect(try run(at: fire - ahead) == NotificationScheduler.Pass(queued: 1, skipped: 0))
        #expect(try run(at: fire).total == 0, "exactly once")
        #expect(try run(at: fire + 500).total == 0, "exactly once")
        let fired = try #require(try entries(h, .alarmFired).first)
        #expect(fired.key == "alarm_fired:\(alarmID):\(fire)")
        #expect(fired.recipients == [m0.id, m1.id], "the muted m2 is not queued")
        #expect(fired.notBefore == fire)
        #expect(fired.expiresAt == fire + 15 * 60_000)
        #expect(fired.content.data["scheduled_at"] == SharedAlarmFixture.firstFire)

        // A second handle (another process or instance) finds nothing left to do.
        let other = try h.openAnotherHandle()
        defer { other.close() }
        #expect(try FireScheduler.runOnce(database: other, at: fire + 1_000, logger: Self.quiet).total == 0)
    }

    // MARK: - Staged fires, checked again at the claim

    /// The scheduler at `now` and an expansion with the dispatcher's look-ahead, to APNs devices only.
    func stage(_ h: AppHarness, at now: Int64) throws -> NotificationDeliveries.Expansion {
        _ = try FireScheduler.runOnce(database: h.database, at: now, logger: Self.quiet)
        return try h.database.writeSync { db in
            try NotificationDeliveries.expand(
                at: now, lookahead: NotificationScheduler.lookaheadMilliseconds, providers: [.apns], webhook: false,
                limit: 1_000, on: db)
        }
    }

    /// What a dispatcher's claim at `now` takes, as (delivery key, user) pairs, and how many it cancels.
    func claim(_ h: AppHarness, at now: Int64) throws -> (taken: Set<String>, cancelled: Int) {
        let claim = try h.database.writeSync { db in
            try NotificationDeliveries.claim(owner: "test", at: now, leaseUntil: now + 60_000, limit: 1_000, on: db)
        }
        let taken = claim.deliveries.map { delivery -> String in
            guard case .device(let userID, _) = delivery.target else { return delivery.key + " webhook" }
            return delivery.key + " " + userID
        }
        return (Set(taken), claim.cancelled)
    }

    /// Expands the fixture's own notifications while no device exists (so they make no deliveries),
    /// then gives every member an APNs phone.
    func registerPhones(_ f: SharedAlarmFixture) async throws {
        let now = f.h.clock.nowMilliseconds()
        _ = try f.h.database.writeSync { db in
            try NotificationDeliveries.expand(at: now, providers: [.apns], webhook: false, limit: 1_000, on: db)
        }
        for (index, member) in f.members.enumerated() {
            let token = String(repeating: String(format: "%02x", index + 1), count: 32)
            try await f.h.expect(
                201, .put, "/v1/me/devices/phone", json: #"{"platform":"ios","provider":"apns","token":"\#(token)"}"#,
                token: member.token)
        }
    }

    @Test("a staged fire is sent at its instant only while it is still the alarm's: moved, deleted or answered → cancelled at the claim")
    func stagedFireRechecked() async throws {
        let f = try await SharedAlarmFixture.make(members: 2)
        let h = f.h
        let (m0, m1) = (f.members[0], f.members[1])
        let kept = try #require(try await f.createAlarm(assignees: [m0])["id"] as? String)
        let moved = try #require(try await f.createAlarm(assignees: [m0])["id"] as? String)
        let deleted = try #require(try await f.createAlarm(assignees: [m0])["id"] as? String)
        let answered = try #require(try await f.createAlarm(rule: "all", assignees: [m0, m1])["id"] as? String)
        try await registerPhones(f)
        let fire = ms(SharedAlarmFixture.firstFire)
        func key(_ alarm: String) -> String { "alarm_fired:\(alarm):\(fire)" }

        let staged = try stage(h, at: fire - NotificationScheduler.lookaheadMilliseconds)
        #expect(staged.expanded == 4 && staged.deliveries == 5, "one per assignee's phone, made a minute ahead")
        #expect(try claim(h, at: fire - 1) == ([], 0), "nothing is sendable before the instant")

        h.clock.set(fire - 30_000)
        try await h.expect(
            200, .patch, "\(f.g)/alarms/\(moved)", json: #"{"times_of_day":[{"hour":11,"minute":0}]}"#, token: f.owner.token)
        try await h.expect(204, .delete, "\(f.g)/alarms/\(deleted)", token: f.owner.token)
        #expect(await f.answer(answered, by: m1).status == 201, "answered before it rang")

        let atInstant = try claim(h, at: fire)
        #expect(atInstant.taken == [key(kept) + " " + m0.id, key(answered) + " " + m0.id])
        #expect(atInstant.cancelled == 3, "the moved and the deleted alarm's, and m1's who already answered")
        #expect(try claim(h, at: fire + 1) == ([], 0), "cancelled deliveries are gone, claimed ones leased")

        // The moved alarm's new instant is staged in its turn (beside the edit's and the answer's own
        // notifications, and the 10:00 claims whose lease lapsed unsettled).
        let eleven = fire + 3_600_000
        _ = try stage(h, at: eleven - NotificationScheduler.lookaheadMilliseconds)
        let taken = try claim(h, at: eleven).taken.filter { $0.hasPrefix("alarm_fired:\(moved)") }
        #expect(taken == ["alarm_fired:\(moved):\(eleven) " + m0.id])
    }

    @Test("a staged fire is cancelled at the claim when its member muted the group, or its group was frozen")
    func stagedFireMutedFrozen() async throws {
        let fire = ms(SharedAlarmFixture.firstFire)
        let f = try await SharedAlarmFixture.make(members: 2)
        let (m0, m1) = (f.members[0], f.members[1])
        let toM0 = try #require(try await f.createAlarm(assignees: [m0])["id"] as? String)
        _ = try await f.createAlarm(assignees: [m1])
        try await registerPhones(f)
        #expect(try stage(f.h, at: fire - NotificationScheduler.lookaheadMilliseconds).deliveries == 2)
        f.h.clock.set(fire - 10_000)
        try await f.h.expect(200, .patch, "\(f.g)/membership", json: #"{"notification_enabled":false}"#, token: m1.token)
        #expect(try claim(f.h, at: fire) == (["alarm_fired:\(toM0):\(fire) " + m0.id], 1))

        let g = try await SharedAlarmFixture.make(members: 1)
        _ = try await g.createAlarm(assignees: [g.members[0]])
        try await registerPhones(g)
        #expect(try stage(g.h, at: fire - NotificationScheduler.lookaheadMilliseconds).deliveries == 1)
        let groupID = g.groupID
        try await g.h.database.write { db in
            _ = try GroupStore.adminSetFrozen(groupID: groupID, frozen: true, reason: "test", at: fire - 1, on: db)
        }
        #expect(try claim(g.h, at: fire) == ([], 1))
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

    @Test(
        """
        PostgreSQL: the fire scheduler runs as a concurrent write — an alarm whose row a write holds (an answer) is \
        passed over without waiting and queued by the next pass; the others are queued at once
        """,
        .enabled(if: TestBackend.current == .postgres, "row locks: SQLite has one writer"), .timeLimit(.minutes(5)))
    func schedulerPassesOverALockedAlarm() async throws {
        let f = try await SharedAlarmFixture.make(members: 2)
        let held = try #require(try await f.createAlarm(assignees: f.members)["id"] as? String)
        let free = try #require(try await f.createAlarm(assignees: f.members)["id"] as? String)
        let due = ms(SharedAlarmFixture.firstFire) - NotificationScheduler.lookaheadMilliseconds
        func pass() async throws -> NotificationScheduler.Pass {
            try await blocking {
                try f.h.database.writeSync(.concurrent) { db in
                    _ = try db.run("SET LOCAL lock_timeout = '30s'")  // a lock wait fails instead of hanging
                    return try NotificationScheduler.enqueueDue(at: due, on: db)
                }
            }
        }
        func firedAlarms() throws -> Set<String> {
            Set(try entries(f.h, .alarmFired).compactMap { $0.key.split(separator: ":").dropFirst().first.map(String.init) })
        }

        // Another instance's answer holds the first alarm's row.
        let other = try f.h.openAnotherHandle()
        defer { other.close() }
        let answer = try await HeldWrite(on: other) { db in
            _ = try db.query("SELECT id FROM shared_alarms WHERE id = ?1" + db.forUpdate, [.text(held)])
        }
        #expect(try await pass().queued == 1, "the free alarm, at once")
        #expect(try firedAlarms() == [free])
        try await answer.commit()
        #expect(try await pass().queued == 1, "the held alarm, once its row is free")
        #expect(try firedAlarms() == [held, free])
    }

    @Test(
        """
        PostgreSQL: claims and expansions run as concurrent writes beside each other — one claimer holding its rows \
        uncommitted never makes another wait or take the same delivery; once it commits nothing is left to claim
        """,
        .enabled(if: TestBackend.current == .postgres, "row locks: SQLite has one writer"), .timeLimit(.minutes(5)))
    func concurrentClaimsTakeDisjointRows() async throws {
        let f = try await SharedAlarmFixture.make(members: 4)
        for _ in 0..<3 { _ = try await f.createAlarm(assignees: f.members) }
        try await registerPhones(f)
        let fire = ms(SharedAlarmFixture.firstFire)
        let staged = try stage(f.h, at: fire - NotificationScheduler.lookaheadMilliseconds)
        #expect(staged.deliveries == 12, "three fires to four phones")

        // Another instance claims three deliveries and holds its transaction open.
        let other = try f.h.openAnotherHandle()
        defer { other.close() }
        let held = try await HeldWrite(on: other) { db in
            Set(try NotificationDeliveries.claim(owner: "held", at: fire, leaseUntil: fire + 60_000, limit: 3, on: db).deliveries.map(\.id))
        }
        // Meanwhile this instance claims everything else without waiting for the held rows.
        let rest = try await f.h.database.write(.concurrent) { db in
            try NotificationDeliveries.claim(owner: "rest", at: fire, leaseUntil: fire + 60_000, limit: 1_000, on: db)
        }
        let heldIDs = try await held.commit()
        let restIDs = Set(rest.deliveries.map(\.id))
        #expect(heldIDs.count == 3)
        #expect(restIDs.count == 9, "every delivery the held claim did not lock")
        #expect(heldIDs.isDisjoint(with: restIDs))
        #expect(try claim(f.h, at: fire + 1) == ([], 0), "both claims committed their leases")
    }
}
