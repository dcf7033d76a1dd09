import Domain
import Foundation
import Hashing
import Outbound
import Push
import TestSupport
import Testing
import Wire

@testable import App
@testable import Store

/// The Web Push sender's pure parts (docs/notifications.md#web-push-sender--built): Retry-After,
/// Topic, the response → outcome table, the JWT cache, the payload; and the VAPID key file.
@Suite("Web Push sender — headers, outcomes, VAPID key file")
struct WebPushSenderTests {
    /// 2026-02-06T10:00:00Z in ms.
    static let now: Int64 = 1_770_372_000_000

    @Test("Retry-After: delay-seconds or an HTTP-date, as milliseconds from now")
    func retryAfter() {
        #expect(RetryAfter.milliseconds("7", now: Self.now) == 7_000)
        #expect(RetryAfter.milliseconds(" 7\t", now: Self.now) == 7_000)
        #expect(RetryAfter.milliseconds("0", now: Self.now) == 0)
        #expect(RetryAfter.milliseconds("31536000", now: Self.now) == RetryAfter.maxSeconds * 1_000)
        #expect(RetryAfter.milliseconds("31536001", now: Self.now) == RetryAfter.maxSeconds * 1_000, "clamped")
        #expect(RetryAfter.milliseconds("99999999999999999999999", now: Self.now) == RetryAfter.maxSeconds * 1_000)
        let in30s = HTTPDate.format(epochSeconds: Int(Self.now / 1_000) + 30)
        #expect(RetryAfter.milliseconds(in30s, now: Self.now) == 30_000)
        #expect(RetryAfter.milliseconds(in30s, now: Self.now + 400) == 29_600, "from now, to the millisecond")
        #expect(RetryAfter.milliseconds("Sun, 06 Nov 1994 08:49:37 GMT", now: Self.now) == 0, "a past date means now")
        for invalid in ["", " ", "-1", "+7", "1.5", "7s", "soon", "Sun, 06 Nov 1994 08:49:37 UTC"] {
            #expect(RetryAfter.milliseconds(invalid, now: Self.now) == nil, "\(invalid.debugDescription)")
        }
    }

    @Test("Topic: base64url of the first 24 bytes of SHA-256(outbox key), 32 characters (RFC 8030 §5.4)")
    func topic() {
        // Vectors from Python: base64.urlsafe_b64encode(hashlib.sha256(key).digest()[:24]).
        #expect(WebPushSender.topic(forKey: "shared_completion:abc") == "PUUzHFID5emzCy-b7Du2FRGgBxzF2MN5")
        #expect(WebPushSender.topic(forKey: "alarm_fired:x:1") == "gRu22_fwnWRJEevq1dZvnfVWpWTOy7Rb")
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        for key in ["", "k", String(repeating: "long key ", count: 100)] {
            let topic = WebPushSender.topic(forKey: key)
            #expect(topic.count == 32)
            #expect(topic.allSatisfy(alphabet.contains))
        }
    }

