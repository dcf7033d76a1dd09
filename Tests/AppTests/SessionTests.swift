import Domain
import Foundation
import Hashing
import Storage
import Store
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// `GET/DELETE /v1/me/sessions`, `POST /v1/me/sessions/revoke-others`, `POST /v1/me/password`
///: what a user sees of their sessions, signing them out, and the password change under
/// the login throttle; a revoked session's sockets close 4003, also when another process revoked it.
@Suite("Sessions — list, revoke, sign out elsewhere, change password")
struct SessionTests {
    /// Signs `email` in from `ip` with `userAgent`; returns the token.
    func signIn(
        _ h: AppHarness, _ email: String, password: String = "correct horse", ip: String = "127.0.0.1",
        userAgent: String? = nil
    ) async throws -> String {
        let reply = await h.send(
            .post, "/v1/auth/login", json: #"{"email":"\#(email)","password":"\#(password)"}"#,
            headers: userAgent.map { [("User-Agent", $0)] } ?? [], remoteAddress: ip)
        guard reply.status == 200, let token = reply.json["token"] as? String else {
            throw AppHarness.HarnessError.unexpected(reply.text)
        }
        return token
    }

    /// The `sessions` array of `GET /v1/me/sessions`.
    func sessions(_ h: AppHarness, token: String) async throws -> [[String: Any]] {
        let reply = await h.send(.get, "/v1/me/sessions", token: token)
        #expect(reply.status == 200, "\(reply.text)")
        return try #require(reply.json["sessions"] as? [[String: Any]])
    }

    @Test("the list: public ids (not the token hash), times, user agent, a coarse network, the caller's marked current")
    func list() async throws {
        let h = try AppHarness()
        let (first, _) = try await h.register("ana@example.com")
        h.clock.advance(by: 1000)
        let phone = try await signIn(h, "ana@example.com", ip: "203.0.113.77", userAgent: "Phone/1.0")
        h.clock.advance(by: 1000)
        let laptop = try await signIn(h, "ana@example.com", ip: "2001:db8:aa:bb::5", userAgent: "Laptop/2.0")
        let listed = try await sessions(h, token: phone)
        #expect(listed.count == 3)
        // Most recently used first.
        #expect(listed.map { $0["user_agent"] as? String } == ["Laptop/2.0", "Phone/1.0", nil])
        #expect(listed.map { $0["network"] as? String } == ["2001:db8:aa::/48", "203.0.113.0/24", "127.0.0.0/24"])
        #expect(listed.map { $0["current"] as? Bool } == [false, true, false])
        let ids = listed.compactMap { $0["id"] as? String }
        #expect(Set(ids).count == 3)
        let hashes = try h.database.readSync { db in
            try db.query("SELECT token_hash FROM sessions").compactMap { $0.blob("token_hash").map(Hex.encode) }
        }
        for id in ids {
            #expect(id.count == 32 && id.allSatisfy { $0.isHexDigit && !$0.isUppercase })
            #expect(!hashes.contains(where: { $0.hasPrefix(id) }))
        }
        let keys = Set(listed[0].keys)
        #expect(keys == ["id", "created_at", "last_used_at", "expires_at", "user_agent", "network", "current"])
        #expect(listed[2]["user_agent"] is NSNull, "an unknown user agent is null, not absent")
        #expect(listed[0]["created_at"] as? String == Timestamp(milliseconds: h.clock.nowMilliseconds()).description)
        // Another token marks its own session.
        #expect(try await sessions(h, token: laptop).first?["current"] as? Bool == true)
        // A logged-out session is not listed.
        try await h.expect(204, .post, "/v1/auth/logout", token: first)
        #expect(try await sessions(h, token: phone).count == 2)
    }

