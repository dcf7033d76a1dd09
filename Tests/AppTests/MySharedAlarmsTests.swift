import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// `GET /v1/me/shared-alarms`: my alarms across my groups in next-fire order — only live
/// memberships of live groups, the `state` and `assigned=me` filters at the injected clock, and paging.
@Suite("My shared alarms — the cross-group \"what do I have to do\" list")
struct MySharedAlarmsTests {
    typealias F = SharedAlarmFixture

    static let hour: Int64 = 3_600_000
    /// 2026-02-06T10:00:00Z.
    static let firstFire: Int64 = 1_770_372_000_000

    /// Group 1 (the fixture's: owner, m0, m1, m2): `ten` daily 10:00 for m0, `eleven` daily 11:00 for m1.
    /// Group 2 (m0's own, m0 and m2): `tenThirty` daily 10:30 for everyone.
    struct World {
        let f: F
        let ten: String
        let eleven: String
        let tenThirty: String
        let group2: String
    }

    static func world() async throws -> World {
        let f = try await F.make(members: 3)
        let (m0, m1, m2) = (f.members[0], f.members[1], f.members[2])
        let ten = try #require(try await f.createAlarm(assignees: [m0])["id"] as? String)
        let eleven = try #require(
            try await f.h.expect(
                201, .post, "\(f.g)/alarms", json: alarm("Eleven", hour: 11, minute: 0, assignees: [m1.id]),
                token: f.owner.token
            ).json["id"] as? String)
        let group2 = try await f.h.createGroup(token: m0.token, name: "Second")
        let code = try await f.h.inviteCode(group2, token: m0.token)
        #expect(await f.h.join(code, token: m2.token).status == 200)
        let tenThirty = try #require(
            try await f.h.expect(
                201, .post, "/v1/groups/\(group2)/alarms", json: alarm("Half past", hour: 10, minute: 30, assignees: []),
                token: m0.token
            ).json["id"] as? String)
        return World(f: f, ten: ten, eleven: eleven, tenThirty: tenThirty, group2: group2)
    }

    static func alarm(_ title: String, hour: Int, minute: Int, assignees: [String]) -> String {
        let uids = assignees.map { "\"\($0)\"" }.joined(separator: ",")
        return #"""
            {"title":"\#(title)","schedule":{"type":"custom_days","interval_days":1,"start_date":"2026-02-01"},\#
            "times_of_day":[{"hour":\#(hour),"minute":\#(minute)}],"timezone":"UTC","assigned_to_uids":[\#(uids)]}
            """#
    }

    /// The ids of my list (every page), and the first reply.
    func ids(_ f: F, _ query: String = "", token: String) async throws -> [String] {
        let reply = try await f.h.expect(200, .get, "/v1/me/shared-alarms\(query)", token: token)
        let alarms = try #require(reply.json["alarms"] as? [[String: Any]])
        return alarms.compactMap { $0["id"] as? String }
    }

    @Test("only my live memberships' groups, in next-fire order; a removed or departed member loses the group at once")
    func authorization() async throws {
        let w = try await Self.world()
        let f = w.f
        let (m0, m1, m2) = (f.members[0], f.members[1], f.members[2])
        #expect(try await ids(f, token: m0.token) == [w.ten, w.tenThirty, w.eleven])
        #expect(try await ids(f, token: m1.token) == [w.ten, w.eleven], "not a member of the second group")
        #expect(try await ids(f, token: f.owner.token) == [w.ten, w.eleven])
        let outsider = try await f.h.register("outsider@example.com", name: "Out")
        #expect(try await ids(f, token: outsider.token).isEmpty)
        #expect(try await ids(f, token: m2.token) == [w.ten, w.tenThirty, w.eleven])
        // Removed from group 1: its alarms leave m0's list with the same request that removed them.
        try await f.h.expect(204, .delete, "\(f.g)/members/\(m0.id)", token: f.owner.token)
        #expect(try await ids(f, token: m0.token) == [w.tenThirty])
        // (`ten` lost its only assignee: today's occurrence is now everyone's, still at 10:00.) m2 leaves
        // group 2; then the group is deleted: gone for everyone.
        #expect(try await ids(f, token: m2.token) == [w.ten, w.tenThirty, w.eleven])
        try await f.h.expect(204, .delete, "/v1/groups/\(w.group2)/members/\(m2.id)", token: m2.token)
        #expect(try await ids(f, token: m2.token) == [w.ten, w.eleven])
        try await f.h.expect(204, .delete, "/v1/groups/\(w.group2)", token: m0.token)
        #expect(try await ids(f, token: m0.token).isEmpty)
        #expect(await f.h.send(.get, "/v1/me/shared-alarms").status == 401)
    }

    @Test("state and assigned=me at the injected clock; a disabled alarm is not listed, a paused one is upcoming")
    func filters() async throws {
        let w = try await Self.world()
        let f = w.f
        let m0 = f.members[0]
        #expect(try await ids(f, "?assigned=me", token: m0.token) == [w.ten, w.tenThirty])
        #expect(try await ids(f, "?state=upcoming", token: m0.token) == [w.ten, w.tenThirty, w.eleven])
        #expect(try await ids(f, "?state=due", token: m0.token).isEmpty)
        #expect(try await ids(f, "?state=overdue", token: m0.token).isEmpty)
        // 10:15: `ten` is due (and overdue: nobody answered); the others are still ahead.
        f.h.clock.set(Self.firstFire + Self.hour / 4)
        #expect(try await ids(f, "?state=due", token: m0.token) == [w.ten])
        #expect(try await ids(f, "?state=overdue&assigned=me", token: m0.token) == [w.ten])
        #expect(try await ids(f, "?state=upcoming", token: m0.token) == [w.tenThirty, w.eleven])
        let listed = try await f.h.expect(200, .get, "/v1/me/shared-alarms?state=due", token: m0.token).json
        let first = try #require((listed["alarms"] as? [[String: Any]])?.first)
        #expect(first["occurrence_state"] as? String == "due")
        // m1 is not assigned to `ten`: due for the group, not for them.
        #expect(try await ids(f, "?state=due&assigned=me", token: f.members[1].token).isEmpty)
        #expect(try await ids(f, "?state=due", token: f.members[1].token) == [w.ten])
        // m0 answers: `ten` moves to tomorrow, out of due and overdue.
        #expect(await f.answer(w.ten, by: m0).status == 201)
        #expect(try await ids(f, "?state=overdue", token: m0.token).isEmpty)
        #expect(try await ids(f, "?state=upcoming", token: m0.token) == [w.tenThirty, w.eleven, w.ten])
        // After the grace (24 h) and before the sweep: overdue, no longer due.
        f.h.clock.set(Self.firstFire + Self.hour / 2 + 24 * Self.hour)
        // (`ten`'s next occurrence, today at 10:00, is due and unanswered too.)
        #expect(try await ids(f, "?state=overdue&assigned=me", token: m0.token) == [w.tenThirty, w.ten])
        #expect(try await ids(f, "?state=due&assigned=me", token: m0.token) == [w.ten])
        // Disabled: gone; paused: upcoming at the first fire after the pause.
        try await f.h.expect(200, .patch, "/v1/groups/\(w.group2)/alarms/\(w.tenThirty)", json: #"{"is_enabled":false}"#, token: m0.token)
        #expect(try await ids(f, token: m0.token) == [w.eleven, w.ten])
        let pause = Timestamp(milliseconds: Self.firstFire + 72 * Self.hour).description
        try await f.h.expect(200, .patch, "\(f.g)/alarms/\(w.ten)", json: #"{"paused_until":"\#(pause)"}"#, token: f.owner.token)
        let paused = try await f.h.expect(200, .get, "/v1/me/shared-alarms?state=upcoming&assigned=me", token: m0.token).json
        let item = try #require((paused["alarms"] as? [[String: Any]])?.first)
        #expect(item["id"] as? String == w.ten && item["next_fire_at"] as? String == pause)
        // Unknown filter values name the parameter.
        for (query, field) in [("?state=late", "state"), ("?assigned=you", "assigned"), ("?limit=0", "limit")] {
            let bad = await f.h.send(.get, "/v1/me/shared-alarms\(query)", token: m0.token)
            #expect(bad.status == 422 && bad.errorField == field, "\(query)")
        }
    }

    @Test("pages of one walk the list in next-fire order without repeats; the last has next_cursor null")
    func paging() async throws {
        let w = try await Self.world()
        let f = w.f
        var seen: [String] = []
        var cursor = ""
        for _ in 0..<5 {
            let page = try await f.h.expect(
                200, .get, "/v1/me/shared-alarms?limit=1&cursor=\(cursor)", token: f.members[0].token
            ).json
            seen += (page["alarms"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            guard let next = page["next_cursor"] as? String else { break }
            cursor = next
        }
        #expect(seen == [w.ten, w.tenThirty, w.eleven])
        let two = try await f.h.expect(200, .get, "/v1/me/shared-alarms?limit=2", token: f.members[0].token).json
        #expect((two["alarms"] as? [Any])?.count == 2 && two["next_cursor"] is String)
    }
}
