import Hashing
import Push
import Testing

@Suite("Push subscription validation")
struct PushSubscriptionTests {
    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"

    @Test func acceptsABrowserSubscription() throws {
        let subscription = try PushSubscription(
            endpoint: "https://fcm.googleapis.com/fcm/send/dXr1:APA91b?x=1", p256dh: Self.p256dh, auth: Self.auth)
        #expect(subscription.endpoint.host == "fcm.googleapis.com")
        #expect(subscription.endpoint.origin == "https://fcm.googleapis.com")
        #expect(subscription.endpoint.pathAndQuery == "/fcm/send/dXr1:APA91b?x=1")
        #expect(subscription.p256dh.x963Representation == RFC8291.userAgentPublic)
        #expect(subscription.authSecret == RFC8291.authSecret)
        // Padded base64url, as some libraries send it, is the same subscription.
        let padded = try PushSubscription(
            endpoint: "https://fcm.googleapis.com/fcm/send/dXr1:APA91b?x=1", p256dh: Self.p256dh + "=", auth: Self.auth + "==")
        #expect(padded == subscription)
    }

    @Test(
        arguments: [
            ("https://Push.Example.NET:8443/a", "push.example.net", 8443, "https://push.example.net:8443", "/a"),
            ("https://push.example.net:443", "push.example.net", nil, "https://push.example.net", "/"),
            ("HTTPS://127.0.0.1:9/?q", "127.0.0.1", 9, "https://127.0.0.1:9", "/?q"),
            ("https://[::1]:4433/w/p", "[::1]", 4433, "https://[::1]:4433", "/w/p"),
            (
                "https://updates.push.services.mozilla.com/wpush/v2/gAAAAABl", "updates.push.services.mozilla.com", nil,
                "https://updates.push.services.mozilla.com", "/wpush/v2/gAAAAABl"
            ),
        ] as [(String, String, Int?, String, String)])
    func endpointParts(_ url: String, host: String, port: Int?, origin: String, target: String) throws {
        let endpoint = try PushEndpoint(url)
        #expect(endpoint.host == host)
        #expect(endpoint.port == port)
        #expect(endpoint.origin == origin)
        #expect(endpoint.pathAndQuery == target)
        #expect(endpoint.url == url)
    }

    @Test func endpointLengthLimit() throws {
        let prefix = "https://push.example.net/"
        let longest = prefix + String(repeating: "a", count: PushEndpoint.maxByteCount - prefix.utf8.count)
        #expect(try PushEndpoint(longest).url.utf8.count == 2_048)
        #expect(throws: PushSubscriptionError.endpointTooLong) { try PushEndpoint(longest + "a") }
    }

    @Test(arguments: [
        "http://push.example.net/a", "ftp://push.example.net/", "wss://push.example.net/", "javascript:alert(1)", "web+push://x",
    ])
    func nonHTTPSEndpointsAreRefused(_ url: String) {
        #expect(throws: PushSubscriptionError.endpointNotHTTPS) { try PushEndpoint(url) }
    }

    @Test(arguments: [
        "", "push.example.net/a", "://push.example.net", "https:push.example.net", "https:/push.example.net", "https://",
        "https:///a", "https://user@push.example.net/", "https://push.example.net/a#frag", "https://push.example.net/a b",
        "https://push.exämple.net/", "https://push..example.net/", "https://.push.example.net/", "https://push.example.net./",
        "https://-push.example.net/", "https://push_1.example.net/", "https://push.example.net:/", "https://push.example.net:0/",
        "https://push.example.net:65536/", "https://push.example.net:08x/", "https://push.example.net:123456/",
        "https//push.example.net:443/", "1https://push.example.net/", "https://[::1/", "https://[]/", "https://[::1]x/", "https://[g::1]/",
        "https://push.example.net/\u{7F}",
        "https://" + String(repeating: "a", count: 64) + ".example.net/",
    ])
    func malformedEndpointsAreRefused(_ url: String) {
        #expect(throws: PushSubscriptionError.endpointMalformed) { try PushEndpoint(url) }
    }

    @Test func badKeysAreRefused() {
        let endpoint = "https://push.example.net/a"
        var offCurve = RFC8291.userAgentPublic
        offCurve[64] ^= 1
        var compressed = Array(RFC8291.userAgentPublic.prefix(33))
        compressed[0] = 2
        for p256dh in [
            Base64URL.encode(offCurve), Base64URL.encode(compressed), Base64URL.encode(RFC8291.userAgentPublic.dropLast()), "",
            "not base64!", Base64.encode(RFC8291.userAgentPublic), Self.p256dh + "===", String(repeating: "A", count: 200),
        ] {
            #expect(throws: PushSubscriptionError.invalidP256dh) {
                try PushSubscription(endpoint: endpoint, p256dh: p256dh, auth: Self.auth)
            }
        }
        for auth in [
            Base64URL.encode(RFC8291.authSecret.dropLast()), Base64URL.encode(RFC8291.authSecret + [0]), "", "!!!!", Self.auth + "=",
        ] {
            #expect(throws: PushSubscriptionError.invalidAuth) { try PushSubscription(endpoint: endpoint, p256dh: Self.p256dh, auth: auth) }
        }
        #expect(throws: PushSubscriptionError.endpointNotHTTPS) {
            try PushSubscription(endpoint: "http://push.example.net/", p256dh: Self.p256dh, auth: Self.auth)
        }
    }

    @Test func errorCodesAreStable() {
        #expect(
            [PushSubscriptionError.endpointTooLong, .endpointNotHTTPS, .endpointMalformed, .invalidP256dh, .invalidAuth].map(\.rawValue)
                == ["endpoint_too_long", "endpoint_not_https", "endpoint_malformed", "invalid_p256dh", "invalid_auth"])
    }
}
