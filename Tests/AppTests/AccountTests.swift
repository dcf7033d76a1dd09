import Domain
import Foundation
import SQLite
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

@Suite("Accounts — register, login, logout, me")
struct AccountTests {

    @Test("registration saves the client's time zone; an unknown zone is 422 naming the field")
    func registrationTimezone() async throws {
        let h = try AppHarness()
        let reply = try await h.expect(
            201, .post, "/v1/auth/register",
            json: #"{"email":"ana@example.com","password":"correct horse","display_name":"Ana","timezone":"Europe/Madrid"}"#)
        #expect(reply.object("user")?["timezone"] as? String == "Europe/Madrid")
        let token = try #require(reply.json["token"] as? String)
        #expect(try await h.expect(200, .get, "/v1/me", token: token).json["timezone"] as? String == "Europe/Madrid")
        let bad = await h.send(
            .post, "/v1/auth/register",
            json: #"{"email":"bea@example.com","password":"correct horse","display_name":"Bea","timezone":"Mars/Olympus"}"#)
        #expect(bad.status == 422 && bad.text.contains("timezone"), "\(bad.text)")
    }

    @Test("register normalises the email, returns a token that authenticates, and writes the change log")
    func registerAndMe() async throws {
        let h = try AppHarness()
        let reply = await h.send(
            .post, "/v1/auth/register",
            json: #"{"email":"  Ana@Example.COM ","password":"correct horse","display_name":" Ana "}"#)
        #expect(reply.status == 201)
        let user = try #require(reply.json["user"] as? [String: Any])
        #expect(user["email"] as? String == "ana@example.com")
        #expect(user["display_name"] as? String == "Ana")
        #expect(user["tier"] as? String == "free")
        #expect(user["status"] as? String == "active")
        #expect(user["password_hash"] == nil)
        let token = try #require(reply.json["token"] as? String)
        #expect(token.utf8.count == 43)
        #expect(reply.header("x-request-id") != nil)

        let me = await h.send(.get, "/v1/me", token: token)
        #expect(me.status == 200)
        #expect(me.json["id"] as? String == user["id"] as? String)

        // Only the token's hash is stored; the change log has the new user document.
        let (storedHashes, log) = try h.database.readSync { db in
            (
                try db.query("SELECT token_hash FROM sessions").compactMap { $0.blob("token_hash") },
                try db.query("SELECT topic, kind, op, document FROM change_log")
            )
        }
        #expect(storedHashes.count == 1)
        #expect(storedHashes[0].count == 32)
        #expect(!storedHashes.contains(Array(token.utf8)))
        #expect(log.count == 1)
        #expect(log.first?.string("topic") == "user:\(user["id"] as! String)")
        #expect(log.first?.string("op") == "added")
        #expect(log.first?.string("document")?.contains("\"display_name\":\"Ana\"") == true)
    }

    @Test("the default tier comes from configuration")
    func defaultTier() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let (token, _) = try await h.register("p@example.com")
        #expect(await h.send(.get, "/v1/me", token: token).json["tier"] as? String == "premium")
    }

    @Test("a second account with the same normalised email is 409 EMAIL_TAKEN")
    func duplicateEmail() async throws {
        let h = try AppHarness()
        _ = try await h.register("dup@example.com")
        let reply = await h.send(
            .post, "/v1/auth/register",
            json: #"{"email":"DUP@example.com","password":"another one","display_name":"B"}"#)
        #expect(reply.status == 409)
        #expect(reply.errorName == "EMAIL_TAKEN")
    }

    @Test(
        "invalid bodies are 422 naming the field",
        arguments: [
            (#"{"email":"x@example.com","password":"short","display_name":"A"}"#, "password"),
            (#"{"email":"nope","password":"long enough","display_name":"A"}"#, "email"),
            (#"{"email":"x@example.com","password":"long enough"}"#, "display_name"),
            (#"{"email":"x@example.com","password":12345678,"display_name":"A"}"#, "password"),
            (#"{"email":"x@example.com","password":"long enough","display_name":"   "}"#, "display_name"),
        ])
    func invalidRegistration(body: String, field: String) async throws {
        let h = try AppHarness()
        let reply = await h.send(.post, "/v1/auth/register", json: body)
        #expect(reply.status == 422)
        #expect(reply.errorName == "VALIDATION_FAILED")
        #expect(reply.errorField == field)
        #expect(try h.database.readSync { try $0.scalar("SELECT count(*) FROM users") } == .integer(0))
    }

    @Test("malformed JSON is 422, a non-JSON content type 415")
    func malformedBodies() async throws {
        let h = try AppHarness()
        let broken = await h.send(.post, "/v1/auth/register", json: #"{"email": "#)
        #expect(broken.status == 422)
        let wrongType = await h.send(
            .post, "/v1/auth/login", headers: [("Content-Type", "text/plain")])
        #expect(wrongType.status == 415)
    }

    @Test("login with the right password gives a new token; a wrong one is 401 INVALID_CREDENTIALS")
    func login() async throws {
        let h = try AppHarness()
        _ = try await h.register("ana@example.com")
        let ok = await h.login("ANA@example.com")
        #expect(ok.status == 200)
        #expect(ok.json["token"] is String)
        let wrong = await h.login("ana@example.com", password: "wrong horse")
        #expect(wrong.status == 401)
        #expect(wrong.errorName == "INVALID_CREDENTIALS")
        let unknown = await h.login("bob@example.com", password: "wrong horse")
        #expect(unknown.status == 401)
        #expect(unknown.errorName == "INVALID_CREDENTIALS")
    }

    @Test("logout revokes the token; other tokens keep working")
    func logout() async throws {
        let h = try AppHarness()
        let (first, _) = try await h.register("ana@example.com")
        let second = try #require(
            await h.login("ana@example.com")
                .json["token"] as? String)
        #expect(await h.send(.post, "/v1/auth/logout", token: first).status == 204)
        #expect(await h.send(.get, "/v1/me", token: first).status == 401)
        #expect(await h.send(.post, "/v1/auth/logout", token: first).status == 401)
        #expect(await h.send(.get, "/v1/me", token: second).status == 200)
    }

    @Test("missing, malformed and unknown tokens are 401 AUTH_REQUIRED")
    func badTokens() async throws {
        let h = try AppHarness()
        #expect(await h.send(.get, "/v1/me").errorName == "AUTH_REQUIRED")
        #expect(await h.send(.get, "/v1/me", token: "abc").status == 401)
        #expect(await h.send(.get, "/v1/me", token: String(repeating: "A", count: 43)).status == 401)
        #expect(
            await h.send(.get, "/v1/me", headers: [("Authorization", "Basic dXNlcjpwYXNz")]).status == 401)
    }

    @Test("tokens expire after 30 days idle and use slides the expiry")
    func idleExpiry() async throws {
        let h = try AppHarness()
        let (token, _) = try await h.register("ana@example.com")
        let day: Int64 = 24 * 3600 * 1000
        h.clock.advance(by: 29 * day)
        #expect(await h.send(.get, "/v1/me", token: token).status == 200)  // touches: expiry moves on
        h.clock.advance(by: 29 * day)
        #expect(await h.send(.get, "/v1/me", token: token).status == 200)
        h.clock.advance(by: 30 * day + 1)
        #expect(await h.send(.get, "/v1/me", token: token).status == 401)
    }

    @Test("a suspended account cannot use its token; its right password answers exactly like a wrong one")
    func suspended() async throws {
        let h = try AppHarness()
        let (token, id) = try await h.register("ana@example.com")
        try h.database.writeSync { db in try db.run("UPDATE users SET status = 'suspended' WHERE id = ?1", [.text(id)]) }
        #expect(await h.send(.get, "/v1/me", token: token).errorName == "ACCOUNT_SUSPENDED")
        let right = await h.login("ana@example.com")
        let wrong = await h.login("ana@example.com", password: "wrong horse")
        #expect(right.status == 401)
        #expect(right.errorName == "INVALID_CREDENTIALS")
        #expect(right.status == wrong.status)
        #expect(right.errorName == wrong.errorName)
        let message = { (reply: Reply) in (reply.json["error"] as? [String: Any])?["message"] as? String }
        #expect(message(right) != nil && message(right) == message(wrong))
    }

    @Test("wrong guesses for an email refuse the guessing network only: the owner's right password from elsewhere is accepted")
    func loginRateLimitPerEmailAndNetwork() async throws {
        let h = try AppHarness()
        _ = try await h.register("ana@example.com")
        for i in 0..<10 {
            let reply = await h.login("ana@example.com", password: "wrong \(i)xx", from: "10.0.0.1")
            #expect(reply.status == 401)
            h.clock.advance(by: 1000)
        }
        // The attacker's network is refused, even with the right password.
        let limited = await h.login("ana@example.com", from: "10.0.0.1")
        #expect(limited.status == 429)
        #expect(limited.errorName == "RATE_LIMITED")
        let retryAfter = try #require(limited.header("retry-after").flatMap(Int.init))
        #expect(retryAfter > 0 && retryAfter <= 15 * 60)
        // The owner, from another network, is not locked out.
        let owner = await h.login("ana@example.com", from: "10.0.1.1")
        #expect(owner.status == 200)
        h.clock.advance(by: Int64(retryAfter) * 1000)
        let again = await h.login("ana@example.com", from: "10.0.0.1")
        #expect(again.status == 200)
    }

    @Test("guessing spread over many networks: past the per-account budget only failure-free networks pass")
    func loginRateLimitPerAccountBackstop() async throws {
        let h = try AppHarness()
        _ = try await h.register("ana@example.com")
        let budget = LoginThrottle.standard.perAccount.maxAttempts
        for i in 0..<budget {
            let reply = await h.login("ana@example.com", password: "wrong \(i)xx", from: "198.51.100.\(i)")
            #expect(reply.status == 401)
        }
        // A network that already failed for this email is refused now (it had budget left per network).
        let repeatGuess = await h.login("ana@example.com", password: "wrong again", from: "198.51.100.0")
        #expect(repeatGuess.status == 429)
        // A fresh network gets one evaluated guess; after its failure it is refused too.
        let fresh = await h.login("ana@example.com", password: "wrong fresh", from: "203.0.113.9")
        #expect(fresh.status == 401)
        let freshAgain = await h.login("ana@example.com", from: "203.0.113.9")
        #expect(freshAgain.status == 429)
        // The owner from their own failure-free network still gets in.
        let owner = await h.login("ana@example.com", from: "192.0.2.200")
        #expect(owner.status == 200)
    }

    @Test("failed logins are limited per client IP across many emails")
    func loginRateLimitPerIP() async throws {
        let h = try AppHarness()
        for i in 0..<10 {
            let reply = await h.login("u\(i)@example.com", password: "wrong pass", from: "192.0.2.7")
            #expect(reply.status == 401)
        }
        let limited = await h.login("other@example.com", password: "wrong pass", from: "192.0.2.7")
        #expect(limited.status == 429)
        let elsewhere = await h.login("other@example.com", password: "wrong pass", from: "192.0.2.8")
        #expect(elsewhere.status == 401)
    }

    @Test("PATCH /v1/me updates name and zone, bumps version, and refuses a stale version with 409")
    func patchMe() async throws {
        let h = try AppHarness()
        let (token, _) = try await h.register("ana@example.com")
        let ok = await h.send(
            .patch, "/v1/me", json: #"{"display_name":"Ana B","timezone":"Europe/London","version":1}"#, token: token)
        #expect(ok.status == 200)
        #expect(ok.json["display_name"] as? String == "Ana B")
        #expect(ok.json["timezone"] as? String == "Europe/London")
        #expect(ok.json["version"] as? Int == 2)

        let stale = await h.send(.patch, "/v1/me", json: #"{"display_name":"Old","version":1}"#, token: token)
        #expect(stale.status == 409)
        #expect(stale.errorName == "SYNC_CONFLICT")
        let current = try #require((stale.json["error"] as? [String: Any])?["current"] as? [String: Any])
        #expect(current["version"] as? Int == 2)

        let cleared = await h.send(.patch, "/v1/me", json: #"{"timezone":null}"#, token: token)
        #expect(cleared.status == 200)
        #expect(cleared.json["timezone"] is NSNull)
        let badZone = await h.send(.patch, "/v1/me", json: #"{"timezone":"Nowhere/Land"}"#, token: token)
        #expect(badZone.status == 422)
        #expect(badZone.errorField == "timezone")
        let modified = try h.database.readSync {
            try $0.scalar("SELECT count(*) FROM change_log WHERE op = 'modified'")
        }
        #expect(modified == .integer(2))
    }

    @Test("405 carries Allow; unknown API paths are 404 NOT_FOUND; client request ids are echoed")
    func routingErrors() async throws {
        let h = try AppHarness()
        let notAllowed = await h.send(.put, "/v1/me")
        #expect(notAllowed.status == 405)
        #expect(notAllowed.header("allow") == "DELETE, GET, HEAD, PATCH")
        let missing = await h.send(.get, "/v1/unknown")
        #expect(missing.status == 404)
        #expect(missing.errorName == "NOT_FOUND")
        let echoed = await h.send(.get, "/healthz", headers: [("X-Request-Id", "abc-123")])
        #expect(echoed.header("x-request-id") == "abc-123")
        let replaced = await h.send(.get, "/healthz", headers: [("X-Request-Id", "bad id with spaces")])
        #expect(replaced.header("x-request-id") != "bad id with spaces")
    }

    @Test("healthz and readyz")
    func health() async throws {
        let h = try AppHarness()
        #expect(await h.send(.get, "/healthz").text == #"{"status":"ok"}"#)
        #expect(await h.send(.get, "/readyz").status == 200)
    }
}

/// Profile fields (docs/api.md#accounts): `locale` and `avatar_url` through `PATCH /v1/me`,
/// `last_seen_at` kept by the server with the session's hourly touch, none of them shown to others.
@Suite("Accounts — profile fields: locale, avatar_url, last_seen_at")
struct ProfileFieldTests {
    @Test("PATCH sets locale and avatar_url, null clears them; GET /v1/me and the change on user:<id> carry them")
    func setAndClear() async throws {
        let h = try AppHarness()
        let (token, userID) = try await h.register("ana@example.com")
        let fresh = try await h.expect(200, .get, "/v1/me", token: token)
        #expect(fresh.json["locale"] is NSNull)
        #expect(fresh.json["avatar_url"] is NSNull)
        let set = try await h.expect(
            200, .patch, "/v1/me", json: #"{"locale":"pt-BR","avatar_url":"https://cdn.example.com/a/ana.png?s=96"}"#, token: token)
        #expect(set.json["locale"] as? String == "pt-BR")
        #expect(set.json["avatar_url"] as? String == "https://cdn.example.com/a/ana.png?s=96")
        #expect(set.json["version"] as? Int == 2)
        let me = try await h.expect(200, .get, "/v1/me", token: token)
        #expect(me.json["locale"] as? String == "pt-BR")
        let logged = try h.database.readSync { db in
            try db.queryOne(
                "SELECT document FROM change_log WHERE topic = ?1 AND kind = 'user' ORDER BY seq DESC LIMIT 1", [.text("user:\(userID)")]
            )?.string("document") ?? ""
        }
        #expect(logged.contains(#""locale":"pt-BR""#))
        // Only what the PATCH names changes; null clears.
        let cleared = try await h.expect(200, .patch, "/v1/me", json: #"{"avatar_url":null}"#, token: token)
        #expect(cleared.json["avatar_url"] is NSNull)
        #expect(cleared.json["locale"] as? String == "pt-BR")
        try await h.expect(200, .patch, "/v1/me", json: #"{"locale":null}"#, token: token)
        #expect(try await h.expect(200, .get, "/v1/me", token: token).json["locale"] is NSNull)
    }

    @Test("bad locale, non-https or oversized avatar_url → 422 naming the field; the limits themselves are accepted; nothing changes")
    func validation() async throws {
        let h = try AppHarness()
        let (token, _) = try await h.register("ana@example.com")
        let longest = "en-abcdefgh-abcdefgh-abcdefgh-abcde"
        #expect(longest.utf8.count == AccountRules.maxLocaleBytes)
        for good in ["en", "en-US", "zh-Hant-TW", "es-419", "de-CH-1996", longest] {
            let reply = try await h.expect(200, .patch, "/v1/me", json: #"{"locale":"\#(good)"}"#, token: token)
            #expect(reply.json["locale"] as? String == good)
        }
        for bad in ["en_US", "e", "engl", "en--US", "en-", "-en", "en-US!", "en-toolongsubtag", "ja-\u{65E5}", longest + "x", ""] {
            let reply = try await h.expect(422, .patch, "/v1/me", json: #"{"locale":"\#(bad)"}"#, token: token)
            #expect(reply.errorField == "locale", "\(bad)")
        }
        let base = "https://cdn.example.com/"
        let longestURL = base + String(repeating: "a", count: AccountRules.maxAvatarURLBytes - base.utf8.count)
        try await h.expect(200, .patch, "/v1/me", json: #"{"avatar_url":"\#(longestURL)"}"#, token: token)
        for bad in [
            "http://cdn.example.com/ana.png", longestURL + "a", "https://", "https://user:pw@cdn.example.com/a.png",
            "ftp://cdn.example.com/a",
            "https://cdn.example.com/a b.png", "cdn.example.com/ana.png", "javascript:alert(1)",
        ] {
            let reply = try await h.expect(422, .patch, "/v1/me", json: #"{"avatar_url":"\#(bad)"}"#, token: token)
            #expect(reply.errorField == "avatar_url", "\(bad)")
        }
        let me = try await h.expect(200, .get, "/v1/me", token: token)
        #expect(me.json["avatar_url"] as? String == longestURL, "refused PATCHes changed nothing")
        #expect(me.json["locale"] as? String == longest)
    }

    @Test("last_seen_at: set at sign-in, refreshed by a request only once the hourly session touch is due — one write an hour")
    func lastSeen() async throws {
        let h = try AppHarness()
        let t0 = h.clock.nowMilliseconds()
        let (token, userID) = try await h.register("ana@example.com")
        func stored() throws -> Int64? {
            try h.database.readSync { db in
                try db.queryOne("SELECT last_seen_ms FROM users WHERE id = ?1", [.text(userID)])?.int("last_seen_ms")
            }
        }
        #expect(try stored() == t0)
        #expect(
            try await h.expect(200, .get, "/v1/me", token: token).json["last_seen_at"] as? String == Timestamp(milliseconds: t0).description
        )
        // Within the hour: requests write nothing; the document (and its version) stays.
        h.clock.advance(by: SessionStore.touchIntervalMilliseconds - 1)
        let early = try await h.expect(200, .get, "/v1/me", token: token)
        #expect(early.json["last_seen_at"] as? String == Timestamp(milliseconds: t0).description)
        #expect(try stored() == t0)
        // Once the touch is due, that request refreshes it (without a new version or change-log row).
        let seq = try h.database.readSync { db in try ChangeLog.latestSeq(on: db) }
        h.clock.advance(by: 1)
        let later = t0 + SessionStore.touchIntervalMilliseconds
        let touched = try await h.expect(200, .get, "/v1/me", token: token)
        #expect(touched.json["last_seen_at"] as? String == Timestamp(milliseconds: later).description)
        #expect(touched.json["version"] as? Int == 1)
        #expect(try stored() == later)
        #expect(try h.database.readSync { db in try ChangeLog.latestSeq(on: db) } == seq)
        // Signing in on another device is being seen too.
        h.clock.advance(by: 60_000)
        let login = await h.login("ana@example.com")
        #expect((login.json["user"] as? [String: Any])?["last_seen_at"] as? String == Timestamp(milliseconds: later + 60_000).description)
        #expect(try stored() == later + 60_000)
    }

    @Test("other members never see them: group member documents carry no locale, avatar_url or last_seen_at")
    func notShownToOthers() async throws {
        let f = try await GroupFixture.make()
        try await f.h.expect(
            200, .patch, "/v1/me", json: #"{"locale":"fr-FR","avatar_url":"https://cdn.example.com/m.png"}"#, token: f.member.token)
        let group = try await f.h.expect(200, .get, "/v1/groups/\(f.groupID)", token: f.owner.token)
        #expect(!group.text.contains("fr-FR") && !group.text.contains("cdn.example.com"))
        for member in group.json["members"] as? [[String: Any]] ?? [] {
            #expect(member["locale"] == nil && member["avatar_url"] == nil && member["last_seen_at"] == nil)
        }
    }

    @Test("account deletion clears the profile fields in the row and in the change log's copies of the user document")
    func erasedOnDeletion() async throws {
        let h = try AppHarness()
        let (token, userID) = try await h.register("ana@example.com")
        try await h.expect(200, .patch, "/v1/me", json: #"{"locale":"pt-BR","avatar_url":"https://cdn.example.com/ana.png"}"#, token: token)
        try await h.expect(204, .delete, "/v1/me", token: token)
        let (row, copies) = try h.database.readSync { db in
            (
                try db.queryOne(
                    "SELECT COUNT(*) AS n FROM users WHERE id = ?1 AND locale IS NULL AND avatar_url IS NULL AND last_seen_ms IS NULL",
                    [.text(userID)])?.int("n"),
                try db.queryOne(
                    "SELECT COUNT(*) AS n FROM change_log WHERE document LIKE '%cdn.example.com%' OR document LIKE '%pt-BR%'", []
                )?.int("n")
            )
        }
        #expect(row == 1)
        #expect(copies == 0)
        let report = try h.database.readSync { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == nil, "\(report)")
    }
}
