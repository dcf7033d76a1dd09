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

/// An iPhone app's first week against the server, as docs/apps.md tells an app developer to wire it:
/// configuration and minimum version, an anonymous start, personal alarms, a push device, joining a
/// household from a `/join/` link, the upgrade to an email account with nothing lost, an old build
/// refused with 426, and the household deleting a shared alarm reaching the phone as a silent push
/// (through the dispatcher and the APNs sender to the fake APNs). Every day is a step of the
/// injected clock; runs on both engines (`CHRONIR_TEST_BACKEND`).
@Suite("An app's first week")
struct AppFirstWeekTests {
    static let day: Int64 = 86_400_000
    static let client = ("X-Chronir-Client", "ios/1.4.2 (iPhone15,2)")

    @Test("anonymous start → personal alarms → join by /join/ link → upgrade with nothing lost → old build 426 → silent push")
    func firstWeek() async throws {
        let dir = TemporaryDirectory()
        let file = dir.path + "/apps.json"
        try Data(#"{"min_app_version":{"ios":"1.4.0"}}"#.utf8).write(to: URL(fileURLWithPath: file))
        let h = try AppHarness(defaultTier: .premium, apps: try AppsConfigurationSource(file: file))
        let key = P256.PrivateKey()
        let fake = try await ProviderFake.start(
            "fake_apns.py",
            [Base64URL.encode(key.publicKey.x963Representation), APNsSenderTests.teamID, APNsSenderTests.keyID, APNsSenderTests.topic])
        let sender = APNsSender(
            configuration: .init(
                keyID: APNsSenderTests.keyID, teamID: APNsSenderTests.teamID, topic: APNsSenderTests.topic, environment: .sandbox,
                baseURL: fake.origin),
            key: key, client: fake.client, logger: APNsSenderTests.quiet)
        let dispatcher = NotificationDispatcher(
            database: h.database, clock: h.clock, logger: APNsSenderTests.quiet, senders: [sender], unitRandom: { 0 })
        func app(_ method: HTTPMethod, _ path: String, json: String? = nil, token: String? = nil) async -> Reply {
            await h.send(method, path, json: json, token: token, headers: [Self.client])
        }

        // Day 1, first launch: the configuration (this build is new enough), an anonymous account,
        // the push device, two personal alarms.
        let config = await app(.get, "/v1/config")
        #expect(config.status == 200)
        #expect((config.json["min_app_version"] as? [String: Any])?["ios"] as? String == "1.4.0")
        let started = await app(.post, "/v1/auth/anonymous", json: "{}")
        #expect(started.status == 201, "\(started.text)")
        let token = try #require(started.json["token"] as? String)
        let userID = try #require(started.object("user")?["id"] as? String)
        let phoneToken = String(repeating: "5e", count: 32)
        let device = #"{"platform":"ios","provider":"apns","token":"\#(phoneToken)"}"#
        #expect(await app(.put, "/v1/me/devices/iphone-1", json: device, token: token).status == 201)
        let rent = "0b5c3f6e-8d2a-4c1b-9e7f-1a2b3c4d5e6f"
        let plants = "1c6d4a7f-9e3b-4d2c-8f1a-2b3c4d5e6f70"
        #expect(await app(.put, "/v1/me/alarms/\(rent)", json: PersonalAlarmTests.body("Rent"), token: token).status == 201)
        #expect(await app(.put, "/v1/me/alarms/\(plants)", json: PersonalAlarmTests.body("Water plants"), token: token).status == 201)

        // Day 2: the household (an existing account) shares its code's link; the app opens /join/{CODE},
        // previews it and joins; its shared alarm is now the phone's too.
        h.clock.advance(by: Self.day)
        let owner = try await h.register("owner@example.com", name: "Owner")
        let groupID = try await h.createGroup(token: owner.token, name: "Household")
        let link = try await h.expect(201, .post, "/v1/groups/\(groupID)/invite-code", token: owner.token).json["join_url"] as? String
        let code = try #require(link?.components(separatedBy: "/join/").last)
        let shared = try await h.expect(
            201, .post, "/v1/groups/\(groupID)/alarms",
            json: #"{"title":"HVAC filter",\#(SharedAlarmFixture.dailyTen),"completion_rule":"any","assigned_to_uids":[]}"#,
            token: owner.token
        ).json
        let sharedID = try #require(shared["id"] as? String)
        let preview = await app(.get, "/v1/join/\(code)", token: token)
        #expect(preview.status == 200 && preview.text.contains("Household"), "\(preview.text)")
        let join = await app(.post, "/v1/join", json: #"{"code":"\#(code)"}"#, token: token)
        #expect(join.status == 200, "\(join.text)")
        #expect(await app(.get, "/v1/me/shared-alarms", token: token).text.contains(sharedID))

        // Day 3: the user signs up — the same account, nothing lost.
        h.clock.advance(by: Self.day)
        let upgraded = await app(
            .post, "/v1/me/upgrade", json: #"{"email":"ana@example.com","password":"correct horse","display_name":"Ana"}"#,
            token: token)
        #expect(upgraded.status == 200, "\(upgraded.text)")
        #expect(upgraded.json["id"] as? String == userID && upgraded.json["anonymous"] as? Bool == false)
        let alarms = await app(.get, "/v1/me/alarms", token: token).text
        #expect(alarms.contains("Rent") && alarms.contains("Water plants"))
        #expect(await app(.get, "/v1/groups/\(groupID)", token: token).status == 200)
        #expect(await app(.get, "/v1/me/shared-alarms", token: token).text.contains(sharedID))
        #expect(try h.database.readSync { db in try DeviceStore.devices(userID: userID, on: db) }.map(\.deviceID) == ["iphone-1"])
        let login = await h.login("ana@example.com")
        #expect(login.status == 200 && (login.json["user"] as? [String: Any])?["id"] as? String == userID)

        // Day 4: an old build on another phone is told to update; the current build is served.
        h.clock.advance(by: Self.day)
        let old = await h.send(.get, "/v1/me", token: token, headers: [("X-Chronir-Client", "ios/1.3.9")])
        #expect(old.status == 426 && old.errorCode == "CA068" && old.errorName == "APP_UPDATE_REQUIRED")
        #expect(await h.send(.get, "/v1/config", headers: [("X-Chronir-Client", "ios/1.3.9")]).status == 200)
        #expect(await app(.get, "/v1/me", token: token).status == 200)

        // Day 5: what was queued so far went out; then the household deletes the shared alarm and the
        // phone — no socket open — gets the silent push naming it.
        h.clock.advance(by: Self.day)
        let now = h.clock.nowMilliseconds()
        try await fake.setClock(now)
        _ = try await dispatcher.runOnce(at: now)
        let before = (try await fake.received()["requests"] as? [[String: Any]] ?? []).count
        try await h.expect(204, .delete, "/v1/groups/\(groupID)/alarms/\(sharedID)", token: owner.token)
        #expect(try await dispatcher.runOnce(at: now).delivered == 1)
        let requests = try await fake.received()["requests"] as? [[String: Any]] ?? []
        #expect(requests.count == before + 1)
        let push = try #require(requests.last)
        #expect(push["status"] as? Int == 200 && push["token"] as? String == phoneToken)
        #expect((push["headers"] as? [String: String])?["apns-push-type"] == "background")
        let payload = try #require(push["payload"] as? [String: Any])
        #expect(payload["aps"] as? [String: Int] == ["content-available": 1])
        #expect(
            payload["data"] as? [String: String] == [
                "type": "shared_alarm_deleted", "group_id": groupID, "alarm_id": sharedID, "drop": "alarm",
                "deep_link": "/group/\(groupID)",
            ])
        #expect(try await dispatcher.runOnce(at: now + 60_000).sent == 0, "exactly once")
    }
}
