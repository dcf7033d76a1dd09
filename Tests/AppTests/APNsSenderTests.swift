import Domain
import Foundation
import Hashing
import Logging
import Outbound
import Push
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// The APNs sender end to end (docs/notifications.md#apns--built): the outbox through
/// `NotificationDispatcher.runOnce`, `APNsSender` and a real `OutboundClient` to `fake_apns.py`
/// (HTTP/2 only, TLS with a test CA, verifying the provider JWT like Apple). Time is the harness's
/// clock, which the fake is told before every round.
@Suite("APNs sender against a fake APNs")
struct APNsSenderTests {
    static let teamID = "TEAM123456"
    static let keyID = "KEY7654321"
    static let topic = "app.chronir.ios"
    static let quiet = Logger.quiet

    /// A group of the owner and one member (or `fixture`'s), a fake APNs for a fresh P-256 key, and a
    /// dispatcher with the APNs sender.
    struct World {
        let f: SharedAlarmFixture
        let fake: ProviderFake
        let sender: APNsSender
        let dispatcher: NotificationDispatcher
        let alarmID: String
        var h: AppHarness { f.h }

        static func make(fixture: SharedAlarmFixture? = nil) async throws -> World {
            let f: SharedAlarmFixture
            if let fixture { f = fixture } else { f = try await SharedAlarmFixture.make(members: 1) }
            let key = P256.PrivateKey()
            let fake = try await ProviderFake.start(
                "fake_apns.py", [Base64URL.encode(key.publicKey.x963Representation), teamID, keyID, topic])
            let sender = APNsSender(
                configuration: .init(keyID: keyID, teamID: teamID, topic: topic, environment: .sandbox, baseURL: fake.origin),
                key: key, client: fake.client, logger: quiet)
            let dispatcher = NotificationDispatcher(
                database: f.h.database, clock: f.h.clock, logger: quiet, senders: [sender], unitRandom: { 0 })
            let alarm = try await f.createAlarm()
            let world = World(f: f, fake: fake, sender: sender, dispatcher: dispatcher, alarmID: try #require(alarm["id"] as? String))
            // What the fixture queued (joins, the alarm's creation) goes nowhere: no device yet.
            #expect(try await world.round().sent == 0)
            return world
        }

        /// One dispatcher round at the harness's now, the fake's clock set to it first.
        @discardableResult
        func round(at now: Int64? = nil) async throws -> NotificationDispatcher.Round {
            let now = now ?? h.clock.nowMilliseconds()
            try await fake.setClock(now)
            return try await dispatcher.runOnce(at: now)
        }

        /// Registers an iPhone of `account` with `token`.
        func registerDevice(_ id: String, token: String, for account: GroupFixture.Account) async throws {
            try await h.expect(
                201, .put, "/v1/me/devices/\(id)", json: #"{"platform":"ios","provider":"apns","token":"\#(token)"}"#,
                token: account.token)
        }

        /// The member answers the first occurrence: a shared_completion to the owner.
        func memberCompletes() async throws {
            h.clock.set(ms(SharedAlarmFixture.firstFire) + 60_000)
            let reply = await f.answer(alarmID, by: f.members[0])
            #expect(reply.status == 201, "\(reply.text)")
        }

        /// The owner renames the alarm: a shared_alarm_updated to the member.
        func ownerEdits(_ title: String) async throws {
            try await h.expect(200, .patch, "\(f.g)/alarms/\(alarmID)", json: #"{"title":"\#(title)"}"#, token: f.owner.token)
        }

        /// The requests the fake recorded.
        func requests() async throws -> [[String: Any]] {
            try await fake.received()["requests"] as? [[String: Any]] ?? []
        }

        func deviceIDs(of account: GroupFixture.Account) throws -> [String] {
            let userID = account.id
            return try h.database.readSync { db in try DeviceStore.devices(userID: userID, on: db) }.map(\.deviceID).sorted()
        }
    }

    static func token(_ byte: String) -> String { String(repeating: byte, count: 32) }

    static func ms(_ iso: String) -> Int64 {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return Int64((formatter.date(from: iso)!.timeIntervalSince1970 * 1000).rounded())
    }

    @Test("a completion by A reaches B's iPhone over HTTP/2 with the right JWT, headers and payload")
    func delivered() async throws {
        let w = try await World.make()
        try await w.registerDevice("iphone", token: Self.token("ab"), for: w.f.owner)
        try await w.memberCompletes()
        let now = w.h.clock.nowMilliseconds()
        let round = try await w.round()
        #expect(round.delivered == 1 && round.sent == 1)

        let requests = try await w.requests()
        #expect(requests.count == 1)
        let request = try #require(requests.first)
        #expect(request["status"] as? Int == 200)
        #expect(request["http_version"] as? String == "2")
        #expect(request["token"] as? String == Self.token("ab"))
        let headers = try #require(request["headers"] as? [String: String])
        let entry = try #require(
            try w.h.database.readSync { db in try NotificationOutbox.entries(on: db) }.first { $0.type == .sharedCompletion })
        #expect(headers["apns-topic"] == Self.topic)
        #expect(headers["apns-push-type"] == "alert")
        #expect(headers["apns-priority"] == "5", "shared_completion is normal priority")
        #expect(headers["apns-expiration"] == String(entry.expiresAt / 1_000))
        #expect(headers["apns-collapse-id"] == ProviderExchange.collapseKey(entry.key))
        #expect((headers["apns-collapse-id"] ?? "").utf8.count <= 64)

        let jwt = try #require(headers["authorization"]?.dropFirst("bearer ".count))
        let parts = try #require(jwtParts(String(jwt)))
        #expect(parts.header["alg"] as? String == "ES256")
        #expect(parts.header["kid"] as? String == Self.keyID)
        #expect(parts.claims["iss"] as? String == Self.teamID)
        #expect(parts.claims["iat"] as? Int64 == now / 1_000)

        let payload = try #require(request["payload"] as? [String: Any])
        let aps = try #require(payload["aps"] as? [String: Any])
        let alert = try #require(aps["alert"] as? [String: String])
        #expect(alert["title"] == entry.content.title)
        #expect(alert["body"] == NotificationText.body(entry.content))
        #expect(aps["sound"] as? String == "default")
        #expect(aps["interruption-level"] as? String == "active")
        #expect(payload["data"] as? [String: String] == entry.content.data)
        #expect(entry.content.data["type"] == "shared_completion")
        #expect(try w.h.database.readSync { db in try NotificationDeliveries.depth(on: db) } == 0)
    }