    @Test("responses map to outcomes")
    func statuses() {
        func outcome(_ status: Int, _ retryAfter: String? = nil) -> SendOutcome {
            WebPushSender.outcome(status: status, retryAfter: retryAfter, now: Self.now)
        }
        for status in [200, 201, 202] { #expect(outcome(status) == .delivered) }
        for status in [404, 410] { #expect(outcome(status) == .deviceGone(reason: "push service answered \(status)")) }
        #expect(outcome(429, "7") == .retry(reason: "push service answered 429", retryAfterMilliseconds: 7_000))
        #expect(outcome(503, "7") == .retry(reason: "push service answered 503", retryAfterMilliseconds: 7_000))
        #expect(outcome(500) == .retry(reason: "push service answered 500", retryAfterMilliseconds: nil))
        #expect(outcome(502, "garbage") == .retry(reason: "push service answered 502", retryAfterMilliseconds: nil))
        for status in [400, 401, 403, 405, 413, 301, 100] {
            #expect(outcome(status) == .rejected(reason: "push service answered \(status)"))
        }
        for error: OutboundError in [.timeout, .connectFailed("x"), .tls("x"), .tooManyQueued, .other(code: 56, message: "reset")] {
            guard case .retry(_, nil) = WebPushSender.outcome(of: error) else {
                Issue.record("\(error) should be retried")
                continue
            }
        }
        let refused = WebPushSender.outcome(of: .destinationRefused(.address(IPAddress("10.0.0.1")!, .privateUse)))
        guard case .rejected(let reason) = refused else {
            Issue.record("\(refused)")
            return
        }
        #expect(reason.contains("destination refused"))
        guard case .rejected = WebPushSender.outcome(of: .invalidRequest("bad url")) else {
            Issue.record("invalid request")
            return
        }
    }

    @Test("Urgency follows the type's priority")
    func urgency() {
        #expect(WebPushSender.urgency(NotificationType.alarmFired.policy.priority) == "high")
        #expect(WebPushSender.urgency(NotificationType.sharedCompletion.policy.priority) == "normal")
        #expect(WebPushSender.urgency(NotificationType.groupMemberJoined.policy.priority) == "low")
    }

    @Test("the payload is the notification and its data, as sorted JSON")
    func payload() {
        let content = NotificationContent(title: "Feed \"the\" cat", body: "M0 completed it", data: ["type": "t", "alarm_id": "a"])
        #expect(
            String(decoding: WebPushSender.payload(content), as: UTF8.self)
                == #"{"data":{"alarm_id":"a","type":"t"},"notification":{"body":"M0 completed it","title":"Feed \"the\" cat"}}"#)
    }

    @Test("the VAPID JWT is reused per origin until an hour before exp, then renewed")
    func jwtCache() throws {
        let client = OutboundClient()
        defer { client.close() }
        let sender = try WebPushSender(vapidKey: P256.PrivateKey(), subject: "mailto:ops@example.com", client: client)
        let a = try PushEndpoint("https://push.example.net/send/1")
        let a2 = try PushEndpoint("https://push.example.net/send/2")
        let b = try PushEndpoint("https://other.example.net:8443/send/1")
        let first = try sender.authorization(for: a, now: Self.now)
        #expect(try sender.authorization(for: a2, now: Self.now + 1_000) == first, "same origin, another subscription")
        let renewAt = Self.now + (WebPushSender.validitySeconds - WebPushSender.renewBeforeExpirySeconds) * 1_000
        #expect(try sender.authorization(for: a, now: renewAt - 1_000) == first)
        let renewed = try sender.authorization(for: a, now: renewAt)
        #expect(renewed != first)
        #expect(try sender.authorization(for: b, now: renewAt) != renewed, "another origin, another aud")
        #expect(try sender.authorization(for: a, now: Self.now) != renewed, "never one issued after now")
        #expect(throws: VAPIDError.invalidSubject) {
            try WebPushSender(vapidKey: P256.PrivateKey(), subject: "ops@example.com", client: client)
        }
    }

    @Test("a payload over the RFC 8291 limit is rejected before anything is sent; a bad stored key drops the device")
    func refusedBeforeSending() async throws {
        let client = OutboundClient()
        defer { client.close() }
        let sender = try WebPushSender(vapidKey: P256.PrivateKey(), subject: "mailto:ops@example.com", client: client)
        let userAgent = P256.PrivateKey()
        let subscription = Device.WebPushSubscription(
            endpoint: "https://127.0.0.1:9/push/x", p256dh: Base64URL.encode(userAgent.publicKey.x963Representation),
            auth: Base64URL.encode(SecureRandom.bytes(16)))
        /// `padding` goes into `data` (ids are not cut, unlike the worded body): past RFC 8291's limit.
        func delivery(_ subscription: Device.WebPushSubscription, padding: String) -> NotificationDeliveries.Delivery {
            let device = Device(
                deviceID: "d", platform: .web, provider: .webpush, address: .webPush(subscription), appVersion: nil, locale: nil,
                createdAt: Timestamp(milliseconds: Self.now), lastSeenAt: Timestamp(milliseconds: Self.now))
            return NotificationDeliveries.Delivery(
                id: 1, outboxID: 1, key: "k", type: .sharedCompletion,
                content: NotificationContent(title: "t", body: "b", data: ["padding": padding]), target: .device(userID: "u", device),
                attempts: 0, notBefore: Self.now, expiresAt: Self.now + 60_000)
        }
        // Port 9 on loopback refuses connections, and the default policy refuses loopback anyway:
        // only an outcome decided before the network can be `.rejected` with this reason.
        let tooLarge = await sender.send(delivery(subscription, padding: String(repeating: "é", count: 2_000)), now: Self.now)
        guard case .rejected(let reason) = tooLarge else {
            Issue.record("\(tooLarge)")
            return
        }
        #expect(reason.contains("plaintextTooLarge"))

        var offCurve = subscription
        offCurve.p256dh = Base64URL.encode([0x04] + [UInt8](repeating: 1, count: 64))
        #expect(
            await sender.send(delivery(offCurve, padding: ""), now: Self.now) == .deviceGone(reason: "invalid subscription: invalid_p256dh")
        )

        let refused = await sender.send(delivery(subscription, padding: ""), now: Self.now)
        guard case .rejected(let why) = refused else {
            Issue.record("\(refused)")
            return
        }
        #expect(why.contains("destination refused"), "loopback is refused by the production policy")
    }

    @Test("vapid.pem: made 0600 on first start, the same key afterwards; a corrupt or open file stops start-up")
    func keyFile() throws {
        let directory = TemporaryDirectory()
        let key = try VAPIDKey.loadOrCreate(dataDirectory: directory.path)
        let path = VAPIDKey.path(dataDirectory: directory.path)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        #expect(try String(contentsOfFile: path, encoding: .utf8).hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let again = try VAPIDKey.loadOrCreate(dataDirectory: directory.path)
        #expect(again.publicKey == key.publicKey)
        let text = VAPIDKey.publicKeyText(key)
        #expect(Base64URL.decode(text) == key.publicKey.x963Representation)
        #expect(text.count == 87)

        chmod(path, 0o644)
        #expect(throws: VAPIDKey.Failure.self) { try VAPIDKey.loadOrCreate(dataDirectory: directory.path) }
        chmod(path, 0o600)
        try "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n".write(
            toFile: path, atomically: false, encoding: .utf8)
        do {
            _ = try VAPIDKey.loadOrCreate(dataDirectory: directory.path)
            Issue.record("a corrupt key loaded")
        } catch {
            #expect(error.description.contains(path))
            #expect(error.description.contains("not a P-256 private key"))
        }
    }

    @Test("GET /v1/push/vapid-public-key: the key without authentication; 404 when Web Push is off")
    func route() async throws {
        let off = try AppHarness()
        let missing = await off.send(.get, "/v1/push/vapid-public-key")
        #expect(missing.status == 404)
        #expect(missing.errorCode == "CA018")

        let key = P256.PrivateKey()
        let on = try AppHarness(vapidPublicKey: VAPIDKey.publicKeyText(key))
        let reply = await on.send(.get, "/v1/push/vapid-public-key")
        #expect(reply.status == 200)
        #expect(reply.json.keys.sorted() == ["public_key"])
        #expect((reply.json["public_key"] as? String).flatMap(Base64URL.decode) == key.publicKey.x963Representation)
    }
}
