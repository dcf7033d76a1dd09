import Domain
import Foundation
import Logging
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// `GET /v1/config`, the app configuration file and minimum app versions (docs/apps.md): the limits are
/// the ones the server enforces, the document revalidates with its ETag, a file change applies at
/// `reload()` (SIGHUP) and a bad file keeps the previous one, an outdated app gets 426 CA068 everywhere
/// but `/v1/config` and sign-out, and its socket closes 4026.
@Suite("App configuration — GET /v1/config and minimum app versions")
struct AppConfigurationTests {
    static let fingerprint = (0..<32).map { String(format: "%02X", $0 * 7 % 256) }.joined(separator: ":")

    static func source(_ json: String) throws -> AppsConfigurationSource {
        AppsConfigurationSource(try AppsConfiguration.parse(Array(json.utf8)))
    }

    @Test("the document states the enforced limits, push, sign-in providers, and no minimum without a file")
    func document() async throws {
        let h = try AppHarness(vapidPublicKey: "BPubKey", configure: { $0.attachments.maxPerAlarm = 3 })
        let reply = await h.send(.get, "/v1/config")
        #expect(reply.status == 200)
        #expect(reply.header("Cache-Control") == "public, max-age=300")
        let limits = try #require(reply.json["limits"] as? [String: Any])
        #expect(limits["alarms_per_group"] as? Int == SharedAlarmRules.maxAlarmsPerGroup)
        #expect(limits["members_per_group"] as? Int == h.app.services.config.maxMembersPerGroup)
        #expect(limits["attachments_per_alarm"] as? Int == 3)
        #expect(limits["attachment_max_bytes"] as? Int == h.app.services.config.attachments.maxFileBytes)
        #expect(limits["group_name_characters"] as? Int == GroupRules.maxNameCharacters)
        #expect(limits["idempotency_key_characters"] as? Int == IdempotencyKey.maxLength)
        #expect(limits["idempotency_key_hours"] as? Int == 24)
        let lead = try #require(limits["answer_lead_minutes"] as? [String: Any])
        #expect(lead["max"] as? Int == SharedAlarmRules.answerLeadRange.upperBound)
        #expect(lead["default"] as? Int == SharedAlarmRules.defaultAnswerLeadMinutes)
        let push = try #require(reply.json["push"] as? [String: Any])
        #expect(push["vapid_public_key"] as? String == "BPubKey")
        #expect(push["web_push"] as? Bool == true && push["apns"] as? Bool == false)
        #expect(reply.json["sign_in_providers"] as? [String] == ["password"])
        let versions = try #require(reply.json["min_app_version"] as? [String: Any])
        #expect(Set(versions.keys) == ["ios", "android", "web"])
        #expect(versions.values.allSatisfy { $0 is NSNull })
        #expect((reply.json["features"] as? [String: Any])?.isEmpty == true)
        // A changing limit is a changing document: the limits are read, not copied.
        let other = try AppHarness(configure: { $0.maxMembersPerGroup = 7 })
        let seven = await other.send(.get, "/v1/config")
        #expect((seven.json["limits"] as? [String: Any])?["members_per_group"] as? Int == 7)
        // Without Web Push the key is there, null (the apps read it, not its absence).
        #expect((seven.json["push"] as? [String: Any])?["vapid_public_key"] is NSNull, "\(seven.text)")
        #expect(seven.header("ETag") != reply.header("ETag"))
    }

