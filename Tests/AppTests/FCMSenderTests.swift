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

/// The FCM HTTP v1 sender end to end (docs/notifications.md#fcm--built): the outbox through
/// `NotificationDispatcher.runOnce`, `FCMSender` and a real `OutboundClient` to `fake_fcm.py` (an
/// OAuth2 token endpoint verifying the RS256 assertion with the service account's public key, and
/// messages:send accepting only tokens it issued). Time is the harness's clock, told to the fake.
@Suite("FCM sender against a fake FCM")
struct FCMSenderTests {
    static let clientEmail = "chronir-push@chronir-test.iam.gserviceaccount.com"
    static let projectID = "chronir-test"
    static let quiet = APNsSenderTests.quiet

    /// A group of the owner and one member, a fake FCM for a fresh RSA service-account key, and a
    /// dispatcher with the FCM sender (plus `extra` senders).
    struct World {
        let f: SharedAlarmFixture
        let fake: ProviderFake
        let sender: FCMSender
        let dispatcher: NotificationDispatcher
        let alarmID: String
        let keys: TemporaryDirectory
        var h: AppHarness { f.h }

        static func make(extra: (SharedAlarmFixture) async throws -> [any NotificationSender] = { _ in [] }) async throws -> World {
            let f = try await SharedAlarmFixture.make(members: 1)
            let key = try await blocking { try RSA.PrivateKey() }
            let keys = TemporaryDirectory(prefix: "fcm-keys")
            try key.publicKey.pemRepresentation.write(toFile: keys.file(named: "public.pem"), atomically: true, encoding: .utf8)
            let fake = try await ProviderFake.start("fake_fcm.py", [keys.file(named: "public.pem"), clientEmail, projectID])
            // A service-account JSON file as Google issues it, read back through the file init.
            let account: [String: Any] = [
                "type": "service_account", "project_id": projectID, "private_key_id": "0123abcd",
                "private_key": key.pemRepresentation, "client_email": clientEmail, "token_uri": fake.origin + "/token",
            ]
            let file = keys.file(named: "service-account.json")
            try JSONSerialization.data(withJSONObject: account).write(to: URL(fileURLWithPath: file))
            let sender = try FCMSender(serviceAccountFile: file, baseURL: fake.origin, client: fake.client, logger: quiet)
            let dispatcher = NotificationDispatcher(
                database: f.h.database, clock: f.h.clock, logger: quiet, senders: [sender] + (try await extra(f)), unitRandom: { 0 })
            let alarm = try await f.createAlarm()
            let world = World(
                f: f, fake: fake, sender: sender, dispatcher: dispatcher, alarmID: try #require(alarm["id"] as? String), keys: keys)
            #expect(try await world.round().sent == 0, "nothing queued so far has a device")
            return world
        }

        @discardableResult
        func round(at now: Int64? = nil) async throws -> NotificationDispatcher.Round {
            let now = now ?? h.clock.nowMilliseconds()
            try await fake.setClock(now)
            return try await dispatcher.runOnce(at: now)
        }

        func registerAndroid(_ id: String, token: String, for account: GroupFixture.Account) async throws {
            try await h.expect(
                201, .put, "/v1/me/devices/\(id)", json: #"{"platform":"android","provider":"fcm","token":"\#(token)"}"#,
                token: account.token)
        }

        func memberCompletes() async throws {
            h.clock.set(APNsSenderTests.ms(SharedAlarmFixture.firstFire) + 60_000)
            let reply = await f.answer(alarmID, by: f.members[0])
            #expect(reply.status == 201, "\(reply.text)")
        }

        func ownerEdits(_ title: String) async throws {
            try await h.expect(200, .patch, "\(f.g)/alarms/\(alarmID)", json: #"{"title":"\#(title)"}"#, token: f.owner.token)
        }

        func messages() async throws -> [[String: Any]] { try await fake.received()["messages"] as? [[String: Any]] ?? [] }
        func grants() async throws -> [[String: Any]] { try await fake.received()["grants"] as? [[String: Any]] ?? [] }

        func deviceIDs(of account: GroupFixture.Account) throws -> [String] {
            let userID = account.id
            return try h.database.readSync { db in try DeviceStore.devices(userID: userID, on: db) }.map(\.deviceID).sorted()
        }
    }

    static let pixel = "dXk3Y2FmZTpBUEE5MWJHX3Rlc3Rfb25lX2FuZHJvaWQ"

    @Test("a completion by A reaches B's Android phone through FCM and B's iPhone through APNs, in one round")
    func delivered() async throws {
        let apnsKey = P256.PrivateKey()
        let apnsFake = try await ProviderFake.start(
            "fake_apns.py",
            [Base64URL.encode(apnsKey.publicKey.x963Representation), APNsSenderTests.teamID, APNsSenderTests.keyID, APNsSenderTests.topic])
        let w = try await World.make { _ in
            [
                APNsSender(
                    configuration: .init(
                        keyID: APNsSenderTests.keyID, teamID: APNsSenderTests.teamID, topic: APNsSenderTests.topic,
                        environment: .production, baseURL: apnsFake.origin),
                    key: apnsKey, client: apnsFake.client, logger: Self.quiet)
            ]
        }
        try await w.registerAndroid("pixel", token: Self.pixel, for: w.f.owner)
        try await w.h.expect(
            201, .put, "/v1/me/devices/iphone",
            json: #"{"platform":"ios","provider":"apns","token":"\#(APNsSenderTests.token("ab"))"}"#, token: w.f.owner.token)
        try await w.memberCompletes()
        let now = w.h.clock.nowMilliseconds()
        try await apnsFake.setClock(now)
        let round = try await w.round()
        #expect(round.delivered == 2 && round.sent == 2)

        let entry = try #require(
            try w.h.database.readSync { db in try NotificationOutbox.entries(on: db) }.first { $0.type == .sharedCompletion })
        let messages = try await w.messages()
        #expect(messages.count == 1)
        let record = try #require(messages.first)
        #expect(record["status"] as? Int == 200)
        let message = try #require(record["message"] as? [String: Any])
        #expect(message["token"] as? String == Self.pixel)
        #expect(
            message["notification"] as? [String: String] == ["title": entry.content.title, "body": NotificationText.body(entry.content)])
        #expect(message["data"] as? [String: String] == entry.content.data)
        let android = try #require(message["android"] as? [String: String])
        #expect(android["priority"] == "NORMAL")
        #expect(android["ttl"] == "\((entry.expiresAt - now) / 1_000)s")
        #expect(android["collapse_key"] == ProviderExchange.collapseKey(entry.key))
        #expect((message["apns"] as? [String: Any])?["headers"] as? [String: String] == ["apns-priority": "5"])

        let grants = try await w.grants()
        #expect(grants.count == 1)
        let claims = try #require(grants.first)
        #expect(claims["iss"] as? String == Self.clientEmail)
        #expect(claims["scope"] as? String == FCMSender.scope)
        #expect(claims["aud"] as? String == w.fake.origin + "/token")
        #expect(claims["iat"] as? Int64 == now / 1_000)
        #expect(claims["exp"] as? Int64 == now / 1_000 + 3_600)

        let apnsRequests = try await apnsFake.received()["requests"] as? [[String: Any]] ?? []
        #expect(apnsRequests.map { $0["status"] as? Int } == [200])
        #expect((apnsRequests.first?["payload"] as? [String: Any])?["data"] as? [String: String] == entry.content.data)
    }

