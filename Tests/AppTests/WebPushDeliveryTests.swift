import Domain
import Foundation
import Hashing
import Logging
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// Web Push end to end (docs/notifications.md#web-push-sender--built): a mutation through the API
/// queues a notification, `NotificationDispatcher.runOnce(at:)` hands it to `WebPushSender`, which
/// POSTs it through a real `OutboundClient` (TLS, test CA) to `Tests/Fakes/webpush_service.py` — a
/// fake push service that verifies VAPID and decrypts the message with keys it made. Every `now`
/// is explicit; runs on SQLite and PostgreSQL (`CHRONIR_TEST_BACKEND`).
@Suite("Web Push delivery — API → outbox → dispatcher → sender → fake push service")
struct WebPushDeliveryTests {
    static let subject = "mailto:ops@example.com"
    static let quiet = Logger.quiet

    /// A group (owner + `members`), a fake push service, and a dispatcher whose only sender is Web
    /// Push. The alarm-created notification is drained before any device exists, so each test sees
    /// only what it causes.
    struct Setup {
        let f: SharedAlarmFixture
        let push: WebPushService
        let vapidKey: P256.PrivateKey
        let dispatcher: NotificationDispatcher
        let alarmID: String
        /// 2026-02-06T10:00:00Z: the alarm's first fire.
        let fire: Int64
        var h: AppHarness { f.h }

        static func make(
            members: Int, rule: String = "any", assignees: [Int] = [], limits: NotificationDispatcher.Limits = .init()
        ) async throws -> Setup {
            let f = try await SharedAlarmFixture.make(members: members)
            let push = try await WebPushService.start()
            let key = P256.PrivateKey()
            let sender = try WebPushSender(vapidKey: key, subject: WebPushDeliveryTests.subject, client: push.client)
            let dispatcher = NotificationDispatcher(
                database: f.h.database, clock: f.h.clock, logger: WebPushDeliveryTests.quiet, senders: [sender], limits: limits,
                unitRandom: { 0.5 })
            let alarm = try await f.createAlarm(rule: rule, assignees: assignees.map { f.members[$0] })
            let alarmID = try #require(alarm["id"] as? String)
            try await dispatcher.runOnce(at: f.h.clock.nowMilliseconds())
            let fire = Int64(1_770_372_000_000)
            try await push.setClock(milliseconds: fire)
            return Setup(f: f, push: push, vapidKey: key, dispatcher: dispatcher, alarmID: alarmID, fire: fire)
        }

        /// Registers a Web Push device for `account`, subscribed at the fake as `id`.
        func registerDevice(_ account: GroupFixture.Account, as id: String) async throws {
            let subscription = try await push.subscribe(id)
            try await h.expect(
                201, .put, "/v1/me/devices/web-\(id)",
                json: #"{"platform":"web","provider":"webpush","subscription":\#(subscription.json)}"#, token: account.token)
        }

        /// Deliveries waiting, with their next attempt and attempts made.
        func deliveries() throws -> [(nextAttempt: Int64, attempts: Int64, error: String?)] {
            try h.database.readSync { db in
                try db.query("SELECT next_attempt_ms, attempts, last_error FROM notification_deliveries ORDER BY id").map {
                    ($0.int("next_attempt_ms") ?? -1, $0.int("attempts") ?? -1, $0.string("last_error"))
                }
            }
        }
    }

