import Foundation
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// The web client's session cookie and its CSRF defence (`SessionCookie`, docs/security.md#the-web-clients-session):
/// issued only when a sign-in asks for it, never in the body then; cookie-authenticated writes need
/// `X-Chronir-CSRF: 1` and an allowed `Origin` (403 CA042 otherwise); bearer clients unchanged; logout
/// removes it; the WebSocket takes it at the upgrade only with an allowed Origin.
@Suite("Web session cookie — HttpOnly, SameSite=Strict, CSRF header, bearer unchanged")
struct SessionCookieTests {
    static let asCookie = [("X-Chronir-Session", "cookie")]
    static let login = #"{"email":"ana@example.com","password":"correct horse"}"#

    /// Registers Ana and signs in asking for a cookie: the `Cookie` header value to send back.
    func cookieSession(_ h: AppHarness) async throws -> (cookie: String, reply: Reply) {
        _ = try await h.register("ana@example.com")
        let reply = await h.send(.post, "/v1/auth/login", json: Self.login, headers: Self.asCookie)
        #expect(reply.status == 200, "\(reply.text)")
        let set = try #require(reply.header("Set-Cookie"))
        let pair = try #require(set.split(separator: ";").first)
        return (String(pair), reply)
    }

    @Test("a sign-in that asks for a cookie gets HttpOnly, SameSite=Strict, Path=/, Max-Age — and no token in the body")
    func issued() async throws {
        let h = try AppHarness()
        let (cookie, reply) = try await cookieSession(h)
        let set = try #require(reply.header("Set-Cookie"))
        let attributes = Set(set.split(separator: ";").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(
            attributes == ["Path=/", "Max-Age=\(400 * 24 * 3600)", "HttpOnly", "SameSite=Strict"], "\(set)")
        #expect(cookie.hasPrefix("chronir_session=") && cookie.count == "chronir_session=".count + 43)
        #expect(reply.json["token"] == nil && reply.json["user"] != nil && reply.json["expires_at"] != nil, "\(reply.text)")
        #expect(reply.header("Cache-Control") == "no-store")
        let me = await h.send(.get, "/v1/me", headers: [("Cookie", "theme=dark; \(cookie)")])
        #expect(me.status == 200 && me.json["email"] as? String == "ana@example.com", "\(me.text)")
    }

    @Test("over https the cookie is __Host-chronir_session and Secure; an unprefixed one (tossed from a sibling) is not read")
    func secure() async throws {
        let h = try AppHarness(configure: { $0.publicBaseURL = "https://chronir.example" })
        let (cookie, reply) = try await cookieSession(h)
        let set = try #require(reply.header("Set-Cookie"))
        #expect(set.hasPrefix("__Host-chronir_session=") && set.hasSuffix("; Secure") && set.contains("; Path=/;"), "\(set)")
        #expect(!set.contains("Domain"), "a __Host- cookie names no Domain")
        #expect(await h.send(.get, "/v1/me", headers: [("Cookie", cookie)]).status == 200)
        let value = cookie.dropFirst("__Host-chronir_session=".count)
        let unprefixed = await h.send(.get, "/v1/me", headers: [("Cookie", "chronir_session=\(value)")])
        #expect(unprefixed.status == 401 && unprefixed.errorName == "AUTH_REQUIRED", "\(unprefixed.text)")
        let out = await h.send(.post, "/v1/auth/logout", headers: [("Cookie", cookie), ("X-Chronir-CSRF", "1")])
        #expect(out.header("Set-Cookie") == "__Host-chronir_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict; Secure")
    }

    @Test("the session cookie twice — one header or two, same value or not — is 400 CA043, on the API and the WebSocket upgrade")
    func twoCookies() async throws {
        let h = try AppHarness()
        let (cookie, _) = try await cookieSession(h)
        let planted = "chronir_session=" + String(repeating: "A", count: 43)
        for headers in [
            [("Cookie", "\(planted); \(cookie)")], [("Cookie", "\(cookie); \(planted)")], [("Cookie", "\(cookie); \(cookie)")],
            [("Cookie", cookie), ("Cookie", planted)],
        ] {
            let reply = await h.send(.get, "/v1/me", headers: headers)
            #expect(reply.status == 400 && reply.errorCode == "CA043" && reply.errorName == "SESSION_COOKIE_AMBIGUOUS", "\(reply.text)")
        }
        let preview = await h.send(.get, "/v1/join/ABCDEFGH", headers: [("Cookie", "\(planted); \(cookie)")])
        #expect(preview.status == 400 && preview.errorCode == "CA043", "\(preview.text)")
        #expect(await h.send(.get, "/v1/me", headers: [("Cookie", "theme=dark; \(cookie); chronir_session_x=1")]).status == 200)
    }

    @Test("a cookie-authenticated write without X-Chronir-CSRF, or from a foreign Origin, is 403 CA042 and changes nothing")
    func csrfRefused() async throws {
        let h = try AppHarness()
        let (cookie, _) = try await cookieSession(h)
        let rename = #"{"display_name":"Mallory"}"#
        let bare = await h.send(.patch, "/v1/me", json: rename, headers: [("Cookie", cookie)])
        #expect(bare.status == 403 && bare.errorCode == "CA042" && bare.errorName == "CSRF_CHECK_FAILED", "\(bare.text)")
        let wrongValue = await h.send(.patch, "/v1/me", json: rename, headers: [("Cookie", cookie), ("X-Chronir-CSRF", "yes")])
        #expect(wrongValue.errorCode == "CA042")
        let foreign = await h.send(
            .patch, "/v1/me", json: rename, headers: [("Cookie", cookie), ("X-Chronir-CSRF", "1"), ("Origin", "https://evil.example")])
        #expect(foreign.status == 403 && foreign.errorCode == "CA042", "\(foreign.text)")
        let logout = await h.send(.post, "/v1/auth/logout", headers: [("Cookie", cookie)])
        #expect(logout.status == 403 && logout.errorCode == "CA042", "a cross-site logout is a write too")
        #expect(await h.send(.get, "/v1/me", headers: [("Cookie", cookie)]).json["display_name"] as? String == "Ana")

        let ok = await h.send(
            .patch, "/v1/me", json: #"{"display_name":"Ana B"}"#,
            headers: [("Cookie", cookie), ("X-Chronir-CSRF", "1"), ("Origin", "http://127.0.0.1:8080")])
        #expect(ok.status == 200 && ok.json["display_name"] as? String == "Ana B", "\(ok.text)")
        let noOrigin = await h.send(
            .patch, "/v1/me", json: #"{"display_name":"Ana C"}"#, headers: [("Cookie", cookie), ("X-Chronir-CSRF", "1")])
        #expect(noOrigin.status == 200, "same-origin fetches of some browsers send no Origin on PATCH")
    }

    @Test("bearer clients are unchanged: the token in the body, no cookie, writes without the CSRF header")
    func bearerUnchanged() async throws {
        let h = try AppHarness()
        _ = try await h.register("ana@example.com")
        let login = await h.send(.post, "/v1/auth/login", json: Self.login)
        #expect(login.status == 200 && login.header("Set-Cookie") == nil)
        let token = try #require(login.json["token"] as? String)
        let write = await h.send(.patch, "/v1/me", json: #"{"display_name":"Ana B"}"#, token: token)
        #expect(write.status == 200, "\(write.text)")
        // A bearer header wins over a cookie, which then is not looked at (nor its CSRF check).
        let both = await h.send(
            .patch, "/v1/me", json: #"{"display_name":"Ana C"}"#, token: token, headers: [("Cookie", "chronir_session=x")])
        #expect(both.status == 200)
    }

    @Test("logout ends the session and removes the cookie; the old cookie is then 401")
    func logout() async throws {
        let h = try AppHarness()
        let (cookie, _) = try await cookieSession(h)
        let out = await h.send(.post, "/v1/auth/logout", headers: [("Cookie", cookie), ("X-Chronir-CSRF", "1")])
        #expect(out.status == 204)
        #expect(out.header("Set-Cookie") == "chronir_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict")
        #expect(await h.send(.get, "/v1/me", headers: [("Cookie", cookie)]).status == 401)
        #expect(await h.send(.get, "/v1/me", headers: [("Cookie", "chronir_session=")]).status == 401)
    }

    @Test("the WebSocket takes the cookie at the upgrade with an allowed Origin; without an Origin it is not looked at")
    func webSocket() async throws {
        let h = try AppHarness()
        let (cookie, _) = try await cookieSession(h)
        let (server, port) = try RealtimeTests().serve(h)
        defer { server.shutdown() }
        let snapshot = try await blocking {
            let feed = try RealtimeTests.Feed(port: port, token: nil, origin: "http://127.0.0.1:8080", cookie: cookie)
            defer { feed.close() }
            try feed.send(#"{"op":"subscribe","topic":"user"}"#)
            return try feed.next(RealtimeTests.type("snapshot", "user"))["topic"] as? String
        }
        #expect(snapshot == "user", "authenticated by the cookie, no auth message")
        let unauthenticated = try await blocking {
            let feed = try RealtimeTests.Feed(port: port, token: nil, cookie: cookie)
            defer { feed.close() }
            try feed.send(#"{"op":"subscribe","topic":"user"}"#)
            return (try? feed.next())?["type"] as? String  // an error message, or the close after the auth deadline
        }
        #expect(unauthenticated != "snapshot", "no Origin: not the web client, so the cookie is not used")
        let foreign = try await blocking {
            let feed = try RealtimeTests.Feed(port: port, token: nil, origin: "https://evil.example", cookie: cookie)
            defer { feed.close() }
            return feed.status
        }
        #expect(foreign == 403)
        let twice = try await blocking {
            let feed = try RealtimeTests.Feed(
                port: port, token: nil, origin: "http://127.0.0.1:8080",
                cookie: "chronir_session=\(String(repeating: "A", count: 43)); \(cookie)")
            defer { feed.close() }
            return feed.status
        }
        #expect(twice == 400, "the session cookie twice: refused before the 101")
    }
}
