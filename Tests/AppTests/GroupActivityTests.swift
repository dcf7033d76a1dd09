import Domain
import Foundation
import SQLite
import Storage
import TestSupport
import Testing
import Wire

@testable import App

/// `GET /v1/groups/{id}/activity`: the group's history from the change log, for its members, since
/// they joined (docs/api.md#group-activity).
@Suite("Group activity — change-log history, members only, since joining, paged", .serialized)
struct GroupActivityTests {
    /// The events of one page, newest first, and its `next_before`.
    static func page(_ f: SharedAlarmFixture, _ token: String, query: String = "") async throws -> ([[String: Any]], Int?) {
        let reply = try await f.h.expect(200, .get, "\(f.g)/activity\(query)", token: token)
        return (reply.json["events"] as? [[String: Any]] ?? [], reply.json["next_before"] as? Int)
    }

    static func names(_ events: [[String: Any]]) -> [String] { events.compactMap { $0["event"] as? String } }

    @Test("a member reads the group's events newest first, in the realtime change shape, answers and codes left out")
    func history() async throws {
        let f = try await SharedAlarmFixture.make(members: 2)
        let h = f.h
        let alarm = try await f.createAlarm()
        let alarmID = try #require(alarm["id"] as? String)
        h.clock.advance(by: 1000)
        _ = try await h.expect(200, .patch, "\(f.g)/alarms/\(alarmID)", json: #"{"title":"Feed the dog"}"#, token: f.owner.token)
        #expect(await f.answer(alarmID, by: f.members[0]).status == 201)
        _ = try await h.inviteCode(f.groupID, token: f.owner.token)
        _ = try await h.expect(200, .patch, f.g, json: #"{"name":"Flat 3B"}"#, token: f.owner.token)
        _ = try await h.expect(
            200, .patch, "\(f.g)/members/\(f.members[1].id)", json: #"{"role":"admin"}"#, token: f.owner.token)
        try await h.expect(204, .delete, "\(f.g)/alarms/\(alarmID)", token: f.owner.token)

        let (events, next) = try await Self.page(f, f.owner.token)
        #expect(next == nil)
        #expect(
            Self.names(events) == [
                "shared_alarm_deleted", "role_changed", "group_updated", "shared_alarm_updated", "shared_alarm_created",
                "member_joined", "member_joined",
            ])
        let renamed = try #require(events.first { $0["event"] as? String == "group_updated" })
        let changes = try #require(renamed["changes"] as? [[String: Any]])
        #expect(changes.first?["kind"] as? String == "group")
        #expect(changes.first?["op"] as? String == "modified")
        #expect((changes.first?["doc"] as? [String: Any])?["name"] as? String == "Flat 3B")
        #expect(renamed["actor"] as? String == "user:\(f.owner.id)")
        #expect(Timestamp.parse(renamed["at"] as? String ?? "") == h.clock.nowMilliseconds())
        let seqs = events.compactMap { $0["seq"] as? Int }
        #expect(seqs == seqs.sorted(by: >))
        // Every member reads the same; what the group topic carries is theirs anyway.
        let (memberEvents, _) = try await Self.page(f, f.members[0].token)
        #expect(Self.names(memberEvents) == Self.names(events))
    }

    @Test("an edit says what changed; a deleted alarm's line keeps its title")
    func whatChanged() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let id = try #require(try await f.createAlarm()["id"] as? String)
        try await f.h.expect(
            200, .patch, "\(f.g)/alarms/\(id)",
            json: #"{"assigned_to_uids":["\#(f.members[0].id)"],"times_of_day":[{"hour":18,"minute":30}]}"#,
            token: f.owner.token)
        try await f.h.expect(200, .patch, "\(f.g)/alarms/\(id)", json: #"{"paused_until":null,"is_enabled":false}"#, token: f.owner.token)
        try await f.h.expect(204, .delete, "\(f.g)/alarms/\(id)", token: f.owner.token)
        let (events, _) = try await Self.page(f, f.members[0].token)
        let changes = events.map { (($0["changes"] as? [[String: Any]]) ?? []).first { $0["kind"] as? String == "shared_alarm" } }
        #expect(Self.names(events).prefix(3) == ["shared_alarm_deleted", "shared_alarm_updated", "shared_alarm_updated"])
        #expect(changes[0]?["title"] as? String == "Feed the cat")
        #expect(changes[1]?["changed"] as? [String] == ["is_enabled"])
        #expect(changes[2]?["changed"] as? [String] == ["assigned_to_uids", "times_of_day"])
    }

    @Test("a member reads only from their own (last) join; non-members get 404")
    func sinceJoining() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let h = f.h
        _ = try await f.createAlarm()
        h.clock.advance(by: 1000)
        let late = try await h.register("late@example.com", name: "Late")
        let code = try await h.inviteCode(f.groupID, token: f.owner.token)
        h.clock.advance(by: 1000)
        #expect(await h.join(code, token: late.token).status == 200)
        h.clock.advance(by: 1000)
        _ = try await h.expect(200, .patch, f.g, json: #"{"name":"Later"}"#, token: f.owner.token)
        let (events, _) = try await Self.page(f, late.token)
        #expect(Self.names(events) == ["group_updated", "member_joined"])
        // Left and back: the history starts again at the new join.
        try await h.expect(204, .delete, "\(f.g)/members/\(late.id)", token: late.token)
        #expect(await h.send(.get, "\(f.g)/activity", token: late.token).status == 404)
        h.clock.advance(by: 1000)
        let fresh = try await h.inviteCode(f.groupID, token: f.owner.token)
        h.clock.advance(by: 1000)
        #expect(await h.join(fresh, token: late.token).status == 200)
        let (again, _) = try await Self.page(f, late.token)
        #expect(Self.names(again) == ["member_joined"])
        let outsider = try await h.register("outsider@example.com", name: "Out")
        let refused = await h.send(.get, "\(f.g)/activity", token: outsider.token)
        #expect(refused.status == 404)
        #expect(await h.send(.get, "\(f.g)/activity").status == 401)
    }

    @Test("pages follow next_before without gaps or repeats; a bad limit or before is 422")
    func paging() async throws {
        let f = try await SharedAlarmFixture.make(members: 3)
        let h = f.h
        for i in 0..<4 {
            h.clock.advance(by: 1000)
            _ = try await h.expect(200, .patch, f.g, json: #"{"name":"Name \#(i)"}"#, token: f.owner.token)
        }
        let (all, _) = try await Self.page(f, f.owner.token)
        #expect(all.count == 7)  // 3 joins, 4 renames
        var seen: [Int] = []
        var before: Int?
        var pages = 0
        repeat {
            let (events, next) = try await Self.page(f, f.owner.token, query: "?limit=3" + (before.map { "&before=\($0)" } ?? ""))
            #expect(events.count <= 3)
            seen += events.compactMap { $0["seq"] as? Int }
            before = next
            pages += 1
        } while before != nil && pages < 10
        #expect(pages == 3)
        #expect(seen == all.compactMap { $0["seq"] as? Int })
        for bad in ["?limit=0", "?limit=101", "?before=abc", "?before=-1"] {
            let reply = await h.send(.get, "\(f.g)/activity\(bad)", token: f.owner.token)
            #expect(reply.status == 422, "\(bad)")
        }
    }
}