    @Test("404 UNREGISTERED deletes the device; 400 INVALID_ARGUMENT drops the message and keeps it")
    func deviceGone() async throws {
        let w = try await World.make()
        let owner = w.f.owner
        try await w.registerAndroid("pixel-1", token: Self.pixel + "1", for: owner)
        try await w.registerAndroid("pixel-2", token: Self.pixel + "2", for: owner)
        try await w.registerAndroid("pixel-3", token: Self.pixel + "3", for: owner)
        try await w.fake.script(Self.pixel + "1", [["status": 404, "error_code": "UNREGISTERED"]])
        try await w.fake.script(Self.pixel + "2", [["status": 400, "error_code": "INVALID_ARGUMENT"]])
        try await w.fake.script(Self.pixel + "3", [["status": 400, "error_code": "UNREGISTERED"]])
        try await w.memberCompletes()
        let round = try await w.round()
        #expect(round.devicesGone == 2)
        #expect(round.dropped == 1)
        #expect(try w.deviceIDs(of: owner) == ["pixel-2"])
    }

    @Test("503 and 429 with Retry-After are tried again at now + Retry-After")
    func retryAfter() async throws {
        let w = try await World.make()
        try await w.registerAndroid("pixel", token: Self.pixel, for: w.f.owner)
        try await w.fake.script(Self.pixel, [["status": 503, "retry_after": "5"], ["status": 429, "retry_after": "11"]])
        try await w.memberCompletes()
        let now = w.h.clock.nowMilliseconds()
        #expect(try await w.round(at: now).retried == 1)
        #expect(try await w.round(at: now + 4_999).sent == 0)
        #expect(try await w.round(at: now + 5_000).retried == 1)
        #expect(try await w.round(at: now + 15_999).sent == 0)
        #expect(try await w.round(at: now + 16_000).delivered == 1)
        #expect(try await w.messages().map { $0["status"] as? Int } == [503, 429, 200])
        #expect(try await w.grants().count == 1, "one access token for all three")
    }

