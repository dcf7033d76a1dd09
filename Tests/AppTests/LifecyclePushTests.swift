import Domain
import Foundation
import Hashing
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// Lifecycle pushes (docs/apps.md#lifecycle-pushes): deleting a shared alarm, a membership ending,
/// a group deleted or frozen reach every affected device as a silent push naming what to drop —
/// through the API (or the operator's Store call), the outbox, `NotificationDispatcher.runOnce` and
/// the real senders to the fakes, which check what Apple and Google check (`fake_apns.py`: a
/// background push has priority 5 and `content-available: 1` without alert or sound). Runs on both
/// engines (`CHRONIR_TEST_BACKEND`).
@Suite("Lifecycle pushes — silent, to every affected device")
struct LifecyclePushTests {
    typealias World = APNsSenderTests.World

    static func token(_ byte: String) -> String { APNsSenderTests.token(byte) }

    /// The owner's and the member's iPhones.
    static func phones(_ w: World) async throws {
        try await w.registerDevice("owner-phone", token: token("0a"), for: w.f.owner)
        try await w.registerDevice("member-phone", token: token("1b"), for: w.f.members[0])
    }

    /// What the fake APNs accepted since `from`: (device token, headers, payload).
    static func pushes(_ w: World, from: Int = 0) async throws -> [(token: String, headers: [String: String], payload: [String: Any])] {
        try await w.requests().dropFirst(from).map { request in
            #expect(request["status"] as? Int == 200, "\(request)")
            return (
                request["token"] as? String ?? "", request["headers"] as? [String: String] ?? [:],
                request["payload"] as? [String: Any] ?? [:]
            )
        }
    }

    /// Every push in `pushes` is a background push whose `aps` is only `content-available: 1`, and
    /// returns their `data`.
    static func silentData(_ pushes: [(token: String, headers: [String: String], payload: [String: Any])]) -> [String: [String: String]] {
        var byToken: [String: [String: String]] = [:]
        for push in pushes {
            #expect(push.headers["apns-push-type"] == "background")
            #expect(push.headers["apns-priority"] == "5")
            #expect(push.payload["aps"] as? [String: Int] == ["content-available": 1], "nothing shown, nothing played")
            byToken[push.token] = push.payload["data"] as? [String: String] ?? [:]
        }
        return byToken
    }

    @Test("deleting a shared alarm: every member's phone, muted or not, the deleter's too, gets shared_alarm_deleted once")
    func alarmDeleted() async throws {
        let w = try await World.make()
        try await Self.phones(w)
        try await w.h.expect(200, .patch, "\(w.f.g)/membership", json: #"{"notification_enabled":false}"#, token: w.f.members[0].token)
        try await w.h.expect(204, .delete, "\(w.f.g)/alarms/\(w.alarmID)", token: w.f.owner.token)
        let round = try await w.round()
        #expect(round.delivered == 2)
        let data = Self.silentData(try await Self.pushes(w))
        let expected = [
            "type": "shared_alarm_deleted", "group_id": w.f.groupID, "alarm_id": w.alarmID, "drop": "alarm",
            "deep_link": "/group/\(w.f.groupID)",
        ]
        #expect(data == [Self.token("0a"): expected, Self.token("1b"): expected])
        let entry = try #require(try w.h.database.readSync { db in try NotificationOutbox.entries(on: db) }.last)
        #expect(entry.key == "shared_alarm_deleted:\(w.alarmID)")
        #expect(entry.expiresAt - entry.createdAt == NotificationType.lifecycleTimeToLiveMilliseconds)
        // Exactly once: a second round sends nothing, a second delete is 404 and queues nothing.
        #expect(try await w.round().sent == 0)
        try await w.h.expect(404, .delete, "\(w.f.g)/alarms/\(w.alarmID)", token: w.f.owner.token)
        #expect(try await w.round().sent == 0)
        #expect(try await w.requests().count == 2)
    }

    @Test("removed (by the owner or the operator) or left: that member's phone gets group_access_ended; nobody else")
    func membershipEnds() async throws {
        let f = try await SharedAlarmFixture.make(members: 3)
        let w = try await World.make(fixture: f)
        let (removed, leaver, byOperator) = (f.members[0], f.members[1], f.members[2])
        try await w.registerDevice("owner-phone", token: Self.token("0a"), for: f.owner)
        try await w.registerDevice("removed-phone", token: Self.token("1b"), for: removed)
        try await w.registerDevice("leaver-phone", token: Self.token("2c"), for: leaver)
        try await w.registerDevice("leaver-tablet", token: Self.token("2d"), for: leaver)
        try await w.registerDevice("operator-phone", token: Self.token("3e"), for: byOperator)

        try await w.h.expect(204, .delete, "\(f.g)/members/\(removed.id)", token: f.owner.token)
        try await w.h.expect(204, .delete, "\(f.g)/members/\(leaver.id)", token: leaver.token)
        let now = w.h.clock.nowMilliseconds()
        try w.h.database.writeSync { db in
            _ = try GroupStore.adminRemoveMember(groupID: f.groupID, userID: byOperator.id, reason: "spam", at: now, on: db)
        }
        #expect(try await w.round().delivered == 4)
        let data = Self.silentData(try await Self.pushes(w))
        func expected(_ reason: String) -> [String: String] {
            ["type": "group_access_ended", "group_id": f.groupID, "drop": "group", "reason": reason, "deep_link": "/"]
        }
        #expect(
            data == [
                Self.token("1b"): expected("removed"), Self.token("2c"): expected("left"), Self.token("2d"): expected("left"),
                Self.token("3e"): expected("removed"),
            ], "the leaver's other device too; the owner gets nothing")
    }

