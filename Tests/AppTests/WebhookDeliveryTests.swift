import Domain
import Foundation
import Hashing
import Logging
import Outbound
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// The operator webhook end to end: outbox → dispatcher → WebhookSender → a real HTTPS receiver
/// (`Tests/Fakes/webhook_receiver.py`, which checks the signature like a real one must).
@Suite("Notification dispatch — the operator webhook")
struct WebhookDeliveryTests {
    /// The receiver (`ProviderFake`) and the secret it checks signatures with.
    final class Receiver: Sendable {
        let fake: ProviderFake
        let secret: [UInt8]
        var client: OutboundClient { fake.client }
        var url: String { fake.origin }

        static func start() async throws -> Receiver {
            let secret = SecureRandom.bytes(32)
            return Receiver(fake: try await ProviderFake.start("webhook_receiver.py", [Hex.encode(secret)]), secret: secret)
        }

        private init(fake: ProviderFake, secret: [UInt8]) {
            self.fake = fake
            self.secret = secret
        }

        func sender() throws -> WebhookSender { try #require(WebhookSender(url: url + "/hook", secret: secret, client: client)) }

        /// What the receiver recorded.
        func received() async throws -> [[String: Any]] {
            let response = try await client.send(OutboundRequest(url: url + "/received"))
            return try JSONSerialization.jsonObject(with: Data(response.body)) as? [[String: Any]] ?? []
        }

        /// Scripts the receiver's next answers.
        func script(_ answers: String) async throws {
            _ = try await client.send(
                OutboundRequest(method: .post, url: url + "/script", body: Array(#"{"answers":\#(answers)}"#.utf8)))
        }
    }

    static let quiet = Logger.quiet

    func dispatcher(_ h: AppHarness, _ receiver: Receiver, metrics: ChronirMetrics? = nil) throws -> NotificationDispatcher {
        NotificationDispatcher(
            database: h.database, clock: h.clock, logger: Self.quiet, senders: [try receiver.sender()],
            metrics: metrics?.notifications, unitRandom: { 0.5 })
    }

    /// The value of the `chronir_notifications_total` series with these labels, from `metrics`' exposition.
    func sends(_ metrics: ChronirMetrics, type: String, outcome: String) -> String? {
        String(decoding: metrics.exposition(), as: UTF8.self).split(separator: "\n").first { line in
            line.hasPrefix("chronir_notifications_total{") && line.contains(#"provider="webhook""#)
                && line.contains(#"type="\#(type)""#) && line.contains(#"outcome="\#(outcome)""#)
        }.map { String($0.split(separator: " ").last ?? "") }
    }

    @Test("a completion reaches the webhook once, signed, with its recipients; nothing for a notification nobody may get")
    func delivered() async throws {
        let receiver = try await Receiver.start()
        let f = try await SharedAlarmFixture.make(members: 2)
        let h = f.h
        let dispatcher = try dispatcher(h, receiver)
        #expect(try await dispatcher.runOnce(at: h.clock.nowMilliseconds()).delivered == 2, "the fixture's two joins")
        let alarmID = try #require(try await f.createAlarm()["id"] as? String)
        var round = try await dispatcher.runOnce(at: h.clock.nowMilliseconds())
        #expect(round.delivered == 1, "shared_alarm_created")

        #expect(await f.answer(alarmID, by: f.members[0]).status == 201)
        // Queued for the owner and m1; m1 mutes before it is sent: the webhook hears of the owner only.
        try await h.expect(200, .patch, "\(f.g)/membership", json: #"{"notification_enabled":false}"#, token: f.members[1].token)
        round = try await dispatcher.runOnce(at: h.clock.nowMilliseconds())
        #expect(round.delivered == 1)
        #expect(try await dispatcher.runOnce(at: h.clock.nowMilliseconds()).sent == 0, "each notification once")

        let received = try await receiver.received()
        #expect(received.count == 4)
        #expect(received.allSatisfy { $0["signature_ok"] as? Bool == true })
        let completion = try #require(received.last)
        let body = try #require(completion["body"] as? [String: Any])
        #expect(body["type"] as? String == "shared_completion")
        #expect(body["title"] as? String == "Feed the cat")
        #expect(body["recipients"] as? [String] == [f.owner.id], "as re-checked when sent, not as queued")
        #expect((body["data"] as? [String: String])?["alarm_id"] == alarmID)
        #expect(completion["key"] as? String == body["key"] as? String)
        #expect(completion["content_type"] as? String == "application/json")

        // Everyone else muted: the next completion has no recipients, so no webhook call either.
        for account in [f.owner, f.members[1]] {
            try await h.expect(200, .patch, "\(f.g)/membership", json: #"{"notification_enabled":false}"#, token: account.token)
        }
        h.clock.set(Self.ms("2026-02-07T10:00:30.000Z"))
        #expect(await f.answer(alarmID, by: f.members[0]).status == 201)
        #expect(try await dispatcher.runOnce(at: h.clock.nowMilliseconds()).sent == 0)
        #expect(try await receiver.received().count == 4)
    }

    @Test(
        "the operator's webhook on loopback needs no --push-allow-private-endpoints; users' endpoints stay refused"
    )
    func operatorWebhookNeedsNoPrivateFlag() async throws {
        let receiver = try await Receiver.start()
        let f = try await SharedAlarmFixture.make(members: 1)
        let h = f.h
        let directory = TemporaryDirectory()
        let secretFile = directory.file(named: "webhook.secret")
        try Data(receiver.secret).write(to: URL(fileURLWithPath: secretFile))
        // The production configuration: no private flag; the operator's webhook on 127.0.0.1.
        var config = NotificationsConfiguration()
        config.webPushEnabled = false
        config.webhookURL = receiver.url + "/hook"
        config.webhookSecretFile = secretFile
        config.caFile = receiver.fake.authority.certificatePath
        let service = try NotificationService(
            config: config, dataDirectory: directory.path, publicBaseURL: "https://example.com", database: h.database,
            clock: h.clock, logger: Self.quiet)
        defer { service.stop() }
        let round = try await service.dispatcher.runOnce(at: h.clock.nowMilliseconds())
        #expect(round.delivered == 1 && round.dropped == 0, "the fixture's join reaches 127.0.0.1")
        #expect(try await receiver.received().count == 1)
        // The client users' push endpoints go through still refuses the same address.
        await #expect(throws: OutboundError.destinationRefused(.address(.v4(127, 0, 0, 1), .loopback))) {
            try await service.client.send(OutboundRequest(method: .post, url: receiver.url + "/hook"))
        }
    }

    @Test("503 with Retry-After: 7 is retried 7 s later, not before; a 400 drops the delivery; past its TTL it expires")
    func retries() async throws {
        let receiver = try await Receiver.start()
        let f = try await SharedAlarmFixture.make(members: 1)
        let h = f.h
        let metrics = ChronirMetrics()
        let dispatcher = try dispatcher(h, receiver, metrics: metrics)
        #expect(try await dispatcher.runOnce(at: h.clock.nowMilliseconds()).delivered == 1, "the fixture's join")
        #expect(sends(metrics, type: "group_member_joined", outcome: "delivered") == "1")
        try await receiver.script(#"[{"status":503,"retry_after":"7"},{"status":400}]"#)
        _ = try await f.createAlarm()
        let now = h.clock.nowMilliseconds()
        #expect(try await dispatcher.runOnce(at: now).retried == 1)
        let next = try h.database.readSync { db in
            try db.scalar("SELECT next_attempt_ms FROM notification_deliveries")
        }
        #expect(next == .integer(now + 7_000))
        #expect(try await dispatcher.runOnce(at: now + 6_999).sent == 0)
        #expect(try await dispatcher.runOnce(at: now + 7_000).dropped == 1, "the scripted 400")
        #expect(try h.database.readSync { db in try NotificationDeliveries.depth(on: db) } == 0)
        #expect(try await receiver.received().count == 3)

        // A failure close to the end of the 1-day TTL: the back-off would pass it, so the delivery is dropped.
        try await receiver.script(#"[{"status":500}]"#)
        try await h.expect(201, .post, "\(f.g)/alarms", json: Self.alarmJSON, token: f.owner.token)
        let created = h.clock.nowMilliseconds()
        let late = try await dispatcher.runOnce(at: created + 86_400_000 - 1_000)
        #expect(late.dropped == 1 && late.retried == 0)
        #expect(sends(metrics, type: "shared_alarm_created", outcome: "retried") == "1")
        #expect(sends(metrics, type: "shared_alarm_created", outcome: "rejected") == "1")
        #expect(sends(metrics, type: "shared_alarm_created", outcome: "expired") == "1")
        let exposition = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(exposition.contains("chronir_notification_deliveries_pending 0"))
        #expect(exposition.contains("chronir_notification_lag_seconds_count 1"))
        #expect(try h.database.readSync { db in try NotificationDeliveries.depth(on: db) } == 0)
        #expect(try await receiver.received().count == 4)
    }

    @Test("the body is JSONEncoder's, byte for byte, written without it")
    func bodyBytes() {
        let body = WebhookSender.Body(
            key: "alarm_fired:a_1:1764140400000", type: "alarm_fired", title: "Pills \"am\" / 😀", body: "Time\n\u{7f}",
            data: ["alarm_id": "a_1", "group_id": "g_1", "occurrence": "2026-11-26T07:00:00.000Z"], recipients: ["u_1", "u_2"],
            expiresAt: Timestamp(milliseconds: 1_764_226_800_000))
        #expect(WebhookSender.body(body) == DocumentCoding.encode(body))
    }

    @Test("Retry-After: delta-seconds and HTTP-date; the signature is v1= + hex HMAC of timestamp.body")
    func units() {
        #expect(RetryAfter.milliseconds("7", now: 0) == 7_000)
        #expect(RetryAfter.milliseconds(" 120 ", now: 0) == 120_000)
        #expect(RetryAfter.milliseconds("Sun, 06 Nov 1994 08:49:37 GMT", now: 784_111_777_000 - 5_000) == 5_000)
        #expect(RetryAfter.milliseconds("Sun, 06 Nov 1994 08:49:37 GMT", now: 784_111_777_000 + 5_000) == 0)
        for bad in [nil, "", "-1", "1.5", "soon", "Sun, 06 Nov 1994 08:49:37 UTC"] {
            #expect(RetryAfter.milliseconds(bad, now: 0) == nil, "\(bad ?? "nil")")
        }
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?" — here split as "<t>.<body>".
        let signature = WebhookSender.signature(
            secret: Array("Jefe".utf8), timestamp: 0, body: Array("what do ya want for nothing?".utf8))
        let expected = HMACSHA256.authenticationCode(key: Array("Jefe".utf8), message: Array("0.what do ya want for nothing?".utf8))
        #expect(signature == "v1=" + Hex.encode(expected))
        let client = OutboundClient()
        defer { client.close() }
        #expect(WebhookSender(url: "https://x", secret: [1, 2, 3], client: client) == nil, "a short secret is refused")
    }

    static let alarmJSON =
        #"{"title":"Water plants",\#(SharedAlarmFixture.dailyTen),"completion_rule":"any","assigned_to_uids":[]}"#

    static func ms(_ iso: String) -> Int64 {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return Int64((formatter.date(from: iso)!.timeIntervalSince1970 * 1000).rounded())
    }
}
