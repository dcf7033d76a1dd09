import Domain
import Foundation
import Logging
import Storage
import Store
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// `Idempotency-Key` on signed-in POSTs (docs/apps.md#retries-idempotency-key): a retry gets the first
/// answer without a second write, on any instance; another request under the same key is 422 CA066; the
/// key is claimed in the write's own transaction; keys live 24 hours and the retention sweep purges them.
@Suite("Idempotency-Key — retried POSTs are answered once")
struct IdempotencyKeyTests {
    static let group = #"{"name":"Household"}"#

    func groupCount(_ h: AppHarness) async throws -> Int64 {
        try await h.database.read { db in try db.queryOne("SELECT COUNT(*) AS n FROM groups", [])?.int("n") ?? -1 }
    }

    func keyCount(_ h: AppHarness) async throws -> Int64 {
        try await h.database.read { db in try db.queryOne("SELECT COUNT(*) AS n FROM idempotency_keys", [])?.int("n") ?? -1 }
    }

    @Test("a retried create returns the first answer, marked replayed, and creates one group")
    func replay() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let ana = try await h.register("ana@example.com")
        let key = [("Idempotency-Key", "8e0f6a2c-1b7d-4c51-9a8e-2f3d4c5b6a79")]
        let first = await h.send(.post, "/v1/groups", json: Self.group, token: ana.token, headers: key)
        #expect(first.status == 201)
        #expect(first.header("Idempotent-Replayed") == nil)
        h.clock.advance(by: 5_000)
        let again = await h.send(.post, "/v1/groups", json: Self.group, token: ana.token, headers: key)
        #expect(again.status == 201)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(again.header("Content-Type") == first.header("Content-Type"))
        #expect(again.response.body == first.response.body)
        #expect(try await groupCount(h) == 1)
        // Without the key, the same body creates another group: keys are opt-in.
        #expect(await h.send(.post, "/v1/groups", json: Self.group, token: ana.token).status == 201)
        #expect(try await groupCount(h) == 2)
    }

    @Test("the same key with another body, path or method is 422 IDEMPOTENCY_KEY_REUSED, and nothing is written")
    func reuse() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let ana = try await h.register("ana@example.com")
        let key = [("Idempotency-Key", "k1")]
        #expect(await h.send(.post, "/v1/groups", json: Self.group, token: ana.token, headers: key).status == 201)
        let other = await h.send(.post, "/v1/groups", json: #"{"name":"Office"}"#, token: ana.token, headers: key)
        #expect(other.status == 422)
        #expect(other.errorCode == "CA066")
        #expect(other.errorName == "IDEMPOTENCY_KEY_REUSED")
        let groupID = try #require(
            (try await h.database.read { db in try db.queryOne("SELECT id FROM groups", []) })?.string("id"))
        let rotate = await h.send(.post, "/v1/groups/\(groupID)/invite-code", token: ana.token, headers: key)
        #expect(rotate.errorCode == "CA066")
        #expect(try await groupCount(h) == 1)
        // Keys are per account: Bea's "k1" is her own.
        let bea = try await h.register("bea@example.com")
        #expect(await h.send(.post, "/v1/groups", json: Self.group, token: bea.token, headers: key).status == 201)
        #expect(try await groupCount(h) == 2)
    }

    @Test("a key of 1 and of 255 visible characters is accepted; empty, 256 or a space is 400", arguments: [0, 1, 255, 256, -1])
    func keyLimits(length: Int) async throws {
        let h = try AppHarness(defaultTier: .premium)
        let ana = try await h.register("ana@example.com")
        let key = length < 0 ? "a b" : String(repeating: "k", count: length)
        let reply = await h.send(.post, "/v1/groups", json: Self.group, token: ana.token, headers: [("Idempotency-Key", key)])
        let accepted = length == 1 || length == IdempotencyKey.maxLength
        #expect(reply.status == (accepted ? 201 : 400), "\(reply.text)")
        #expect(try await groupCount(h) == (accepted ? 1 : 0))
        #expect(try await keyCount(h) == (accepted ? 1 : 0))
    }

    @Test("a write that fails claims nothing: the retry runs again; the session touch never carries the claim")
    func claimIsInTheWritesTransaction() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let ana = try await h.register("ana@example.com")
        let bea = try await h.register("bea@example.com")
        let groupID = try await h.createGroup(token: ana.token)
        let key = [("Idempotency-Key", "alarm-1")]
        let alarm = #"{"title":"Rent",\#(SharedAlarmFixture.dailyTen),"completion_rule":"any","assigned_to_uids":[]}"#
        // Bea is no member: the create's transaction throws and rolls back, with the claim.
        let refused = await h.send(.post, "/v1/groups/\(groupID)/alarms", json: alarm, token: bea.token, headers: key)
        #expect(refused.status == 404 || refused.status == 403, "\(refused.text)")
        #expect(try await keyCount(h) == 0)
        // A session touch (past its interval) is a write too, but not the request's: a create that fails
        // validation after it claims nothing.
        h.clock.advance(by: SessionStore.touchIntervalMilliseconds + 1)
        let invalid = await h.send(.post, "/v1/groups", json: #"{"name":""}"#, token: ana.token, headers: key)
        #expect(invalid.status == 422)
        #expect(try await keyCount(h) == 0)
        let created = await h.send(.post, "/v1/groups/\(groupID)/alarms", json: alarm, token: ana.token, headers: key)
        #expect(created.status == 201, "\(created.text)")
        #expect(try await keyCount(h) == 1)
    }

    @Test("another instance on the same database answers the retry from the stored answer")
    func anotherInstance() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let ana = try await h.register("ana@example.com")
        let key = [("Idempotency-Key", "across")]
        let first = await h.send(.post, "/v1/groups", json: Self.group, token: ana.token, headers: key)
        #expect(first.status == 201)
        let other = try h.openAnotherHandle()
        defer { other.close() }
        var quiet = Logger(label: "test")
        quiet.logLevel = .critical
        let services = Services(
            config: h.app.services.config, database: other, clock: h.clock, workers: WorkerPool(width: 1), logger: quiet,
            secret: h.app.services.secret)
        let second = Application(services: services, accessLog: nil)
        let reply = await AppHarness.respond(second, .post, "/v1/groups", json: Self.group, token: ana.token, headers: key)
        #expect(reply.status == 201)
        #expect(reply.header("Idempotent-Replayed") == "true")
        #expect(reply.response.body == first.response.body)
        #expect(try await groupCount(h) == 1)
    }

    @Test("two requests with one key at once: one write; the other replays or is told to wait")
    func concurrent() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let ana = try await h.register("ana@example.com")
        let key = [("Idempotency-Key", "race")]
        async let a = h.send(.post, "/v1/groups", json: Self.group, token: ana.token, headers: key)
        async let b = h.send(.post, "/v1/groups", json: Self.group, token: ana.token, headers: key)
        let statuses = await [a.status, b.status].sorted()
        #expect(statuses == [201, 201] || statuses == [201, 409], "\(statuses)")
        #expect(try await groupCount(h) == 1)
    }

    @Test("an error answered after the write committed is stored too: a refused join code is not counted twice")
    func storedError() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let ana = try await h.register("ana@example.com")
        let key = [("Idempotency-Key", "join-1")]
        let wrong = #"{"code":"ZZZZ-ZZZZ"}"#
        let first = await h.send(.post, "/v1/join", json: wrong, token: ana.token, headers: key)
        #expect(first.status == 404)
        let attempts = try await h.database.read { db in
            try db.queryOne("SELECT COUNT(*) AS n FROM invite_attempts", [])?.int("n") ?? -1
        }
        let again = await h.send(.post, "/v1/join", json: wrong, token: ana.token, headers: key)
        #expect(again.status == 404)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(again.errorCode == first.errorCode)
        let after = try await h.database.read { db in
            try db.queryOne("SELECT COUNT(*) AS n FROM invite_attempts", [])?.int("n") ?? -1
        }
        #expect(after == attempts)
    }

    @Test("an upload retried with its key stores one attachment")
    func upload() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let alarm = try await f.createAlarm()
        let path = "\(f.g)/alarms/\(try #require(alarm["id"] as? String))/attachments"
        let jpeg = SampleMedia.jpeg(width: 64, height: 48, gps: false)
        let key = [("Idempotency-Key", "photo-1")]
        let first = await AppHarness.respond(
            f.h.app, .post, path, body: jpeg, contentType: "image/jpeg", token: f.owner.token, headers: key)
        #expect(first.status == 201, "\(first.text)")
        let again = await AppHarness.respond(
            f.h.app, .post, path, body: jpeg, contentType: "image/jpeg", token: f.owner.token, headers: key)
        #expect(again.status == 201)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(again.response.body == first.response.body)
        let rows = try await f.h.database.read { db in try db.queryOne("SELECT COUNT(*) AS n FROM attachments", [])?.int("n") ?? -1 }
        #expect(rows == 1)
    }

    @Test("after 24 hours the key is free again, and the retention sweep deletes it; account deletion deletes its keys")
    func lifetime() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let ana = try await h.register("ana@example.com")
        let key = [("Idempotency-Key", "daily")]
        #expect(await h.send(.post, "/v1/groups", json: Self.group, token: ana.token, headers: key).status == 201)
        h.clock.advance(by: IdempotencyStore.lifetimeMilliseconds - 1)
        #expect(await h.send(.post, "/v1/groups", json: Self.group, token: ana.token, headers: key).header("Idempotent-Replayed") == "true")
        #expect(try await groupCount(h) == 1)
        h.clock.advance(by: 1)
        let fresh = await h.send(.post, "/v1/groups", json: Self.group, token: ana.token, headers: key)
        #expect(fresh.status == 201)
        #expect(fresh.header("Idempotent-Replayed") == nil)
        #expect(try await groupCount(h) == 2)
        #expect(try await keyCount(h) == 1)
        h.clock.advance(by: IdempotencyStore.lifetimeMilliseconds + 1)
        let now = h.clock.nowMilliseconds()
        let report = try await h.database.write { db in try Retention.sweep(at: now, on: db) }
        #expect(report.idempotencyKeys == 1)
        #expect(try await keyCount(h) == 0)

        #expect(await h.send(.post, "/v1/groups", json: Self.group, token: ana.token, headers: key).status == 201)
        #expect(try await keyCount(h) == 1)
        #expect(await h.send(.delete, "/v1/me", token: ana.token).status == 204)
        #expect(try await keyCount(h) == 0)
    }
}

extension AppHarness {
    /// One request to `app` (another instance's Application on the same database, or this one).
    static func respond(
        _ app: Application, _ method: HTTPMethod, _ target: String, json: String? = nil, body: [UInt8]? = nil,
        contentType: String? = nil, token: String? = nil, headers extra: [(String, String)] = []
    ) async -> Reply {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "test")
        if let type = contentType ?? (json != nil ? "application/json" : nil) { headers.add(name: "Content-Type", value: type) }
        if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in extra { headers.add(name: name, value: value) }
        let request = HTTPRequest(
            head: HTTPRequestHead(method: method, target: target, headers: headers), body: body ?? Array((json ?? "").utf8))
        let response = await withCheckedContinuation { (continuation: CheckedContinuation<HTTPResponse, Never>) in
            app.respond(
                to: request, context: RequestContext(remoteAddress: "127.0.0.1", connectionID: 1),
                sink: ResponseSink { continuation.resume(returning: $0) })
        }
        return Reply(response: response)
    }
}
