import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// Push devices (`/v1/me/devices…`) and the member's own notification switch
/// (`PATCH /v1/groups/{id}/membership`): docs/notifications.md#devices.
@Suite("Devices and notification preferences")
struct DeviceTests {
    /// The user agent key pair of RFC 8291 Appendix A: a real uncompressed P-256 point and auth secret.
    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
    static let apnsToken = String(repeating: "ab", count: 32)

    static func apns(_ token: String = apnsToken) -> String {
        #"{"platform":"ios","provider":"apns","token":"\#(token)","app_version":"1.2.0","locale":"de-DE"}"#
    }

    static func webPush(endpoint: String = "https://push.example.net/send/abc", p256dh: String = p256dh, auth: String = auth)
        -> String
    {
        #"{"platform":"web","provider":"webpush","subscription":{"endpoint":"\#(endpoint)","expirationTime":null,"#
            + #""keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}}"#
    }

    func deviceCount(_ h: AppHarness, user: String? = nil) throws -> Int64 {
        let value = try h.database.readSync { db in
            if let user { return try db.scalar("SELECT COUNT(*) FROM devices WHERE user_id = ?1", [.text(user)]) }
            return try db.scalar("SELECT COUNT(*) FROM devices")
        }
        guard case .integer(let count) = value else { return -1 }
        return count
    }

    @Test("PUT creates (201) then replaces (200, created_at kept, last_seen_at moves); GET lists; DELETE 204 then 404")
    func lifecycle() async throws {
        let h = try AppHarness()
        let (token, _) = try await h.register("ana@example.com")
        let created = try await h.expect(201, .put, "/v1/me/devices/iphone-1", json: Self.apns(), token: token)
        #expect(created.json["device_id"] as? String == "iphone-1")
        #expect(created.json["token"] as? String == Self.apnsToken)
        #expect(created.json["locale"] as? String == "de-DE")
        h.clock.advance(by: 60_000)
        let again = try await h.expect(
            200, .put, "/v1/me/devices/iphone-1", json: Self.apns(Self.apnsToken.uppercased()), token: token)
        #expect(again.json["created_at"] as? String == created.json["created_at"] as? String)
        #expect(again.json["last_seen_at"] as? String != created.json["last_seen_at"] as? String)
        #expect(again.json["token"] as? String == Self.apnsToken, "APNs tokens are stored lowercase")

        try await h.expect(201, .put, "/v1/me/devices/browser", json: Self.webPush(), token: token)
        let list = try await h.expect(200, .get, "/v1/me/devices", token: token)
        let devices = try #require(list.json["devices"] as? [[String: Any]])
        #expect(devices.map { $0["device_id"] as? String } == ["browser", "iphone-1"], "most recently seen first")
        let subscription = try #require(devices[0]["subscription"] as? [String: Any])
        #expect(subscription["endpoint"] as? String == "https://push.example.net/send/abc")
        #expect(subscription["keys"] == nil, "the subscription keys are write-only")
        #expect(!list.text.contains(Self.auth))

        try await h.expect(204, .delete, "/v1/me/devices/iphone-1", token: token)
        let gone = try await h.expect(404, .delete, "/v1/me/devices/iphone-1", token: token)
        #expect(gone.errorName == "NOT_FOUND")
        try await h.expect(401, .get, "/v1/me/devices")
    }