    @Test("410 Unregistered and 400 BadDeviceToken delete the device; another 400 drops the message only")
    func deviceGone() async throws {
        let w = try await World.make()
        let owner = w.f.owner
        try await w.registerDevice("iphone-1", token: Self.token("a1"), for: owner)
        try await w.registerDevice("iphone-2", token: Self.token("a2"), for: owner)
        try await w.registerDevice("iphone-3", token: Self.token("a3"), for: owner)
        try await w.fake.script(Self.token("a1"), [["status": 410, "reason": "Unregistered"]])
        try await w.fake.script(Self.token("a2"), [["status": 400, "reason": "BadDeviceToken"]])
        try await w.fake.script(Self.token("a3"), [["status": 400, "reason": "BadMessageId"]])
        try await w.memberCompletes()
        let round = try await w.round()
        #expect(round.devicesGone == 2)
        #expect(round.dropped == 1)
        #expect(try w.deviceIDs(of: owner) == ["iphone-3"])
        #expect(try w.h.database.readSync { db in try NotificationDeliveries.depth(on: db) } == 0)
    }

    @Test("429 with Retry-After is tried again at now + Retry-After, not before")
    func retryAfter() async throws {
        let w = try await World.make()
        try await w.registerDevice("iphone", token: Self.token("cd"), for: w.f.owner)
        try await w.fake.script(Self.token("cd"), [["status": 429, "reason": "TooManyRequests", "retry_after": "7"]])
        try await w.memberCompletes()
        let now = w.h.clock.nowMilliseconds()
        #expect(try await w.round(at: now).retried == 1)
        #expect(try await w.round(at: now + 6_999).sent == 0)
        #expect(try await w.round(at: now + 7_000).delivered == 1)
        #expect(try await w.requests().map { $0["status"] as? Int } == [429, 200])
    }

