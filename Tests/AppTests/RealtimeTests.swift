import Domain
import Foundation
import Logging
import Realtime
import SQLite
import Storage
import Store
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// `GET /v1/realtime` behind the real transport on 127.0.0.1: blocking client I/O runs on Dispatch
/// threads; every wait is bounded (10 s) and the assertions are about messages, not timings.
@Suite("Realtime feed — WebSocket end to end")
struct RealtimeTests {
    func serve(_ h: AppHarness) throws -> (HTTPServer, Int) {
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.loopCount = 2
        let server = HTTPServer(configuration: configuration, responder: h.app)
        return (server, try server.start())
    }

    enum Failure: Error { case closed(UInt16?), unexpected(String) }

    /// One decoded server message (a JSON object), passed between threads read-only.
    struct Message: @unchecked Sendable {
        let object: [String: Any]
        subscript(_ key: String) -> Any? { object[key] }
    }

    /// A feed client: JSON text messages in, close codes out.
    final class Feed: @unchecked Sendable {
        let ws: WebSocketTestClient
        /// Set when permessage-deflate was offered: compressed (RSV1) messages are inflated.
        let inflater: PerMessageDeflateDecompressor?
        /// Whether each text message read so far arrived compressed, in order.
        private(set) var compressed: [Bool] = []
        /// The raw JSON text of each text message read so far, in order.
        private(set) var texts: [String] = []
        init(port: Int, token: String?, origin: String? = nil, deflate: Bool = false, cookie: String? = nil) throws {
            var headers: [(String, String)] = []
            if let token { headers.append(("Authorization", "Bearer \(token)")) }
            if let cookie { headers.append(("Cookie", cookie)) }
            if let origin { headers.append(("Origin", origin)) }
            ws = try WebSocketTestClient(
                port: port, path: "/v1/realtime", extensions: deflate ? "permessage-deflate" : nil, extraHeaders: headers,
                timeout: LoopbackClient.hangBound)
            inflater = deflate ? PerMessageDeflateDecompressor(windowBits: 15, noContextTakeover: true) : nil
        }
        var status: Int { ws.handshake.status }
        func send(_ json: String) throws { try ws.send(text: json) }
        /// The next text message matching `predicate` (others are skipped); throws on close.
        func next(_ predicate: ([String: Any]) -> Bool = { _ in true }) throws -> Message {
            while true {
                let frame = try ws.readFrame(timeout: LoopbackClient.hangBound)
                if frame.opcode == .close { throw Failure.closed(frame.closeCode) }
                guard frame.opcode == .text else { continue }
                var payload = frame.payload
                if frame.rsv1 {
                    guard let inflater else { throw Failure.unexpected("compressed frame without deflate") }
                    payload = []
                    try inflater.decompress(frame.payload, final: true, into: &payload, maxOutput: 1 << 20)
                }
                compressed.append(frame.rsv1)
                texts.append(String(decoding: payload, as: UTF8.self))
                guard let object = (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any]
                else { continue }
                if predicate(object) { return Message(object: object) }
            }
        }
        /// The close code the server sends (text messages before it are skipped, and kept in `texts`
        /// when uncompressed).
        func closeCode() throws -> UInt16? {
            while true {
                let frame = try ws.readFrame(timeout: LoopbackClient.hangBound)
                if frame.opcode == .close { return frame.closeCode }
                if frame.opcode == .text && !frame.rsv1 { texts.append(String(decoding: frame.payload, as: UTF8.self)) }
            }
        }
        func close() { ws.connection.close() }
    }