    @Test("bad registrations get 422 naming the field and store nothing")
    func validation() async throws {
        let h = try AppHarness()
        let (token, _) = try await h.register("ana@example.com")
        let cases: [(String, String, String)] = [
            ("d", Self.webPush(endpoint: "http://push.example.net/x"), "subscription.endpoint"),
            ("d", Self.webPush(endpoint: "https://user@push.example.net/x"), "subscription.endpoint"),
            ("d", Self.webPush(endpoint: "https://push.example.net/" + String(repeating: "a", count: 2_048)), "subscription.endpoint"),
            ("d", Self.webPush(auth: "AAAA"), "subscription.keys.auth"),
            ("d", Self.webPush(p256dh: Self.auth), "subscription.keys.p256dh"),
            // 65 bytes starting 0x04, but not a point of the curve: the sender could never encrypt to it.
            (
                "d", Self.webPush(p256dh: "BAEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE"),
                "subscription.keys.p256dh"
            ),
            ("d", Self.webPush(endpoint: "https://push_service.example.net/x"), "subscription.endpoint"),
            ("d", Self.apns("xyz"), "token"),
            ("d", Self.apns(String(repeating: "a", count: 62)), "token"),
            ("d", #"{"platform":"web","provider":"apns","token":"\#(Self.apnsToken)"}"#, "provider"),
            ("d", #"{"platform":"ios","provider":"apns"}"#, "token"),
            ("d", #"{"platform":"android","provider":"fcm","token":"a b"}"#, "token"),
            ("d", #"{"platform":"web","provider":"webpush","token":"x"}"#, "token"),
            (
                "d",
                #"{"platform":"ios","provider":"apns","token":"\#(Self.apnsToken)","#
                    + #""app_version":"\#(String(repeating: "1", count: 33))"}"#, "app_version"
            ),
            (String(repeating: "x", count: 65), Self.apns(), "device_id"),
            ("a%20b", Self.apns(), "device_id"),
        ]
        for (id, body, field) in cases {
            let reply = await h.send(.put, "/v1/me/devices/\(id)", json: body, token: token)
            #expect(reply.status == 422, "\(field): \(reply.text)")
            #expect(reply.errorField == field, "\(body): \(reply.text)")
        }
        let unknown = await h.send(.put, "/v1/me/devices/d", json: #"{"platform":"ios","provider":"apns","x":1}"#, token: token)
        #expect(unknown.status == 422 || unknown.status == 400, "\(unknown.text)")
        #expect(try deviceCount(h) == 0)
    }

    @Test("one address reaches one device: registering it from another account moves it there")
    func addressMoves() async throws {
        let h = try AppHarness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let (ben, benID) = try await h.register("ben@example.com", name: "Ben")
        try await h.expect(201, .put, "/v1/me/devices/phone", json: Self.apns(), token: ana)
        try await h.expect(201, .put, "/v1/me/devices/phone", json: Self.apns(), token: ben)
        #expect(try deviceCount(h, user: anaID) == 0)
        #expect(try deviceCount(h, user: benID) == 1)
        // The same account under a new id: the old id goes.
        try await h.expect(201, .put, "/v1/me/devices/phone-2", json: Self.apns(), token: ben)
        let list = try await h.expect(200, .get, "/v1/me/devices", token: ben)
        #expect((list.json["devices"] as? [[String: Any]])?.map { $0["device_id"] as? String } == ["phone-2"])
    }

    @Test("past 20 devices the least recently seen is dropped")
    func limit() async throws {
        let h = try AppHarness()
        let (token, id) = try await h.register("ana@example.com")
        for i in 0...DeviceRules.maxDevicesPerUser {
            h.clock.advance(by: 1_000)
            let token64 = String(format: "%064x", i + 1)
            try await h.expect(201, .put, "/v1/me/devices/d\(i)", json: Self.apns(token64), token: token)
        }
        #expect(try deviceCount(h, user: id) == Int64(DeviceRules.maxDevicesPerUser))
        let list = try await h.expect(200, .get, "/v1/me/devices", token: token)
        let ids = (list.json["devices"] as? [[String: Any]])?.compactMap { $0["device_id"] as? String } ?? []
        #expect(!ids.contains("d0") && ids.contains("d1") && ids.contains("d\(DeviceRules.maxDevicesPerUser)"))
    }

    @Test("logout drops the devices its session registered; other sessions' devices stay")
    func logout() async throws {
        let h = try AppHarness()
        let (first, id) = try await h.register("ana@example.com")
        let login = await h.login("ana@example.com")
        let second = try #require(login.json["token"] as? String)
        try await h.expect(201, .put, "/v1/me/devices/phone", json: Self.apns(), token: first)
        try await h.expect(201, .put, "/v1/me/devices/browser", json: Self.webPush(), token: second)
        try await h.expect(204, .post, "/v1/auth/logout", token: first)
        let list = try await h.expect(200, .get, "/v1/me/devices", token: second)
        #expect((list.json["devices"] as? [[String: Any]])?.map { $0["device_id"] as? String } == ["browser"])
        #expect(try deviceCount(h, user: id) == 1)
    }

    @Test("account deletion drops every device; the retention sweep purges devices unseen for 60 days")
    func deletionAndRetention() async throws {
        let h = try AppHarness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let (ben, benID) = try await h.register("ben@example.com", name: "Ben")
        try await h.expect(201, .put, "/v1/me/devices/phone", json: Self.apns(), token: ana)
        try await h.expect(201, .put, "/v1/me/devices/browser", json: Self.webPush(), token: ben)
        try await h.expect(204, .delete, "/v1/me", token: ana)
        #expect(try deviceCount(h, user: anaID) == 0)

        h.clock.advance(by: DeviceRules.unseenLifetimeMilliseconds)
        let now = h.clock.nowMilliseconds()
        var report = try await h.database.write { db in try Retention.sweep(at: now, on: db) }
        #expect(report.unseenDevices == 0, "exactly 60 days is not yet past")
        h.clock.advance(by: 1)
        let later = h.clock.nowMilliseconds()
        report = try await h.database.write { db in try Retention.sweep(at: later, on: db) }
        #expect(report.unseenDevices == 1)
        #expect(try deviceCount(h, user: benID) == 0)
    }

    @Test("PATCH /v1/groups/{id}/membership: the member's own switch, logged as member_settings_changed; others get 404")
    func membership() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        let path = "/v1/groups/\(f.groupID)/membership"
        let off = try await h.expect(200, .patch, path, json: #"{"notification_enabled":false}"#, token: f.member.token)
        #expect(off.json["notification_enabled"] as? Bool == false)
        #expect(off.json["user_id"] as? String == f.member.id)
        let batch = try h.lastBatch()
        #expect(batch.map { $0.string("event") } == ["member_settings_changed", "member_settings_changed"])
        #expect(Set(batch.compactMap { $0.string("topic") }) == ["group:\(f.groupID)", "user:\(f.member.id)"])

        let detail = try await h.expect(200, .get, "/v1/groups/\(f.groupID)", token: f.owner.token)
        let members = try #require(detail.json["members"] as? [[String: Any]])
        let mine = members.first { $0["user_id"] as? String == f.member.id }
        #expect(mine?["notification_enabled"] as? Bool == false)
        #expect(members.filter { $0["notification_enabled"] as? Bool == true }.count == members.count - 1)

        // Unchanged: nothing logged.
        let seq = try h.lastBatch().first?.int("seq")
        try await h.expect(200, .patch, path, json: #"{"notification_enabled":false}"#, token: f.member.token)
        #expect(try h.lastBatch().first?.int("seq") == seq)

        for outsider in [f.outsider, f.removed, f.left] {
            let reply = await h.send(.patch, path, json: #"{"notification_enabled":false}"#, token: outsider.token)
            #expect(reply.status == 404, "\(reply.text)")
        }
        let unknown = await h.send(.patch, path, json: #"{"notification_enabled":false,"role":"owner"}"#, token: f.member.token)
        #expect(unknown.status == 422 || unknown.status == 400, "\(unknown.text)")
        let wrongType = await h.send(.patch, path, json: #"{"notification_enabled":"no"}"#, token: f.member.token)
        #expect(wrongType.status == 422 || wrongType.status == 400, "\(wrongType.text)")
    }

    @Test("a member who leaves and rejoins starts with notifications on")
    func rejoin() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        try await h.expect(
            200, .patch, "/v1/groups/\(f.groupID)/membership", json: #"{"notification_enabled":false}"#, token: f.member.token)
        h.clock.advance(by: 1)
        try await h.expect(204, .delete, "/v1/groups/\(f.groupID)/members/\(f.member.id)", token: f.member.token)
        h.clock.advance(by: 1)
        let code = try await h.inviteCode(f.groupID, token: f.owner.token)
        let joined = await h.join(code, token: f.member.token)
        #expect(joined.status == 200, "\(joined.text)")
        let detail = try await h.expect(200, .get, "/v1/groups/\(f.groupID)", token: f.member.token)
        let members = try #require(detail.json["members"] as? [[String: Any]])
        #expect(members.first { $0["user_id"] as? String == f.member.id }?["notification_enabled"] as? Bool == true)
    }
}