    @Test("500 and 503 are retried; the back-off applies without Retry-After")
    func serverErrors() async throws {
        let w = try await World.make()
        try await w.registerDevice("iphone", token: Self.token("ef"), for: w.f.owner)
        try await w.fake.script(
            Self.token("ef"), [["status": 503, "reason": "ServiceUnavailable"], ["status": 500, "reason": "InternalServerError"]])
        try await w.memberCompletes()
        let now = w.h.clock.nowMilliseconds()
        // unitRandom 0: the first retry waits base/2 = 2.5 s, the second 5 s.
        #expect(try await w.round(at: now).retried == 1)
        #expect(try await w.round(at: now + 2_499).sent == 0)
        #expect(try await w.round(at: now + 2_500).retried == 1)
        #expect(try await w.round(at: now + 7_500).delivered == 1)
    }

    @Test("403 ExpiredProviderToken makes a fresh token, and the retry with it succeeds")
    func expiredProviderToken() async throws {
        let w = try await World.make()
        try await w.registerDevice("iphone", token: Self.token("0f"), for: w.f.owner)
        try await w.fake.script(Self.token("0f"), [["status": 403, "reason": "ExpiredProviderToken"]])
        try await w.memberCompletes()
        let now = w.h.clock.nowMilliseconds()
        #expect(try await w.round(at: now).retried == 1)
        #expect(try await w.round(at: now).delivered == 1, "retried at once: Retry-After 0")
        let requests = try await w.requests()
        #expect(requests.map { $0["status"] as? Int } == [403, 200])
        let tokens = requests.compactMap { ($0["headers"] as? [String: String])?["authorization"] }
        #expect(tokens.count == 2 && tokens[0] != tokens[1], "a new provider token after ExpiredProviderToken")
    }

