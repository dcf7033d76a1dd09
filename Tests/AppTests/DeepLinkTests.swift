import Domain
import Foundation
import Storage
import TestSupport
import Testing
import Wire

@testable import App

/// Deep links (docs/apps.md#deep-links): the association files come from the app configuration and are
/// absent without it; the apps' `/group/{id}` and `/alarm/{id}` serve the web shell; an invitation mail
/// links to `/invite/{token}`, a token that previews and answers the invitation for its addressee only.
@Suite("Deep links — association files, web shell routes, the invitation mail's link")
struct DeepLinkTests {
    static let configured = """
        {"ios_app_ids":["ABCDE12345.com.example.chronir","ABCDE12345.com.example.chronir.beta"],
         "android_app":{"package":"com.example.chronir","sha256_cert_fingerprints":["\(AppConfigurationTests.fingerprint)"]}}
        """

    @Test("not configured: both files are 404")
    func absent() async throws {
        let h = try AppHarness()
        #expect(await h.send(.get, "/.well-known/apple-app-site-association").status == 404)
        #expect(await h.send(.get, "/.well-known/assetlinks.json").status == 404)
        // Half configured: each file stands alone.
        let ios = try AppHarness(apps: try AppConfigurationTests.source(#"{"ios_app_ids":["ABCDE12345.com.example.chronir"]}"#))
        #expect(await ios.send(.get, "/.well-known/apple-app-site-association").status == 200)
        #expect(await ios.send(.get, "/.well-known/assetlinks.json").status == 404)
    }

    @Test("apple-app-site-association names the app ids and the four link paths, as JSON")
    func apple() async throws {
        let h = try AppHarness(apps: try AppConfigurationTests.source(Self.configured))
        let reply = await h.send(.get, "/.well-known/apple-app-site-association")
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == "application/json")
        let details = try #require((reply.json["applinks"] as? [String: Any])?["details"] as? [[String: Any]])
        #expect(details.count == 1)
        #expect(details[0]["appIDs"] as? [String] == ["ABCDE12345.com.example.chronir", "ABCDE12345.com.example.chronir.beta"])
        let paths = (details[0]["components"] as? [[String: String]])?.compactMap { $0["/"] }
        #expect(paths == ["/invite/*", "/join/*", "/group/*", "/alarm/*"])
        #expect(reply.text.contains(#""/invite/*""#))  // slashes unescaped
        #expect((reply.json["webcredentials"] as? [String: Any])?["apps"] as? [String] == details[0]["appIDs"] as? [String])
    }

    @Test("assetlinks.json is one handle_all_urls statement for the package and its fingerprints")
    func android() async throws {
        let h = try AppHarness(apps: try AppConfigurationTests.source(Self.configured))
        let reply = await h.send(.get, "/.well-known/assetlinks.json")
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == "application/json")
        let statements = try #require(try JSONSerialization.jsonObject(with: Data(reply.response.body)) as? [[String: Any]])
        #expect(statements.count == 1)
        #expect(statements[0]["relation"] as? [String] == ["delegate_permission/common.handle_all_urls"])
        let target = try #require(statements[0]["target"] as? [String: Any])
        #expect(target["namespace"] as? String == "android_app")
        #expect(target["package_name"] as? String == "com.example.chronir")
        #expect(target["sha256_cert_fingerprints"] as? [String] == [AppConfigurationTests.fingerprint])
    }

    @Test("the invitation mail links to /invite/{token}: preview, and accept by the addressee only")
    func invitationMailLink() async throws {
        let h = try AppHarness(defaultTier: .premium, configure: { $0.mail.smtpURL = "smtp://127.0.0.1:1" })
        let ana = try await h.register("ana@example.com")
        let bea = try await h.register("bea@example.com", name: "Bea")
        let eve = try await h.register("eve@example.com", name: "Eve")
        let groupID = try await h.createGroup(token: ana.token, name: "Flat 3")
        let created = await h.send(
            .post, "/v1/groups/\(groupID)/invitations", json: #"{"invitee_email":"bea@example.com","role":"member"}"#,
            token: ana.token)
        #expect(created.status == 201)
        #expect(!created.text.contains("/invite/"))  // the mail's token is never shown to the inviter
        let body = try #require(
            try await h.database.read { db in
                try db.queryOne("SELECT body FROM mail_outbox WHERE kind = 'group_invitation' AND recipient = 'bea@example.com'", [])
            }?.string("body"))
        let base = h.app.services.config.publicBaseURL
        let line = try #require(body.split(separator: "\n").first { $0.hasPrefix("\(base)/invite/") })
        let token = String(line.dropFirst("\(base)/invite/".count))
        #expect(token.utf8.count == 43)

        let preview = await h.send(.get, "/v1/invitations/\(token)", token: bea.token)
        #expect(preview.status == 200, "\(preview.text)")
        #expect(preview.text.contains("Flat 3"))
        #expect(await h.send(.post, "/v1/invitations/\(token)/accept", token: eve.token).status == 404)
        let accepted = await h.send(.post, "/v1/invitations/\(token)/accept", token: bea.token)
        #expect(accepted.status == 200, "\(accepted.text)")
        let members = await h.send(.get, "/v1/groups/\(groupID)", token: bea.token)
        #expect(members.status == 200)
    }
}

/// Every notification's `data` names the app path it opens (docs/apps.md#deep-links).
@Suite("Deep links — the deep_link of every notification")
struct NotificationDeepLinkTests {
    @Test("an alarm's notification opens the alarm, a group's the group, an invitation or a test the home screen")
    func deepLinks() {
        func link(_ type: NotificationType, group: String?, _ extra: [String: String] = [:]) -> String? {
            NotificationContent.make(type, groupID: group, title: "t", message: .text("b"), extra: extra).data["deep_link"]
        }
        #expect(link(.sharedCompletion, group: "g1", ["alarm_id": "a1", "completion_id": "c1"]) == "/alarm/a1")
        #expect(link(.alarmFired, group: nil, ["alarm_id": "p1"]) == "/alarm/p1")
        #expect(link(.groupMemberJoined, group: "g1", ["user_id": "u1"]) == "/group/g1")
        #expect(link(.groupInvitation, group: "g1", ["invitation_id": "i1"]) == "/")
        #expect(link(.test, group: nil) == "/")
    }
}