    @Test("401 (token revoked) gets a fresh access token, and the retry with it succeeds")
    func unauthenticated() async throws {
        let w = try await World.make()
        try await w.registerAndroid("pixel", token: Self.pixel, for: w.f.owner)
        try await w.registerAndroid("pixel-m", token: Self.pixel + "m", for: w.f.members[0])
        w.h.clock.set(APNsSenderTests.ms(SharedAlarmFixture.firstFire))  // the cached token is still fresh at the completion
        try await w.ownerEdits("First")
        #expect(try await w.round().delivered == 1)
        try await w.fake.post("/control/revoke", [:])
        try await w.memberCompletes()
        let now = w.h.clock.nowMilliseconds()
        #expect(try await w.round(at: now).retried == 1)
        #expect(try await w.round(at: now).delivered == 1, "retried at once with a new token")
        let messages = try await w.messages()
        #expect(messages.map { $0["status"] as? Int } == [200, 401, 200])
        let bearers = messages.compactMap { $0["authorization"] as? String }
        #expect(bearers[0] == bearers[1] && bearers[1] != bearers[2])
        #expect(try await w.grants().count == 2)
    }

    @Test("the access token is cached until 5 minutes before expires_in, then a new grant is made")
    func accessTokenLifetime() async throws {
        let w = try await World.make()
        try await w.registerAndroid("pixel", token: Self.pixel, for: w.f.members[0])
        let start = w.h.clock.nowMilliseconds()
        // The fake's tokens live 3,599 s: replaced from 3,299 s on.
        let refreshAt = start + 3_599_000 - FCMSender.refreshMarginMilliseconds
        for (index, at) in [start, refreshAt - 1, refreshAt, refreshAt + 1_000].enumerated() {
            w.h.clock.set(at)
            try await w.ownerEdits("Edit \(index)")
            #expect(try await w.round().delivered == 1, "round \(index)")
        }
        let bearers = try await w.messages().compactMap { $0["authorization"] as? String }
        #expect(bearers.count == 4)
        #expect(bearers[0] == bearers[1] && bearers[1] != bearers[2] && bearers[2] == bearers[3])
        let grants = try await w.grants()
        #expect(grants.map { $0["iat"] as? Int64 } == [start / 1_000, refreshAt / 1_000])
    }

    @Test("a service account that is not usable is refused at start-up with a typed error")
    func configurationErrors() throws {
        let client = OutboundClient()
        defer { client.close() }
        let good = try RSA.PrivateKey().pemRepresentation
        func make(
            key: String = good, tokenURI: String = "https://oauth2.googleapis.com/token", projectID: String = Self.projectID
        ) throws(FCMSender.ConfigurationError) {
            _ = try FCMSender(
                account: .init(clientEmail: Self.clientEmail, privateKey: key, tokenURI: tokenURI, projectID: projectID),
                client: client, logger: Self.quiet)
        }
        #expect(throws: Never.self) { try make() }
        #expect(throws: FCMSender.ConfigurationError.invalidPrivateKey) { try make(key: P256.PrivateKey().pemRepresentation) }
        #expect(throws: FCMSender.ConfigurationError.invalidTokenURI) { try make(tokenURI: "ftp://example.com/token") }
        #expect(throws: FCMSender.ConfigurationError.self) { try make(projectID: "../other/messages:send?") }
        #expect(throws: FCMSender.ConfigurationError.self) { try make(projectID: "") }
        let directory = TemporaryDirectory(prefix: "fcm-config")
        let file = directory.file(named: "sa.json")
        try #"{"client_email":"x@y"}"#.write(toFile: file, atomically: true, encoding: .utf8)
        #expect(throws: FCMSender.ConfigurationError.self) {
            try FCMSender(serviceAccountFile: file, client: client, logger: Self.quiet)
        }
    }
}