    @Test("the provider token is reused for 50 minutes, then regenerated (the fake refuses ones past an hour)")
    func tokenLifetime() async throws {
        let w = try await World.make()
        try await w.registerDevice("iphone", token: Self.token("9e"), for: w.f.members[0])
        let start = (w.h.clock.nowMilliseconds() / 1_000 + 1) * 1_000  // a whole second: `iat` is in seconds
        var tokens: [String] = []
        for (index, offset) in [0, 49 * 60_000 + 59_999, 50 * 60_000, 100 * 60_000 - 1].enumerated() {
            w.h.clock.set(start + Int64(offset))
            try await w.ownerEdits("Edit \(index)")
            #expect(try await w.round().delivered == 1, "round \(index)")
            let last = try #require(try await w.requests().last)
            tokens.append(try #require((last["headers"] as? [String: String])?["authorization"]))
        }
        #expect(tokens[0] == tokens[1], "reused at 49:59.999")
        #expect(tokens[2] != tokens[1], "regenerated at 50:00")
        #expect(tokens[3] == tokens[2])
        let iat = tokens.map { jwtParts(String($0.dropFirst("bearer ".count)))?.claims["iat"] as? Int64 }
        #expect(iat == [start / 1_000, start / 1_000, (start + 50 * 60_000) / 1_000, (start + 50 * 60_000) / 1_000])
    }

    @Test("providerToken: cached within its lifetime, new after it or when the clock went back")
    func providerTokenCache() throws {
        let key = P256.PrivateKey()
        let client = OutboundClient()
        defer { client.close() }
        let sender = APNsSender(
            configuration: .init(keyID: Self.keyID, teamID: Self.teamID, topic: Self.topic, environment: .production),
            key: key, client: client, logger: Self.quiet)
        let t = Int64(1_770_000_000_000)
        let first = sender.providerToken(now: t)
        #expect(JWT.hasValidES256Signature(first, publicKey: key.publicKey))
        #expect(sender.providerToken(now: t + APNsSender.tokenLifetimeSeconds * 1_000 - 1) == first)
        let second = sender.providerToken(now: t + APNsSender.tokenLifetimeSeconds * 1_000)
        #expect(second != first)
        #expect(sender.providerToken(now: t) != second, "a clock that went back gets a token it can vouch for")
    }

    @Test("a refused destination drops the message; a connection failure is retried; the device stays")
    func transportFailures() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let alarm = try await f.createAlarm()
        let alarmID = try #require(alarm["id"] as? String)
        // Production policy: loopback is refused after DNS, before any byte is sent.
        let refusing = OutboundClient()
        // Private destinations allowed, but nothing listens on port 1.
        let unreachable = OutboundClient(configuration: .init(policy: DestinationPolicy(allowPrivateDestinations: true)))
        defer {
            refusing.close()
            unreachable.close()
        }
        func dispatcher(_ client: OutboundClient) -> NotificationDispatcher {
            let sender = APNsSender(
                configuration: .init(
                    keyID: Self.keyID, teamID: Self.teamID, topic: Self.topic, environment: .sandbox, baseURL: "https://127.0.0.1:1"),
                key: P256.PrivateKey(), client: client, logger: Self.quiet)
            return NotificationDispatcher(
                database: f.h.database, clock: f.h.clock, logger: Self.quiet, senders: [sender], unitRandom: { 0 })
        }
        _ = try await dispatcher(refusing).runOnce(at: f.h.clock.nowMilliseconds())
        try await f.h.expect(
            201, .put, "/v1/me/devices/iphone", json: #"{"platform":"ios","provider":"apns","token":"\#(Self.token("ab"))"}"#,
            token: f.owner.token)
        f.h.clock.set(Self.ms(SharedAlarmFixture.firstFire) + 60_000)
        #expect(await f.answer(alarmID, by: f.members[0]).status == 201)
        let now = f.h.clock.nowMilliseconds()
        #expect(try await dispatcher(unreachable).runOnce(at: now).retried == 1)
        let refused = try await dispatcher(refusing).runOnce(at: now + 2_500)
        #expect(refused.dropped == 1 && refused.sent == 1)
        let ownerID = f.owner.id
        #expect(try f.h.database.readSync { db in try DeviceStore.devices(userID: ownerID, on: db) }.count == 1)
    }

    @Test("Retry-After: both RFC 9110 forms through the one reader; collapse ids fit 64 bytes")
    func providerExchange() {
        let now: Int64 = 1_445_412_450_000  // Wed, 21 Oct 2015 07:27:30 GMT
        func retryAfter(_ value: String?) -> Int64? {
            ProviderExchange.retryAfterMilliseconds(value.map { [HTTPField(name: "Retry-After", value: $0)] } ?? [], now: now)
        }
        #expect(retryAfter("7") == 7_000)
        #expect(retryAfter("0") == 0)
        #expect(retryAfter("3600") == 3_600_000)
        #expect(retryAfter("Wed, 21 Oct 2015 07:28:00 GMT") == 30_000, "an HTTP-date, from now")
        #expect(retryAfter("-1") == nil)
        #expect(retryAfter("1.5") == nil)
        #expect(retryAfter(nil) == nil)
        let fits = String(repeating: "k", count: 64)
        #expect(ProviderExchange.collapseKey(fits) == fits)
        let over = fits + "k"
        #expect(ProviderExchange.collapseKey(over) == Hex.encode(SHA256.hash(Array(over.utf8))))
        #expect(ProviderExchange.collapseKey(over).utf8.count == 64)
    }
}