    @Test("freezing, unfreezing and deleting the group: every member's phone, the owner's included")
    func groupFrozenAndDeleted() async throws {
        let w = try await World.make()
        try await Self.phones(w)
        let groupID = w.f.groupID
        for frozen in [true, false] {
            let now = w.h.clock.nowMilliseconds()
            try w.h.database.writeSync { db in
                _ = try GroupStore.adminSetFrozen(groupID: groupID, frozen: frozen, reason: "review", at: now, on: db)
            }
        }
        #expect(try await w.round().delivered == 4)
        try await w.h.expect(204, .delete, w.f.g, token: w.f.owner.token)
        #expect(try await w.round().delivered == 2)
        let pushes = try await Self.pushes(w)
        #expect(pushes.count == 6)
        let types = pushes.map { ($0.payload["data"] as? [String: String])?["type"] ?? "" }
        #expect(types.filter { $0 == "group_frozen" }.count == 2)
        #expect(types.filter { $0 == "group_unfrozen" }.count == 2)
        #expect(Array(types.suffix(2)) == ["group_deleted", "group_deleted"])
        let data = Self.silentData(Array(pushes.suffix(2)))
        let deleted = ["type": "group_deleted", "group_id": groupID, "drop": "group", "reason": "deleted", "deep_link": "/"]
        #expect(data == [Self.token("0a"): deleted, Self.token("1b"): deleted])
        let frozen = try #require(pushes.first { ($0.payload["data"] as? [String: String])?["type"] == "group_frozen" })
        #expect((frozen.payload["data"] as? [String: String])?["drop"] == "group")
        #expect((frozen.payload["data"] as? [String: String])?["deep_link"] == "/group/\(groupID)")
    }

    @Test("a suspended account's devices get nothing; a deleted account has none")
    func inactiveAccount() async throws {
        let w = try await World.make()
        try await Self.phones(w)
        let member = w.f.members[0].id
        let now = w.h.clock.nowMilliseconds()
        try w.h.database.writeSync { db in
            try db.run("UPDATE users SET status = 'suspended' WHERE id = ?1", [.text(member)])
        }
        try await w.h.expect(204, .delete, "\(w.f.g)/alarms/\(w.alarmID)", token: w.f.owner.token)
        #expect(try await w.round(at: now).delivered == 1)
        #expect(try await Self.pushes(w).map(\.token) == [Self.token("0a")])
    }

    @Test("FCM gets a data-only message (no notification); Web Push gets the same data, decrypted")
    func fcmAndWebPush() async throws {
        let push = try await WebPushService.start()
        let vapid = P256.PrivateKey()
        let w = try await FCMSenderTests.World.make { _ in
            [try WebPushSender(vapidKey: vapid, subject: WebPushDeliveryTests.subject, client: push.client)]
        }
        try await w.registerAndroid("pixel", token: "fcm-token-1", for: w.f.members[0])
        let subscription = try await push.subscribe("browser")
        try await w.h.expect(
            201, .put, "/v1/me/devices/web-browser",
            json: #"{"platform":"web","provider":"webpush","subscription":\#(subscription.json)}"#, token: w.f.members[0].token)
        try await push.setClock(milliseconds: w.h.clock.nowMilliseconds())
        try await w.h.expect(204, .delete, "\(w.f.g)/alarms/\(w.alarmID)", token: w.f.owner.token)
        #expect(try await w.round().delivered == 2)

        let expected = [
            "type": "shared_alarm_deleted", "group_id": w.f.groupID, "alarm_id": w.alarmID, "drop": "alarm",
            "deep_link": "/group/\(w.f.groupID)",
        ]
        let messages = try await w.fake.received()["messages"] as? [[String: Any]] ?? []
        let message = try #require(messages.last?["message"] as? [String: Any])
        #expect(messages.last?["status"] as? Int == 200)
        #expect(message["notification"] == nil, "a data message: the app handles it, nothing is shown")
        #expect(message["data"] as? [String: String] == expected)
        #expect((message["android"] as? [String: Any])?["priority"] as? String == "NORMAL")
        let apns = try #require(message["apns"] as? [String: Any])
        #expect(apns["headers"] as? [String: String] == ["apns-priority": "5", "apns-push-type": "background"])

        let received = try await push.received()
        #expect(received.map(\.id) == ["browser"])
        #expect(received.first?.status == 201)
        #expect(received.first?.data == expected)
    }
}