    @Test("If-None-Match with the ETag → 304 without a body; after a reload that changed it → 200 with a new ETag")
    func etag() async throws {
        let dir = TemporaryDirectory()
        let file = dir.path + "/apps.json"
        try Data(#"{"min_app_version":{"ios":"1.4.0"},"features":{"shared_alarms":true}}"#.utf8).write(to: URL(fileURLWithPath: file))
        let apps = try AppsConfigurationSource(file: file)
        let h = try AppHarness(apps: apps)
        let first = await h.send(.get, "/v1/config")
        let etag = try #require(first.header("ETag"))
        #expect((first.json["min_app_version"] as? [String: Any])?["ios"] as? String == "1.4.0")
        #expect((first.json["features"] as? [String: Any])?["shared_alarms"] as? Bool == true)
        let cached = await h.send(.get, "/v1/config", headers: [("If-None-Match", "\"other\", \(etag)")])
        #expect(cached.status == 304)
        #expect(cached.response.body.isEmpty)
        #expect(cached.header("ETag") == etag)
        #expect(await h.send(.get, "/v1/config", headers: [("If-None-Match", "W/\(etag)")]).status == 304)
        #expect(await h.send(.get, "/v1/config", headers: [("If-None-Match", "*")]).status == 304)

        var quiet = Logger(label: "test")
        quiet.logLevel = .critical
        try Data(#"{"min_app_version":{"ios":"1.5.0"}}"#.utf8).write(to: URL(fileURLWithPath: file))
        #expect(apps.reload(logger: quiet))
        let fresh = await h.send(.get, "/v1/config", headers: [("If-None-Match", etag)])
        #expect(fresh.status == 200)
        #expect(fresh.header("ETag") != etag)
        #expect((fresh.json["min_app_version"] as? [String: Any])?["ios"] as? String == "1.5.0")
        // A bad file on reload: logged, the previous configuration stays.
        try Data(#"{"min_app_version":{"ios":"one"}}"#.utf8).write(to: URL(fileURLWithPath: file))
        #expect(!apps.reload(logger: quiet))
        #expect(apps.current.minAppVersion[.ios] == AppVersion("1.5"))
        // At start-up a bad file is refused.
        #expect(throws: AppsConfiguration.Invalid.self) { try AppsConfigurationSource(file: file) }
        #expect(throws: AppsConfiguration.Invalid.self) { try AppsConfigurationSource(file: dir.path + "/missing.json") }
    }

    @Test(
        "the file's shape is checked: unknown keys, versions, flags, app ids and fingerprints",
        arguments: [
            #"{"min_app_versions":{}}"#, #"{"min_app_version":{"ipad":"1.0"}}"#, #"{"min_app_version":{"ios":"1.0.0.0.0"}}"#,
            #"{"min_app_version":{"ios":1}}"#, #"{"features":{"x":1}}"#, #"{"features":{"Bad-Name":true}}"#,
            #"{"ios_app_ids":["com.example.app"]}"#, #"{"android_app":{"package":"app","sha256_cert_fingerprints":["AA"]}}"#,
            #"{"android_app":{"package":"com.example.app","sha256_cert_fingerprints":["AA:BB"]}}"#,
            #"{"android_app":{"package":"com.example.app","sha256_cert_fingerprints":[],"x":1}}"#, "[]", "{",
        ])
    func invalidFiles(json: String) {
        #expect(throws: AppsConfiguration.Invalid.self) { try AppsConfiguration.parse(Array(json.utf8)) }
    }

    @Test("a valid file: every key, null minimums, fingerprints uppercased")
    func validFile() throws {
        let json = """
            {"min_app_version":{"ios":"1.4","android":"2.0.1","web":null},"features":{"shared_alarms":true,"beta_x":false},
             "ios_app_ids":["ABCDE12345.com.example.chronir"],
             "android_app":{"package":"com.example.chronir","sha256_cert_fingerprints":["\(Self.fingerprint.lowercased())"]}}
            """
        let config = try AppsConfiguration.parse(Array(json.utf8))
        #expect(config.minAppVersion == [.ios: AppVersion("1.4.0")!, .android: AppVersion("2.0.1")!])
        #expect(config.features == ["shared_alarms": true, "beta_x": false])
        #expect(config.iosAppIDs == ["ABCDE12345.com.example.chronir"])
        #expect(config.androidApp?.sha256CertFingerprints == [Self.fingerprint])
    }

    @Test("versions compare by number, missing components are 0; 4 components and 9 digits at most")
    func versions() throws {
        #expect(AppVersion("1.4") == AppVersion("1.4.0"))
        #expect(try #require(AppVersion("1.4.2")) < (try #require(AppVersion("1.10"))))
        #expect(try #require(AppVersion("2")) > (try #require(AppVersion("1.99.99"))))
        #expect(AppVersion("1.2.3.4") != nil && AppVersion("1.2.3.4.5") == nil)
        #expect(AppVersion("999999999") != nil && AppVersion("1234567890") == nil)
        #expect(AppVersion("") == nil && AppVersion("1..2") == nil && AppVersion("1.x") == nil && AppVersion("-1") == nil)
        #expect(ClientIdentity(header: "iOS/1.4.2 (iPhone15,2)") == ClientIdentity(platform: .ios, version: AppVersion("1.4.2")!))
        #expect(ClientIdentity(header: "ios") == nil && ClientIdentity(header: "watch/1.0") == nil && ClientIdentity(header: "ios/") == nil)
    }

    @Test("below the minimum: 426 APP_UPDATE_REQUIRED on every route but /v1/config and sign-out; other platforms, no header pass")
    func minimumVersion() async throws {
        let h = try AppHarness(apps: try Self.source(#"{"min_app_version":{"ios":"1.5.0"}}"#))
        let ana = try await h.register("ana@example.com")
        let old = [("X-Chronir-Client", "ios/1.4.2")]
        let refused = await h.send(.get, "/v1/groups", token: ana.token, headers: old)
        #expect(refused.status == 426)
        #expect(refused.errorCode == "CA068")
        #expect(refused.errorName == "APP_UPDATE_REQUIRED")
        #expect(await h.send(.post, "/v1/auth/login", json: #"{"email":"ana@example.com","password":"x"}"#, headers: old).status == 426)
        #expect(await h.send(.get, "/v1/config", headers: old).status == 200)
        #expect(await h.send(.get, "/v1/groups", token: ana.token, headers: [("X-Chronir-Client", "ios/1.5")]).status == 200)
        #expect(await h.send(.get, "/v1/groups", token: ana.token, headers: [("X-Chronir-Client", "android/0.1")]).status == 200)
        #expect(await h.send(.get, "/v1/groups", token: ana.token, headers: [("X-Chronir-Client", "ios/old")]).status == 200)
        #expect(await h.send(.get, "/v1/groups", token: ana.token).status == 200)
        #expect(await h.send(.post, "/v1/auth/logout", token: ana.token, headers: old).status == 204)
    }

    @Test("an outdated app's socket opens and closes 4026; an up-to-date one is served")
    func socketCloseCode() async throws {
        let h = try AppHarness(apps: try Self.source(#"{"min_app_version":{"android":"3.0"}}"#))
        let ana = try await h.register("ana@example.com")
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.loopCount = 1
        let server = HTTPServer(configuration: configuration, responder: h.app)
        let port = try server.start()
        defer { server.shutdown() }
        let codes = try await blocking { () -> [UInt16?] in
            let old = try WebSocketTestClient(
                port: port, path: "/v1/realtime",
                extraHeaders: [("Authorization", "Bearer \(ana.token)"), ("X-Chronir-Client", "android/2.9")],
                timeout: LoopbackClient.hangBound)
            defer { old.connection.close() }
            let current = try WebSocketTestClient(
                port: port, path: "/v1/realtime",
                extraHeaders: [("Authorization", "Bearer \(ana.token)"), ("X-Chronir-Client", "android/3.0")],
                timeout: LoopbackClient.hangBound)
            defer { current.connection.close() }
            try current.send(text: #"{"op":"subscribe","topic":"user"}"#)
            // The first data frame: the `user` snapshot (text), or the close it would be (its code).
            var served: UInt16? = nil
            while served == nil {
                let frame = try current.readFrame(timeout: LoopbackClient.hangBound)
                if frame.opcode == .text { served = 1 } else if frame.opcode == .close { served = frame.closeCode ?? 0 }
            }
            return [UInt16(old.handshake.status), try old.readFrame(timeout: LoopbackClient.hangBound).closeCode, served]
        }
        #expect(codes == [101, 4026, 1])
    }
}