    @Test("a completion by A reaches B decrypted, with TTL, Urgency, Topic and a verified VAPID JWT; A and a muted member get nothing")
    func completionReachesMembers() async throws {
        let s = try await Setup.make(members: 3)
        let (a, b, muted) = (s.f.members[0], s.f.members[1], s.f.members[2])
        try await s.h.expect(200, .patch, "\(s.f.g)/membership", json: #"{"notification_enabled":false}"#, token: muted.token)
        try await s.registerDevice(a, as: "a")
        try await s.registerDevice(b, as: "b")
        try await s.registerDevice(muted, as: "muted")

        s.h.clock.set(s.fire)
        #expect(await s.f.answer(s.alarmID, by: a).status == 201)
        let round = try await s.dispatcher.runOnce(at: s.fire)
        #expect(round.delivered == 1)
        #expect(round.sent == 1)
        #expect(try s.deliveries().isEmpty)

        let received = try await s.push.received()
        #expect(received.map(\.id) == ["b"], "only B: not the actor, not the muted member")
        let push = try #require(received.first)
        #expect(push.error == nil)
        #expect(push.status == 201)
        #expect(push.notification == ["title": "Feed the cat", "body": "M0 completed it · Household"])
        let completionID = try #require(push.data["completion_id"])
        #expect(
            push.data == [
                "type": "shared_completion", "group_id": s.f.groupID, "alarm_id": s.alarmID, "completion_id": completionID,
                "deep_link": "/alarm/\(s.alarmID)",
            ])
        #expect(push.headers["ttl"] == "86400", "queued and sent at the same instant: the whole day")
        #expect(push.headers["urgency"] == "normal")
        #expect(push.headers["topic"] == WebPushSender.topic(forKey: "shared_completion:\(completionID)"))
        #expect(push.headers["content-encoding"] == "aes128gcm")
        #expect(push.vapidKey == VAPIDKey.publicKeyText(s.vapidKey))
        #expect(push.jwt["aud"] as? String == s.push.origin)
        #expect(push.jwt["exp"] as? String == String(s.fire / 1_000 + WebPushSender.validitySeconds))
        #expect(push.jwt["sub"] as? String == Self.subject)
    }