    /// A socket signed in with `token` and subscribed to `topic`, its snapshot read.
    static func subscribed(port: Int, token: String, topic: String) async throws -> Feed {
        try await blocking {
            let feed = try Feed(port: port, token: token)
            try feed.send(#"{"op":"subscribe","topic":"\#(topic)"}"#)
            _ = try feed.next(Self.type("snapshot", topic))
            return feed
        }
    }

    static func type(_ type: String, _ topic: String? = nil) -> ([String: Any]) -> Bool {
        { m in m["type"] as? String == type && (topic == nil || m["topic"] as? String == topic) }
    }

    /// How a realtime socket's authentication ended.
    enum AuthOutcome: Equatable, Sendable {
        /// The `user` snapshot arrived.
        case authenticated
        /// The socket was closed with this code.
        case closed(UInt16?)
        /// The upgrade was answered without a 101.
        case refused(status: Int, code: String?, retryAfter: String?)
    }

    /// Opens a socket authenticated with `token` — in the upgrade's `Authorization` header, or by an
    /// `auth` message when `inBand` — and subscribes to `user`.
    static func authenticate(port: Int, token: String, inBand: Bool) throws -> AuthOutcome {
        let feed = try RealtimeTests.Feed(port: port, token: inBand ? nil : token)
        defer { feed.close() }
        guard feed.status == 101 else {
            let body = (try? JSONSerialization.jsonObject(with: Data(feed.ws.handshake.body))) as? [String: Any]
            return .refused(
                status: feed.status, code: (body?["error"] as? [String: Any])?["code"] as? String,
                retryAfter: feed.ws.handshakeHeader("Retry-After"))
        }
        if inBand { try feed.send(#"{"op":"auth","token":"\#(token)"}"#) }
        try feed.send(#"{"op":"subscribe","topic":"user"}"#)
        do {
            _ = try feed.next(RealtimeTests.type("snapshot", "user"))
            return .authenticated
        } catch RealtimeTests.Failure.closed(let code) {
            return .closed(code)
        }
    }

    @Test("bearer upgrade: user and group snapshots, then an HTTP mutation arrives as a change")
    func snapshotsAndChanges() async throws {
        let f = try await GroupFixture.make()
        let (server, port) = try serve(f.h)
        defer { server.shutdown() }
        let (feed, user, group) = try await blocking {
            let feed = try Feed(port: port, token: f.owner.token)
            guard feed.status == 101 else { throw Failure.unexpected("status \(feed.status)") }
            try feed.send(#"{"op":"subscribe","topic":"user"}"#)
            let user = try feed.next(Self.type("snapshot", "user"))
            try feed.send(#"{"op":"subscribe","topic":"group:\#(f.groupID)"}"#)
            let group = try feed.next(Self.type("snapshot", "group:\(f.groupID)"))
            return (feed, user, group)
        }
        defer { feed.close() }
        let userData = user["data"] as? [String: Any] ?? [:]
        #expect((userData["user"] as? [String: Any])?["id"] as? String == f.owner.id)
        #expect((userData["groups"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [f.groupID])
        #expect(userData["invitations"] as? [Any] != nil)
        let groupData = group["data"] as? [String: Any] ?? [:]
        #expect((groupData["group"] as? [String: Any])?["id"] as? String == f.groupID)
        let memberIDs = Set((groupData["members"] as? [[String: Any]] ?? []).compactMap { $0["user_id"] as? String })
        #expect(memberIDs.contains(f.member.id) && !memberIDs.contains(f.removed.id))
        #expect(groupData["alarms"] as? [Any] != nil)
        #expect(groupData["recent_completions"] as? [Any] != nil)

        try await f.h.expect(
            200, .patch, "/v1/groups/\(f.groupID)/members/\(f.member.id)", json: #"{"role":"admin"}"#,
            token: f.owner.token)
        let change = try await blocking { try feed.next(Self.type("change", "group:\(f.groupID)")) }
        let rows = change["changes"] as? [[String: Any]] ?? []
        let doc =
            rows.first { ($0["doc"] as? [String: Any])?["user_id"] as? String == f.member.id }?["doc"]
            as? [String: Any]
        #expect(doc?["role"] as? String == "admin")
    }

    @Test("a topic whose read fails (the database, not access) gets error unavailable, logged; other topics still work")
    func readFailureIsUnavailable() async throws {
        let log = CapturedLog()
        let h = try AppHarness(defaultTier: .premium, logger: Logger(label: "test") { _ in log })
        let (token, _) = try await h.register("ana@example.com")
        let groupID = try await h.createGroup(token: token)
        let (server, port) = try serve(h)
        defer { server.shutdown() }
        let topic = "group:\(groupID)"
        // Only the group snapshot reads this table: its read fails, the user snapshot's does not.
        _ = try h.database.writeSync { db in try db.run("ALTER TABLE shared_completions RENAME TO shared_completions_away") }
        let feed = try await blocking { try Feed(port: port, token: token) }
        defer { feed.close() }
        let (error, user) = try await blocking {
            try feed.send(#"{"op":"subscribe","topic":"\#(topic)","id":"g"}"#)
            let error = try feed.next(Self.type("error"))
            try feed.send(#"{"op":"subscribe","topic":"user"}"#)
            return (error, try feed.next(Self.type("snapshot", "user")))
        }
        #expect(error["code"] as? String == "unavailable")
        #expect(error["topic"] as? String == topic)
        #expect(error["id"] as? String == "g")
        #expect(user["seq"] != nil)
        #expect(log.lines.contains { $0.contains("realtime: topic read failed") && $0.contains(topic) })

        _ = try h.database.writeSync { db in try db.run("ALTER TABLE shared_completions_away RENAME TO shared_completions") }
        let snapshot = try await blocking {
            try feed.send(#"{"op":"subscribe","topic":"\#(topic)"}"#)
            return try feed.next(Self.type("snapshot", topic))
        }
        #expect((snapshot["data"] as? [String: Any])?["recent_completions"] as? [Any] != nil, "the client may subscribe again")
    }

    @Test("the change log unreadable: logged once, nothing lost — after it reads again the next change arrives")
    func ingestFailureIsLoggedAndRecovers() async throws {
        let log = CapturedLog()
        let h = try AppHarness(defaultTier: .premium, logger: Logger(label: "test") { _ in log })
        let (token, _) = try await h.register("ana@example.com")
        let groupID = try await h.createGroup(token: token)
        let (server, port) = try serve(h)
        defer { server.shutdown() }
        let topic = "group:\(groupID)"
        let feed = try await Self.subscribed(port: port, token: token, topic: topic)
        defer { feed.close() }
        let failed = "realtime: reading the change log failed"
        // The rename is a commit: the feed reads the log at once, and fails.
        _ = try h.database.writeSync { db in try db.run("ALTER TABLE change_log RENAME TO change_log_away") }
        #expect(await eventually { log.lines.contains { $0.contains(failed) } })
        _ = try h.database.writeSync { db in try db.run("ALTER TABLE change_log_away RENAME TO change_log") }
        #expect(await eventually { log.lines.contains { $0.contains("realtime: reading the change log works again") } })
        #expect(log.lines.count { $0.contains(failed) } == 1, "one line per outage, not one per poll")

        _ = try await h.inviteCode(groupID, token: token)
        let change = try await blocking { try feed.next(Self.type("change", topic)) }
        #expect(change["event"] as? String == "invite_code_created")
    }

    @Test("another process's commit of more rows than one read takes: every batch arrives without a further commit")
    func largeForeignCommitIsReadToTheEnd() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let (token, _) = try await h.register("ana@example.com")
        let groupID = try await h.createGroup(token: token)
        let (server, port) = try serve(h)
        defer { server.shutdown() }
        let topic = "group:\(groupID)"
        let feed = try await Self.subscribed(port: port, token: token, topic: topic)
        defer { feed.close() }
        // Two rows per batch: one read (`ingestReadRows` rows) holds fewer batches than rows, and the
        // rest must be read at once, not when the next commit happens to come.
        let batches = RealtimeFeed.ingestReadRows * 3 / 4
        let other = try h.openAnotherHandle()
        defer { other.close() }
        let now = h.clock.nowMilliseconds()
        try other.writeSync { db in
            let change = Change(
                topic: topic, kind: .group, op: .modified, entityID: groupID, document: Array(#"{"n":1}"#.utf8))
            for _ in 0..<batches {
                try ChangeLog.append([change, change], event: .groupUpdated, actor: .system, at: now, on: db)
            }
        }
        let last = try other.readSync { try ChangeLog.latestSeq(on: $0) }
        let final = try await blocking {
            try feed.next { Self.type("change", topic)($0) && ($0["seq"] as? NSNumber)?.int64Value == last }
        }
        #expect((final["changes"] as? [Any])?.count == 2)
    }

    @Test("a non-member's group subscribe gets error not_found; removal revokes the subscriber")
    func accessAndRevocation() async throws {
        let f = try await GroupFixture.make()
        let (server, port) = try serve(f.h)
        defer { server.shutdown() }
        let topic = "group:\(f.groupID)"
        let error = try await blocking {
            let feed = try Feed(port: port, token: f.outsider.token)
            defer { feed.close() }
            try feed.send(#"{"op":"subscribe","topic":"\#(topic)","id":7}"#)
            return try feed.next(Self.type("error"))
        }
        #expect(error["code"] as? String == "not_found")
        #expect(error["topic"] as? String == topic)

        let feed = try await blocking {
            let feed = try Feed(port: port, token: f.other.token)
            try feed.send(#"{"op":"subscribe","topic":"\#(topic)"}"#)
            _ = try feed.next(Self.type("snapshot", topic))
            return feed
        }
        defer { feed.close() }
        try await f.h.expect(204, .delete, "/v1/groups/\(f.groupID)/members/\(f.other.id)", token: f.owner.token)
        let revoked = try await blocking { try feed.next(Self.type("revoked", topic)) }
        #expect(revoked["topic"] as? String == topic)
    }

    @Test("first-message auth; a bad token or a bad auth message closes with 4001")
    func firstMessageAuth() async throws {
        let h = try AppHarness()
        let (token, id) = try await h.register("rt@example.com")
        let (server, port) = try serve(h)
        defer { server.shutdown() }
        let snapshot = try await blocking {
            let feed = try Feed(port: port, token: nil)
            defer { feed.close() }
            try feed.send(#"{"op":"auth","token":"\#(token)"}"#)
            try feed.send(#"{"op":"subscribe","topic":"user"}"#)
            return try feed.next(Self.type("snapshot", "user"))
        }
        #expect(((snapshot["data"] as? [String: Any])?["user"] as? [String: Any])?["id"] as? String == id)
        let codes = try await blocking {
            let bad = try Feed(port: port, token: String(repeating: "A", count: 43))
            defer { bad.close() }
            let badAuth = try Feed(port: port, token: nil)
            defer { badAuth.close() }
            try badAuth.send(#"{"op":"auth","token":"nope"}"#)
            return [bad.status == 101 ? try bad.closeCode() : nil, try badAuth.closeCode()]
        }
        #expect(codes == [4001, 4001])
    }

    @Test(
        """
        a session check that cannot read the database (closed: storage unavailable): the bearer upgrade answers 503 CA027 with \
        Retry-After, an in-band auth closes 1013 — never 4001
        """
    )
    func tokenCheckStorageFailure() async throws {
        let h = try AppHarness()
        let (token, _) = try await h.register("rt@example.com")
        let (server, port) = try serve(h)
        defer { server.shutdown() }
        // The feed starts with its first socket (reading the log's position): start it while open.
        #expect(try await blocking { try Self.authenticate(port: port, token: token, inBand: true) } == .authenticated)
        // Every later read throws `StorageError.closed`, a storage failure like an outage's (the
        // PostgreSQL outage itself, stopped and started: PostgresOutageTests.realtimeAuthDuringOutage).
        h.database.close()
        let (bearer, inBand, malformed) = try await blocking {
            (
                try Self.authenticate(port: port, token: token, inBand: false),
                try Self.authenticate(port: port, token: token, inBand: true),
                try Self.authenticate(port: port, token: "nope", inBand: true)
            )
        }
        #expect(bearer == .refused(status: 503, code: "CA027", retryAfter: "5"))
        #expect(inBand == .closed(CloseCode.tryAgainLater.rawValue))
        #expect(malformed == .closed(CloseCode.authenticationFailed.rawValue))  // decided without the database
    }

    @Test("a foreign Origin is refused with 403; the public base URL's origin is accepted")
    func origins() async throws {
        let h = try AppHarness()
        let (server, port) = try serve(h)
        defer { server.shutdown() }
        let statuses = try await blocking {
            let foreign = try Feed(port: port, token: nil, origin: "https://evil.example")
            defer { foreign.close() }
            let same = try Feed(port: port, token: nil, origin: "http://127.0.0.1:8080")
            defer { same.close() }
            return [foreign.status, same.status]
        }
        #expect(statuses == [403, 101])
        #expect(RealtimeRoutes.originAllowed(nil, config: AppConfiguration()))
        var config = AppConfiguration()
        config.allowedOrigins = ["https://app.example.com"]
        #expect(RealtimeRoutes.originAllowed("https://APP.example.com:443", config: config))
        #expect(!RealtimeRoutes.originAllowed("http://127.0.0.1:8080", config: config))
    }

    @Test("changes written straight to the database (as chronir-admin does) reach subscribers; suspension closes 4003")
    func crossProcessChanges() async throws {
        let f = try await GroupFixture.make()
        let (server, port) = try serve(f.h)
        defer { server.shutdown() }
        let topic = "group:\(f.groupID)"
        let feed = try await blocking {
            let feed = try Feed(port: port, token: f.member.token)
            try feed.send(#"{"op":"subscribe","topic":"\#(topic)"}"#)
            _ = try feed.next(Self.type("snapshot", topic))
            return feed
        }
        defer { feed.close() }
        // A second database handle, like another process (SQLite) or instance (PostgreSQL).
        let other = try f.h.openAnotherHandle()
        defer { other.close() }
        let now = f.h.clock.nowMilliseconds()
        try other.writeSync { db in
            _ = try GroupStore.removeMember(groupID: f.groupID, actorID: f.owner.id, targetID: f.other.id, at: now, on: db)
        }
        let change = try await blocking { try feed.next(Self.type("change", topic)) }
        #expect(change["topic"] as? String == topic)
        try other.writeSync { db in
            _ = try AccountStore.setStatus(
                userID: f.member.id, status: .suspended, actor: .admin, reason: nil, at: now, on: db)
        }
        let code = try await blocking { try feed.closeCode() }
        #expect(code == 4003)
    }

    @Test("a password reset closes every session's sockets at once, with logout's code (4003)")
    func passwordResetClosesSessions() async throws {
        let f = try await GroupFixture.make()
        let (server, port) = try serve(f.h)
        defer { server.shutdown() }
        let topic = "group:\(f.groupID)"
        let second = try await f.h.expect(
            200, .post, "/v1/auth/login", json: #"{"email":"\#(f.member.email)","password":"correct horse"}"#)
        let secondToken = try #require(second.json["token"] as? String)
        let feeds = try await blocking {
            try [f.member.token, secondToken].map { token in
                let feed = try Feed(port: port, token: token)
                try feed.send(#"{"op":"subscribe","topic":"\#(topic)"}"#)
                _ = try feed.next(Self.type("snapshot", topic))
                return feed
            }
        }
        // What the mailed link carries (the mail itself: MailDeliveryTests.passwordReset).
        let (token, hash) = TokenHashing.generate()
        let (userID, email, now) = (f.member.id, f.member.email, f.h.clock.nowMilliseconds())
        try await f.h.database.write { db in
            try EmailTokens.issue(.passwordReset, tokenHash: hash, userID: userID, email: email, at: now, expiresAt: now + 60_000, on: db)
        }
        try await f.h.expect(
            204, .post, "/v1/auth/password-reset/confirm", json: #"{"token":"\#(token)","password":"a new password"}"#)
        for feed in feeds {
            #expect(try await blocking { try feed.closeCode() } == 4003)
        }
    }

    @Test("logout closes that session's sockets with 4003; another session of the same user stays open")
    func logoutClosesSession() async throws {
        let f = try await GroupFixture.make()
        let (server, port) = try serve(f.h)
        defer { server.shutdown() }
        let topic = "group:\(f.groupID)"
        let second = try await f.h.expect(
            200, .post, "/v1/auth/login", json: #"{"email":"\#(f.member.email)","password":"correct horse"}"#)
        let secondToken = try #require(second.json["token"] as? String)
        let (doomed, survivor) = try await blocking {
            let doomed = try Feed(port: port, token: f.member.token)
            let survivor = try Feed(port: port, token: secondToken)
            for feed in [doomed, survivor] {
                try feed.send(#"{"op":"subscribe","topic":"\#(topic)"}"#)
                _ = try feed.next(Self.type("snapshot", topic))
            }
            return (doomed, survivor)
        }
        defer { survivor.close() }
        try await f.h.expect(204, .post, "/v1/auth/logout", token: f.member.token)
        let code = try await blocking { try doomed.closeCode() }
        #expect(code == 4003)
        // The other session still receives changes.
        try await f.h.expect(
            200, .patch, "/v1/groups/\(f.groupID)/members/\(f.admin.id)", json: #"{"role":"member"}"#,
            token: f.owner.token)
        let change = try await blocking { try survivor.next(Self.type("change", topic)) }
        #expect(change["topic"] as? String == topic)
    }

    @Test("a session that lapses while its socket is open is closed 4001 before the next change reaches it; one used over HTTP stays")
    func lapsedSessionCloses() async throws {
        let f = try await GroupFixture.make()
        let (server, port) = try serve(f.h)
        defer { server.shutdown() }
        let topic = "group:\(f.groupID)"
        let (lapsing, kept) = try await blocking {
            let lapsing = try Feed(port: port, token: f.member.token)
            let kept = try Feed(port: port, token: f.admin.token)
            for feed in [lapsing, kept] {
                try feed.send(#"{"op":"subscribe","topic":"\#(topic)"}"#)
                _ = try feed.next(Self.type("snapshot", topic))
            }
            return (lapsing, kept)
        }
        defer { kept.close() }
        let day: Int64 = 24 * 3600 * 1000
        f.h.clock.advance(by: 29 * day)
        try await f.h.expect(200, .get, "/v1/me", token: f.admin.token)  // slides the admin's session
        f.h.clock.advance(by: 2 * day)
        // The owner's session lapsed too: sign in again and change the group.
        let login = try await f.h.expect(
            200, .post, "/v1/auth/login", json: #"{"email":"\#(f.owner.email)","password":"correct horse"}"#)
        let owner = try #require(login.json["token"] as? String)
        try await f.h.expect(200, .patch, "/v1/groups/\(f.groupID)", json: #"{"name":"After the lapse"}"#, token: owner)
        let (code, sawChange) = try await blocking { () -> (UInt16?, Bool) in
            let code = try lapsing.closeCode()
            return (code, lapsing.texts.contains { $0.contains("After the lapse") })
        }
        #expect(code == 4001)
        #expect(!sawChange)
        let change = try await blocking { try kept.next(Self.type("change", topic)) }
        #expect(change["topic"] as? String == topic)
        let metrics = String(decoding: f.h.app.services.metrics.exposition(), as: UTF8.self)
        #expect(metrics.contains("chronir_realtime_sessions_expired_total 1"))
    }

    @Test("resume with since: the changes after it arrive as change messages, without a new snapshot")
    func resume() async throws {
        let f = try await GroupFixture.make()
        let (server, port) = try serve(f.h)
        defer { server.shutdown() }
        let topic = "group:\(f.groupID)"
        let seq = try await blocking {
            let feed = try Feed(port: port, token: f.member.token)
            defer { feed.close() }
            try feed.send(#"{"op":"subscribe","topic":"\#(topic)"}"#)
            return try feed.next(Self.type("snapshot", topic))["seq"] as? Int ?? -1
        }
        #expect(seq > 0)
        try await f.h.expect(
            200, .patch, "/v1/groups/\(f.groupID)/members/\(f.admin.id)", json: #"{"role":"member"}"#,
            token: f.owner.token)
        let first = try await blocking {
            let feed = try Feed(port: port, token: f.member.token)
            defer { feed.close() }
            try feed.send(#"{"op":"subscribe","topic":"\#(topic)","since":\#(seq)}"#)
            return try feed.next { m in m["type"] as? String == "change" || m["type"] as? String == "snapshot" }
        }
        #expect(first["type"] as? String == "change")
        #expect((first["seq"] as? Int ?? 0) > seq)
    }

    @Test("snapshots name the log epoch; resuming with it replays, with another epoch gets a reset snapshot")
    func epoch() async throws {
        let f = try await GroupFixture.make()
        let (server, port) = try serve(f.h)
        defer { server.shutdown() }
        let topic = "group:\(f.groupID)"
        let stored = try f.h.database.readSync { db in try LogEpoch.current(on: db) }
        #expect(stored.count == 32)
        let first = try await blocking {
            let feed = try Feed(port: port, token: f.member.token)
            defer { feed.close() }
            try feed.send(#"{"op":"subscribe","topic":"\#(topic)"}"#)
            return try feed.next(Self.type("snapshot", topic))
        }
        #expect(first["epoch"] as? String == stored)
        let seq = first["seq"] as? Int ?? -1
        try await f.h.expect(
            200, .patch, "/v1/groups/\(f.groupID)/members/\(f.admin.id)", json: #"{"role":"member"}"#,
            token: f.owner.token)
        let (same, other) = try await blocking {
            let feed = try Feed(port: port, token: f.member.token)
            defer { feed.close() }
            let isAnswer: ([String: Any]) -> Bool = { ["change", "snapshot"].contains($0["type"] as? String ?? "") }
            try feed.send(#"{"op":"subscribe","topic":"\#(topic)","since":\#(seq),"epoch":"\#(stored)"}"#)
            let same = try feed.next(isAnswer)
            try feed.send(#"{"op":"subscribe","topic":"user","since":\#(seq),"epoch":"0123456789abcdef0123456789abcdef"}"#)
            let other = try feed.next(isAnswer)
            return (same, other)
        }
        #expect(same["type"] as? String == "change", "same epoch: the changes after since")
        #expect(other["type"] as? String == "snapshot" && other["reset"] as? Bool == true, "another epoch: reset")
        #expect(other["epoch"] as? String == stored)
    }

    @Test("a resume from before a compaction gets a reset snapshot; one after it replays")
    func resumeAcrossCompaction() async throws {
        let f = try await GroupFixture.make()
        let (server, port) = try serve(f.h)
        defer { server.shutdown() }
        let topic = "group:\(f.groupID)"
        let first = try await blocking {
            let feed = try Feed(port: port, token: f.member.token)
            defer { feed.close() }
            try feed.send(#"{"op":"subscribe","topic":"\#(topic)"}"#)
            return try feed.next(Self.type("snapshot", topic))
        }
        let old = first["seq"] as? Int ?? -1
        try await f.h.expect(200, .patch, "/v1/groups/\(f.groupID)", json: #"{"name":"One"}"#, token: f.owner.token)
        try await f.h.expect(200, .patch, "/v1/groups/\(f.groupID)", json: #"{"name":"One more"}"#, token: f.owner.token)
        let now = f.h.clock.nowMilliseconds()
        // Everything but the newest row goes (minimum 0 still keeps one: seqs are never reused).
        let compacted = try f.h.database.writeSync { db in
            try ChangeLog.compact(
                ChangeLogRetention(windowMilliseconds: 0, minimumRows: 0, minimumRowsPerCompaction: 1), at: now + 1, on: db)
        }
        #expect(compacted.rowsRemoved > 0)
        let kept = try #require(compacted.throughSeq)
        try await f.h.expect(200, .patch, "/v1/groups/\(f.groupID)", json: #"{"name":"Two"}"#, token: f.owner.token)
        func resume(since: Int) async throws -> Message {
            try await blocking {
                let feed = try Feed(port: port, token: f.member.token)
                defer { feed.close() }
                try feed.send(#"{"op":"subscribe","topic":"\#(topic)","since":\#(since)}"#)
                return try feed.next { ["change", "snapshot", "error"].contains($0["type"] as? String ?? "") }
            }
        }
        let stale = try await resume(since: old)
        let fresh = try await resume(since: Int(kept) + 1)
        #expect(stale["type"] as? String == "snapshot" && stale["reset"] as? Bool == true, "\(stale.object)")
        #expect(fresh["type"] as? String == "change")
    }

    /// One change as "seq op id title", the same shape from a realtime message and from the HTTP sync read.
    private static func syncLine(seq: Any?, op: Any?, id: Any?, doc: Any?) -> String {
        let title = (doc as? [String: Any])?["title"] as? String ?? "-"
        return "\(seq as? Int ?? 0) \(op as? String ?? "") \(id as? String ?? "") \(title)"
    }

    @Test("personal alarms: a user-topic resume and GET /v1/me/alarms?since= give the same changes; after compaction both reset")
    func personalAlarmSync() async throws {
        let f = try await GroupFixture.make()
        let (server, port) = try serve(f.h)
        defer { server.shutdown() }
        let start = try await f.h.expect(200, .get, "/v1/me/alarms", token: f.member.token).json["seq"] as? Int ?? -1
        let a = "/v1/me/alarms/0b5c3f6e-8d2a-4c1b-9e7f-1a2b3c4d5e6f"
        let b = "/v1/me/alarms/1c6d4a7f-9e3b-4d2c-8f80-2b3c4d5e6f70"
        try await f.h.expect(201, .put, a, json: PersonalAlarmTests.body("Rent"), token: f.member.token)
        try await f.h.expect(201, .put, b, json: PersonalAlarmTests.body("Filter"), token: f.member.token)
        try await f.h.expect(200, .patch, a, json: #"{"title":"Rent due"}"#, token: f.member.token)
        try await f.h.expect(204, .delete, b, token: f.member.token)
        let http = try await f.h.expect(200, .get, "/v1/me/alarms?since=\(start)", token: f.member.token)
        let overHTTP = (http.json["changes"] as? [[String: Any]] ?? []).map {
            Self.syncLine(seq: $0["seq"], op: $0["op"], id: $0["id"], doc: $0["alarm"])
        }
        #expect(overHTTP.count == 4)
        let overRealtime = try await blocking { () -> [String] in
            let feed = try Feed(port: port, token: f.member.token)
            defer { feed.close() }
            try feed.send(#"{"op":"subscribe","topic":"user","since":\#(start)}"#)
            var seen: [String] = []
            while seen.count < 4 {
                let message = try feed.next(Self.type("change", "user"))
                for change in message["changes"] as? [[String: Any]] ?? [] where change["kind"] as? String == "personal_alarm" {
                    seen.append(Self.syncLine(seq: message["seq"], op: change["op"], id: change["id"], doc: change["doc"]))
                }
            }
            return seen
        }
        #expect(overRealtime == overHTTP)

        // Compaction past the cursor: the HTTP read resets with the live set, as the realtime resume does.
        let now = f.h.clock.nowMilliseconds()
        _ = try f.h.database.writeSync { db in
            try ChangeLog.compact(
                ChangeLogRetention(windowMilliseconds: 0, minimumRows: 0, minimumRowsPerCompaction: 1), at: now + 1, on: db)
        }
        let reset = try await f.h.expect(200, .get, "/v1/me/alarms?since=\(start)", token: f.member.token)
        #expect(reset.json["reset"] as? Bool == true)
        let live = (reset.json["changes"] as? [[String: Any]] ?? []).compactMap { ($0["alarm"] as? [String: Any])?["title"] as? String }
        #expect(live == ["Rent due"])
    }

    @Test("a broadcast is one message for compressed and plain subscribers; removals carry typed reasons only")
    func broadcastAndTypedReasons() async throws {
        let f = try await GroupFixture.make()
        let (server, port) = try serve(f.h)
        defer { server.shutdown() }
        let topic = "group:\(f.groupID)"
        let (plain, deflated) = try await blocking {
            let plain = try Feed(port: port, token: f.member.token)
            let deflated = try Feed(port: port, token: f.admin.token, deflate: true)
            guard deflated.ws.handshakeHeader("Sec-WebSocket-Extensions")?.contains("permessage-deflate") == true else {
                throw Failure.unexpected("permessage-deflate not agreed")
            }
            for feed in [plain, deflated] {
                try feed.send(#"{"op":"subscribe","topic":"\#(topic)"}"#)
                _ = try feed.next(Self.type("snapshot", topic))
            }
            return (plain, deflated)
        }
        defer {
            plain.close()
            deflated.close()
        }
        // An operator removes a member with a private note: members see why in the typed vocabulary only.
        let now = f.h.clock.nowMilliseconds()
        try f.h.database.writeSync { db in
            _ = try GroupStore.adminRemoveMember(
                groupID: f.groupID, userID: f.other.id, reason: "private operator note", at: now, on: db)
        }
        let (a, b) = try await blocking {
            (try plain.next(Self.type("change", topic)), try deflated.next(Self.type("change", topic)))
        }
        #expect(a["seq"] as? Int == b["seq"] as? Int)
        #expect(plain.texts.last == deflated.texts.last, "the same message text for both")
        #expect(deflated.compressed.last == true && plain.compressed.last == false)
        #expect(plain.texts.last?.contains("private operator note") == false)
        let changes = a["changes"] as? [[String: Any]] ?? []
        let member = changes.first { $0["kind"] as? String == "member" }
        #expect(member?["reason"] as? String == "access_revoked")
        #expect(changes.allSatisfy { ($0["reason"] as? String).map { RemovalReason(rawValue: $0) != nil } ?? true })
    }

    @Test("metrics: subscriptions, revocations, replayed resumes and fan-out latency are recorded by the feed")
    func realtimeMetrics() async throws {
        let f = try await GroupFixture.make()
        let (server, port) = try serve(f.h)
        defer { server.shutdown() }
        let topic = "group:\(f.groupID)"
        let (owner, other) = try await blocking {
            let owner = try Feed(port: port, token: f.owner.token)
            let other = try Feed(port: port, token: f.other.token)
            for feed in [owner, other] {
                try feed.send(#"{"op":"subscribe","topic":"\#(topic)"}"#)
                _ = try feed.next(Self.type("snapshot", topic))
            }
            return (owner, other)
        }
        defer {
            owner.close()
            other.close()
        }
        let seq = try f.h.database.readSync { try ChangeLog.latestSeq(on: $0) }
        try await f.h.expect(204, .delete, "/v1/groups/\(f.groupID)/members/\(f.other.id)", token: f.owner.token)
        _ = try await blocking { try other.next(Self.type("revoked", topic)) }
        _ = try await blocking { try owner.next(Self.type("change", topic)) }
        _ = try await blocking {
            let resumed = try Feed(port: port, token: f.member.token)
            defer { resumed.close() }
            try resumed.send(#"{"op":"subscribe","topic":"\#(topic)","since":\#(seq)}"#)
            return try resumed.next(Self.type("change", topic))
        }
        let metrics = f.h.app.services.metrics
        @Sendable func value(_ series: String) -> Double? {
            let text = String(decoding: metrics.exposition(), as: UTF8.self)
            return text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last!) }
        }
        // Counters are recorded before the messages they count are sent.
        #expect(value("chronir_realtime_revocations_total") == 1)
        #expect(value(#"chronir_realtime_resumes_total{outcome="replayed"}"#) == 1)
        #expect((value("chronir_realtime_subscriptions") ?? 0) >= 1)
        // Fan-out latency is commit → frame written, so it is recorded after the write: poll.
        #expect(await eventually { (value("chronir_realtime_fanout_latency_seconds_count") ?? 0) >= 1 })
    }
}