    @Test("DELETE one session: 204 and its token stops working; another user's id, an unknown one, a second time: 404 alike")
    func revokeOne() async throws {
        let h = try AppHarness()
        let (ana, _) = try await h.register("ana@example.com")
        let (bo, _) = try await h.register("bo@example.com")
        let anaPhone = try await signIn(h, "ana@example.com")
        let boSessions = try await sessions(h, token: bo)
        let boID = try #require(boSessions.first?["id"] as? String)
        let refused = await h.send(.delete, "/v1/me/sessions/\(boID)", token: ana)
        #expect(refused.status == 404)
        #expect(refused.errorName == "NOT_FOUND")
        try await h.expect(200, .get, "/v1/me", token: bo)
        let unknown = await h.send(.delete, "/v1/me/sessions/\(SessionStore.newPublicID())", token: ana)
        #expect(unknown.status == 404)
        #expect(
            unknown.text.replacingOccurrences(of: #""request_id":"[^"]*""#, with: "", options: .regularExpression)
                == refused.text.replacingOccurrences(of: #""request_id":"[^"]*""#, with: "", options: .regularExpression))

        let phoneID = try #require(try await sessions(h, token: anaPhone).first { $0["current"] as? Bool == true }?["id"] as? String)
        try await h.expect(204, .delete, "/v1/me/sessions/\(phoneID)", token: ana)
        #expect(await h.send(.get, "/v1/me", token: anaPhone).status == 401)
        try await h.expect(200, .get, "/v1/me", token: ana)
        #expect(await h.send(.delete, "/v1/me/sessions/\(phoneID)", token: ana).status == 404)
        // The revocation is one batch on the system topic: no client feed carries it.
        let rows = try h.database.readSync { db in
            try db.query("SELECT event, topic, kind, op, entity_id, document, reason, actor FROM change_log WHERE kind = 'session'")
        }
        #expect(rows.count == 1)
        #expect(rows.first?.string("event") == "sessions_revoked")
        #expect(rows.first?.string("topic") == "system")
        #expect(rows.first?.string("op") == "removed")
        #expect(rows.first?.string("entity_id") == phoneID)
        #expect(rows.first?.string("document") == nil)
        #expect(rows.first?.string("reason") == "signed_out")
        // Deleting the caller's own session signs it out, like logout.
        let anaID = try #require(try await sessions(h, token: ana).first?["id"] as? String)
        try await h.expect(204, .delete, "/v1/me/sessions/\(anaID)", token: ana)
        #expect(await h.send(.get, "/v1/me", token: ana).status == 401)
    }

    @Test("revoke-others ends every other session of the caller, keeps the caller's, leaves other users alone")
    func revokeOthers() async throws {
        let h = try AppHarness()
        let (ana, _) = try await h.register("ana@example.com")
        let (bo, _) = try await h.register("bo@example.com")
        let others = [try await signIn(h, "ana@example.com"), try await signIn(h, "ana@example.com")]
        let reply = try await h.expect(200, .post, "/v1/me/sessions/revoke-others", token: ana)
        #expect(reply.json["revoked"] as? Int == 2)
        for token in others { #expect(await h.send(.get, "/v1/me", token: token).status == 401) }
        try await h.expect(200, .get, "/v1/me", token: ana)
        try await h.expect(200, .get, "/v1/me", token: bo)
        #expect(try await sessions(h, token: ana).count == 1)
        // Nothing left to revoke: 0, and no change-log batch.
        let before = try h.database.readSync { db in try ChangeLog.latestSeq(on: db) }
        #expect(try await h.expect(200, .post, "/v1/me/sessions/revoke-others", token: ana).json["revoked"] as? Int == 0)
        #expect(try h.database.readSync { db in try ChangeLog.latestSeq(on: db) } == before)
    }

    @Test("logout is a sessions_revoked batch too (reason logged_out): every instance's feed closes its sockets")
    func logoutBatch() async throws {
        let h = try AppHarness()
        let (ana, _) = try await h.register("ana@example.com")
        let id = try #require(try await sessions(h, token: ana).first?["id"] as? String)
        try await h.expect(204, .post, "/v1/auth/logout", token: ana)
        let rows = try h.database.readSync { db in
            try db.query("SELECT event, topic, entity_id, reason, actor FROM change_log WHERE kind = 'session'")
        }
        #expect(rows.map { $0.string("entity_id") } == [id])
        #expect(rows.first?.string("reason") == "logged_out")
        #expect(rows.first?.string("topic") == "system")
    }

    @Test("with the write budget spent (say, by a thief), the owner can still sign sessions out and change the password")
    func exemptFromWriteBudget() async throws {
        let h = try AppHarness(writeBudget: WriteBudget(writesPerMinute: 1, burst: 1, bytesPerHour: 0))
        let (ana, _) = try await h.register("ana@example.com")
        let thief = try await signIn(h, "ana@example.com")
        try await h.expect(200, .patch, "/v1/me", json: #"{"display_name":"Pwned"}"#, token: thief)
        #expect(await h.send(.patch, "/v1/me", json: #"{"display_name":"Ana"}"#, token: ana).status == 429)
        let thiefID = try #require(try await sessions(h, token: thief).first { $0["current"] as? Bool == true }?["id"] as? String)
        try await h.expect(204, .delete, "/v1/me/sessions/\(thiefID)", token: ana)
        try await h.expect(200, .post, "/v1/me/sessions/revoke-others", token: ana)
        try await h.expect(
            200, .post, "/v1/me/password", json: #"{"current_password":"correct horse","new_password":"battery staple"}"#,
            token: ana)
        #expect(await h.send(.get, "/v1/me", token: thief).status == 401)
    }

    @Test("a full hashing pool: the password change answers 503 and gives the attempt back (no failure counted)")
    func changePasswordSaturated() async throws {
        let hashing = WorkerPool(width: 1, maxQueued: 1)
        let h = try AppHarness(hashing: hashing)
        let (ana, _) = try await h.register("ana@example.com")
        let gate = DispatchSemaphore(value: 0)
        let blockers = (0..<2).map { _ in Task { try await hashing.run { gate.wait() } } }
        #expect(await eventually(timeout: LoopbackClient.hangBound) { hashing.pendingJobs == 2 })
        let refused = await h.send(
            .post, "/v1/me/password", json: #"{"current_password":"correct horse","new_password":"battery staple"}"#,
            token: ana)
        #expect(refused.status == 503, "\(refused.text)")
        #expect(refused.header("Retry-After") != nil)
        let failures = try h.database.readSync { db in try db.scalar("SELECT count(*) FROM login_failures") }
        #expect(failures == .integer(0))
        for _ in blockers { gate.signal() }
        for blocker in blockers { _ = try await blocker.value }
        // Nothing changed: the old password still works.
        #expect(await h.login("ana@example.com").status == 200)
    }

    @Test("a reset confirm whose token cannot succeed spends no hashing: 400 even with the pool full")
    func resetConfirmLooksUpFirst() async throws {
        let hashing = WorkerPool(width: 1, maxQueued: 1)
        let h = try AppHarness(hashing: hashing)
        let gate = DispatchSemaphore(value: 0)
        let blockers = (0..<2).map { _ in Task { try await hashing.run { gate.wait() } } }
        #expect(await eventually(timeout: LoopbackClient.hangBound) { hashing.pendingJobs == 2 })
        let token = String(repeating: "A", count: 43)
        let refused = await h.send(
            .post, "/v1/auth/password-reset/confirm", json: #"{"token":"\#(token)","password":"a new password"}"#)
        #expect(refused.status == 400 && refused.errorName == "TOKEN_INVALID", "\(refused.text)")
        #expect(hashing.pendingJobs == 2, "nothing more was queued")
        for _ in blockers { gate.signal() }
        for blocker in blockers { _ = try await blocker.value }
    }

    @Test("a session's hourly touch is a concurrent write: it runs while another instance holds a concurrent write open (PostgreSQL)")
    func touchRunsBesideConcurrentWrites() async throws {
        let h = try AppHarness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let (_, benID) = try await h.register("ben@example.com", name: "Ben")
        // Another instance's write of Ben's, his row locked, not committed (on SQLite it would hold the
        // one writer: nothing runs beside it there).
        let other = try h.openAnotherHandle()
        defer { other.close() }
        let held =
            h.database.dialect == .postgres
            ? try await HeldWrite(on: other) { db in
                _ = try db.query("SELECT 1 AS one FROM users WHERE id = ?1" + db.forUpdate, [.text(benID)])
            } : nil
        h.clock.advance(by: SessionStore.touchIntervalMilliseconds)
        let now = h.clock.nowMilliseconds()
        let me = Task { await h.send(.get, "/v1/me", token: ana) }
        /// The session's and the account's rows as the touch leaves them.
        @Sendable func touched() -> Bool {
            let row = try? h.database.readSync { db in
                try db.queryOne(
                    """
                    SELECT s.last_used_ms AS used, u.last_seen_ms AS seen FROM sessions s JOIN users u ON u.id = s.user_id
                    WHERE u.id = ?1
                    """, [.text(anaID)])
            }
            return row?.int("used") == now && row?.int("seen") == now
        }
        // An `.immediate` touch would wait for the held write (the writer lock is exclusive for it).
        #expect(await eventually(touched), "touched while the other instance's write is open")
        try await held?.commit()
        let reply = await me.value
        #expect(reply.status == 200 && reply.json["last_seen_at"] as? String == Timestamp(milliseconds: now).description)
    }

    @Test("a revoked session's devices are dropped, as at logout")
    func revokedSessionDevices() async throws {
        let h = try AppHarness()
        let (ana, _) = try await h.register("ana@example.com")
        let phone = try await signIn(h, "ana@example.com")
        try await h.expect(201, .put, "/v1/me/devices/phone-1", json: DeviceTests.apns(), token: phone)
        try await h.expect(200, .post, "/v1/me/sessions/revoke-others", token: ana)
        let count = try h.database.readSync { db in try db.scalar("SELECT count(*) FROM devices") }
        #expect(count == .integer(0))
    }

    @Test("password change: wrong current → 401 INVALID_CREDENTIALS; weak new → 422; success keeps the caller, ends the rest")
    func changePassword() async throws {
        let h = try AppHarness()
        let (ana, _) = try await h.register("ana@example.com")
        let phone = try await signIn(h, "ana@example.com")
        let wrong = await h.send(
            .post, "/v1/me/password", json: #"{"current_password":"not it","new_password":"battery staple"}"#, token: ana)
        #expect(wrong.status == 401)
        #expect(wrong.errorName == "INVALID_CREDENTIALS")
        let weak = await h.send(
            .post, "/v1/me/password", json: #"{"current_password":"correct horse","new_password":"short"}"#, token: ana)
        #expect(weak.status == 422, "\(weak.text)")
        // Neither refusal changed anything.
        try await h.expect(200, .get, "/v1/me", token: phone)
        let changed = try await h.expect(
            200, .post, "/v1/me/password", json: #"{"current_password":"correct horse","new_password":"battery staple"}"#,
            token: ana)
        #expect(changed.json["revoked"] as? Int == 1)
        #expect(await h.send(.get, "/v1/me", token: phone).status == 401)
        try await h.expect(200, .get, "/v1/me", token: ana)
        #expect(await h.login("ana@example.com").status == 401)
        #expect(await h.login("ana@example.com", password: "battery staple").status == 200)
        let reasons = try h.database.readSync { db in
            try db.query("SELECT reason, actor FROM change_log WHERE kind = 'session'")
        }
        #expect(reasons.map { $0.string("reason") } == ["password_changed"])
        // The old password no longer counts as current.
        let stale = await h.send(
            .post, "/v1/me/password", json: #"{"current_password":"correct horse","new_password":"third one!"}"#, token: ana)
        #expect(stale.status == 401)
    }

    @Test("wrong current passwords spend the login budget: the 11th attempt from one network is 429, login too")
    func changePasswordRateLimit() async throws {
        let h = try AppHarness()
        let (ana, _) = try await h.register("ana@example.com")
        for i in 1...10 {
            let reply = await h.send(
                .post, "/v1/me/password", json: #"{"current_password":"guess \#(i)","new_password":"battery staple"}"#,
                token: ana, remoteAddress: "198.51.100.7")
            #expect(reply.status == 401, "\(reply.text)")
        }
        let refused = await h.send(
            .post, "/v1/me/password", json: #"{"current_password":"correct horse","new_password":"battery staple"}"#,
            token: ana, remoteAddress: "198.51.100.7")
        #expect(refused.status == 429)
        #expect(refused.errorName == "RATE_LIMITED")
        #expect(refused.header("Retry-After") != nil)
        #expect(await h.login("ana@example.com", from: "198.51.100.7").status == 429)
        // Once the window has passed the right password works, and the password did not change meanwhile.
        h.clock.advance(by: 15 * 60 * 1000 + 1)
        try await h.expect(
            200, .post, "/v1/me/password", json: #"{"current_password":"correct horse","new_password":"battery staple"}"#,
            token: ana)
    }

    @Test("address change: wrong passwords spend the login budget; the 11th guess, right or not, is 429 with no scrypt")
    func changeEmailRateLimit() async throws {
        let h = try AppHarness()
        let (ana, _) = try await h.register("ana@example.com")
        for i in 1...10 {
            let reply = await h.send(
                .put, "/v1/me/email", json: #"{"email":"new@example.com","password":"guess \#(i)"}"#, token: ana,
                remoteAddress: "198.51.100.7")
            #expect(reply.status == 401, "\(reply.text)")
            #expect(reply.errorName == "INVALID_CREDENTIALS")
        }
        let refused = await h.send(
            .put, "/v1/me/email", json: #"{"email":"new@example.com","password":"correct horse"}"#, token: ana,
            remoteAddress: "198.51.100.7")
        #expect(refused.status == 429)
        #expect(refused.errorName == "RATE_LIMITED")
        #expect(refused.header("Retry-After") != nil)
        #expect(await h.login("ana@example.com", from: "198.51.100.7").status == 429, "one budget with sign-in")
        let tokens = try h.database.readSync { db in try db.scalar("SELECT count(*) FROM email_tokens WHERE email = 'new@example.com'") }
        #expect(tokens == .integer(0), "no link was issued for the new address")
        // Once the window has passed the right password works, and it clears this network's failures.
        h.clock.advance(by: 15 * 60 * 1000 + 1)
        let changed = await h.send(
            .put, "/v1/me/email", json: #"{"email":"new@example.com","password":"correct horse"}"#, token: ana,
            remoteAddress: "198.51.100.7")
        #expect(changed.status == 202, "\(changed.text)")
        let left = try h.database.readSync { db in
            try db.scalar("SELECT count(*) FROM login_failures WHERE subject LIKE '%ana@example.com%'")
        }
        #expect(left == .integer(10), "the account's own failures stay (per-account window); its network's are cleared")
    }

    // MARK: - Realtime

    func serve(_ h: AppHarness) throws -> (HTTPServer, Int) {
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.loopCount = 2
        let server = HTTPServer(configuration: configuration, responder: h.app)
        return (server, try server.start())
    }

    /// Two sockets of `f.member` on the group topic: `doomed` on a second session (returned with
    /// its token), `survivor` on the member's first.
    func twoSockets(_ f: GroupFixture, port: Int) async throws -> (
        doomed: RealtimeTests.Feed, doomedToken: String, survivor: RealtimeTests.Feed
    ) {
        let token = try await signIn(f.h, f.member.email)
        let topic = "group:\(f.groupID)"
        let doomed = try await RealtimeTests.subscribed(port: port, token: token, topic: topic)
        let survivor = try await RealtimeTests.subscribed(port: port, token: f.member.token, topic: topic)
        return (doomed, token, survivor)
    }

    /// The survivor still receives the group's changes.
    func expectAlive(_ survivor: RealtimeTests.Feed, _ f: GroupFixture) async throws {
        try await f.h.expect(
            200, .patch, "/v1/groups/\(f.groupID)/members/\(f.admin.id)", json: #"{"role":"member"}"#, token: f.owner.token)
        let change = try await blocking { try survivor.next(RealtimeTests.type("change", "group:\(f.groupID)")) }
        #expect(change["topic"] as? String == "group:\(f.groupID)")
    }

    @Test("DELETE /v1/me/sessions/{id} closes that session's sockets 4003; the caller's stay")
    func revokeClosesSocket() async throws {
        let f = try await GroupFixture.make()
        let (server, port) = try serve(f.h)
        defer { server.shutdown() }
        let (doomed, doomedToken, survivor) = try await twoSockets(f, port: port)
        defer { survivor.close() }
        let id = try #require(try await sessions(f.h, token: doomedToken).first { $0["current"] as? Bool == true }?["id"] as? String)
        try await f.h.expect(204, .delete, "/v1/me/sessions/\(id)", token: f.member.token)
        #expect(try await blocking { try doomed.closeCode() } == 4003)
        try await expectAlive(survivor, f)
    }

    @Test("a password change closes the other sessions' sockets 4003; the caller's stays")
    func passwordChangeClosesSockets() async throws {
        let f = try await GroupFixture.make()
        let (server, port) = try serve(f.h)
        defer { server.shutdown() }
        let (doomed, _, survivor) = try await twoSockets(f, port: port)
        defer { survivor.close() }
        try await f.h.expect(
            200, .post, "/v1/me/password", json: #"{"current_password":"correct horse","new_password":"battery staple"}"#,
            token: f.member.token)
        #expect(try await blocking { try doomed.closeCode() } == 4003)
        try await expectAlive(survivor, f)
    }

    @Test("a revocation written by another process (chronir-admin) reaches the live server's sockets: 4003")
    func crossProcessRevocation() async throws {
        let f = try await GroupFixture.make()
        let (server, port) = try serve(f.h)
        defer { server.shutdown() }
        let topic = "group:\(f.groupID)"
        let feed = try await RealtimeTests.subscribed(port: port, token: f.member.token, topic: topic)
        defer { feed.close() }
        let other = try f.h.openAnotherHandle()
        defer { other.close() }
        let now = f.h.clock.nowMilliseconds()
        let revoked = try other.writeSync { db in
            try SessionStore.revokeAll(
                userID: f.member.id, keeping: nil, actor: .admin, reason: .operatorRevoked, at: now, on: db)
        }
        #expect(revoked == 1)
        #expect(try await blocking { try feed.closeCode() } == 4003)
        #expect(await f.h.send(.get, "/v1/me", token: f.member.token).status == 401)
    }
}