    @Test("410 from the push service deletes B's device and every delivery to it")
    func goneDeletesDevice() async throws {
        var limits = NotificationDispatcher.Limits()
        limits.claimBatch = 1
        let s = try await Setup.make(members: 2, limits: limits)
        let (a, b) = (s.f.members[0], s.f.members[1])
        try await s.registerDevice(b, as: "b")
        try await s.push.answer("b", status: 410)
        #expect(try await s.h.expect(200, .get, "/v1/me/devices", token: b.token).json["devices"] as? [Any] != nil)

        s.h.clock.set(s.fire)
        #expect(await s.f.answer(s.alarmID, by: a).status == 201)
        try await s.h.expect(200, .patch, "\(s.f.g)/alarms/\(s.alarmID)", json: #"{"title":"Feed both cats"}"#, token: s.f.owner.token)
        let round = try await s.dispatcher.runOnce(at: s.fire)
        #expect(round.expansion.deliveries == 2, "the completion and the edit, both to B's device")
        #expect(round.devicesGone == 1, "one claimed per round")
        #expect(try s.deliveries().isEmpty, "the unclaimed delivery went with the device")
        let devices = try await s.h.expect(200, .get, "/v1/me/devices", token: b.token).json["devices"] as? [Any]
        #expect(devices?.isEmpty == true)
        #expect(try await s.push.received().map(\.status) == [410])
        #expect(try await s.dispatcher.runOnce(at: s.fire + 60_000).sent == 0)
    }

    @Test("503 with Retry-After: 7 is retried 7 s later, then delivered; the cached VAPID JWT is reused")
    func unavailableRetried() async throws {
        let s = try await Setup.make(members: 2)
        let (a, b) = (s.f.members[0], s.f.members[1])
        try await s.registerDevice(b, as: "b")
        try await s.push.answer("b", status: 503, retryAfter: "7")

        s.h.clock.set(s.fire)
        #expect(await s.f.answer(s.alarmID, by: a).status == 201)
        let first = try await s.dispatcher.runOnce(at: s.fire)
        #expect(first.retried == 1)
        let waiting = try s.deliveries()
        #expect(waiting.map(\.nextAttempt) == [s.fire + 7_000], "Retry-After wins over the back-off")
        #expect(waiting.map(\.attempts) == [1])
        #expect(waiting.first?.error == "push service answered 503")

        #expect(try await s.dispatcher.runOnce(at: s.fire + 6_999).sent == 0, "not before its time")
        try await s.push.answer("b", status: 201)
        let second = try await s.dispatcher.runOnce(at: s.fire + 7_000)
        #expect(second.delivered == 1)
        #expect(try s.deliveries().isEmpty)

        let received = try await s.push.received()
        #expect(received.map(\.status) == [503, 201])
        #expect(received.allSatisfy { $0.error == nil && $0.notification["title"] == "Feed the cat" })
        #expect(Set(received.compactMap { $0.headers["topic"] }).count == 1, "the same Topic on every attempt")
        #expect(received.map { $0.headers["ttl"] } == ["86400", "86393"], "TTL counts down to the expiry")
        #expect(Set(received.compactMap { $0.headers["authorization"] }).count == 1, "one JWT for the origin")
    }

    @Test("an alarm_fired (fire scheduler, then dispatcher) reaches the required member, urgent, TTL 15 min")
    func alarmFired() async throws {
        let s = try await Setup.make(members: 2, rule: "all", assignees: [1])
        let (a, b) = (s.f.members[0], s.f.members[1])
        try await s.registerDevice(a, as: "a")
        try await s.registerDevice(b, as: "b")

        // Staged a look-ahead before the instant, expanded at once, sent at the instant.
        let ahead = s.fire - NotificationScheduler.lookaheadMilliseconds
        #expect(try FireScheduler.runOnce(database: s.h.database, at: ahead - 1, logger: Self.quiet).total == 0)
        #expect(try FireScheduler.runOnce(database: s.h.database, at: ahead, logger: Self.quiet).queued == 1)
        let staged = try await s.dispatcher.runOnce(at: ahead)
        #expect(staged.expansion.deliveries == 1 && staged.sent == 0, "made ahead, not sent")
        #expect(try await s.dispatcher.runOnce(at: s.fire - 1).sent == 0, "not before its instant")
        #expect(try FireScheduler.runOnce(database: s.h.database, at: s.fire, logger: Self.quiet).total == 0)
        let round = try await s.dispatcher.runOnce(at: s.fire)
        #expect(round.delivered == 1)
        #expect(round.expansion.expanded == 0, "nothing left to expand at the instant")

        let received = try await s.push.received()
        #expect(received.map(\.id) == ["b"], "only the assignee")
        let push = try #require(received.first)
        #expect(push.error == nil)
        #expect(push.notification["title"] == "Feed the cat")
        #expect(push.data["type"] == "alarm_fired")
        #expect(push.data["alarm_id"] == s.alarmID)
        #expect(push.headers["urgency"] == "high")
        #expect(push.headers["ttl"] == "900")
        #expect(push.headers["topic"] == WebPushSender.topic(forKey: "alarm_fired:\(s.alarmID):\(s.fire)"))
    }

    @Test("the fake really checks VAPID: a push service whose clock is past the JWT's exp answers 401, and the delivery is dropped")
    func refusedJWTRejected() async throws {
        let s = try await Setup.make(members: 2)
        let (a, b) = (s.f.members[0], s.f.members[1])
        try await s.registerDevice(b, as: "b")
        try await s.push.setClock(milliseconds: s.fire + WebPushSender.validitySeconds * 1_000)

        s.h.clock.set(s.fire)
        #expect(await s.f.answer(s.alarmID, by: a).status == 201)
        let round = try await s.dispatcher.runOnce(at: s.fire)
        #expect(round.dropped == 1, "401 cannot succeed on a retry")
        #expect(try s.deliveries().isEmpty)
        let received = try await s.push.received()
        #expect(received.map(\.status) == [401])
        #expect(received.first?.error?.contains("exp") == true, "\(received.first?.error ?? "")")
    }

    @Test("a member removed after the notification was queued gets nothing of it, only the removal's own push")
    func removedMember() async throws {
        let s = try await Setup.make(members: 2)
        let (a, b) = (s.f.members[0], s.f.members[1])
        try await s.registerDevice(b, as: "b")

        s.h.clock.set(s.fire)
        #expect(await s.f.answer(s.alarmID, by: a).status == 201)
        let queued = try s.h.database.readSync { db in try NotificationOutbox.entries(state: .pending, on: db) }
        #expect(queued.map(\.recipients) == [[s.f.owner.id, b.id]], "B was a recipient when it was queued")
        try await s.h.expect(204, .delete, "\(s.f.g)/members/\(b.id)", token: s.f.owner.token)

        // The completion reaches B no more; the removal's own lifecycle push does (docs/apps.md#lifecycle-pushes).
        let round = try await s.dispatcher.runOnce(at: s.fire)
        #expect(round.expansion.expanded == 2)
        #expect(round.expansion.deliveries == 1)
        #expect(round.sent == 1)
        #expect(try await s.push.received().map { $0.data["type"] } == ["group_access_ended"])
    }
}
