import Foundation
import Logging
import TestSupport
import Testing
import Wire

@testable import App

/// `GET /v1/auth/providers` (docs/sign-in.md#the-web-client): what the web client's sign-in page
/// asks to decide which provider buttons to show.
@Suite("GET /v1/auth/providers — the sign-in buttons a web page shows")
struct SignInProviderTests {
    @Test("no provider configured: an empty list, without authentication")
    func noneConfigured() async throws {
        let h = try AppHarness()
        let reply = await h.send(.get, "/v1/auth/providers")
        #expect(reply.status == 200)
        #expect(reply.json.keys.sorted() == ["providers"])
        #expect((reply.json["providers"] as? [Any])?.isEmpty == true, "\(reply.text)")
    }

    @Test("each provider that is on, Apple first, with its web client id — null when the web has none")
    func configured() async throws {
        var config = OIDCConfiguration()
        config.google = .init(
            clientIDs: ["ios.apps.googleusercontent.com", "web.apps.googleusercontent.com"], jwksURL: "https://127.0.0.1:9/keys",
            webClientID: "web.apps.googleusercontent.com")
        config.apple = .init(clientIDs: ["com.example.chronir"], jwksURL: "https://127.0.0.1:9/keys")
        let h = try AppHarness(oidc: { clock in
            OIDCService(config: config, allowPrivateDestinations: true, caFile: nil, clock: clock, logger: Logger(label: "providers-test"))
        })
        defer { h.app.services.oidc?.close() }
        let reply = await h.send(.get, "/v1/auth/providers")
        #expect(reply.status == 200)
        let providers = try #require(reply.json["providers"] as? [[String: Any]], "\(reply.text)")
        #expect(providers.map { $0["provider"] as? String } == ["apple", "google"])
        #expect(providers.map { $0.keys.sorted() } == [["provider", "web_client_id"], ["provider", "web_client_id"]])
        #expect(providers[0]["web_client_id"] is NSNull || providers[0]["web_client_id"] == nil, "Apple has no web client id")
        #expect(providers[1]["web_client_id"] as? String == "web.apps.googleusercontent.com")
    }
}
