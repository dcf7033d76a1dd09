import Domain
import Foundation
import TestSupport
import Testing
import Wire

@testable import App

@Suite("Lists — limit and opaque cursor (groups, my invitations, a group's invitations)", .serialized)
struct GroupListPagingTests {
    @Test("GET /v1/groups pages by limit and cursor without repeats or gaps")
    func groups() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let ana = try await h.register("ana@example.com")
        var ids: [String] = []
        for i in 0..<5 {
            ids.append(try await h.createGroup(token: ana.token, name: "G\(i)"))
            if i % 2 == 0 { h.clock.advance(by: 1) }  // some share a created time: the id breaks ties
        }
        var seen: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            let target = "/v1/groups?limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")
            let reply = try await h.expect(200, .get, target, token: ana.token)
            let groups = try #require(reply.json["groups"] as? [[String: Any]])
            #expect(groups.count <= 2)
            seen += groups.compactMap { $0["id"] as? String }
            cursor = reply.json["next_cursor"] as? String
            pages += 1
        } while cursor != nil && pages < 10
        #expect(pages == 3)
        #expect(Set(seen) == Set(ids))
        #expect(seen.count == 5)
        let all = try await h.expect(200, .get, "/v1/groups", token: ana.token)
        #expect(all.json["next_cursor"] is NSNull)
        #expect((all.json["groups"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == seen)
    }

    @Test(
        "bad limit or cursor is 422 naming it",
        arguments: [
            ("limit=0", "limit"), ("limit=101", "limit"), ("limit=x", "limit"), ("cursor=%%%", "cursor"),
            ("cursor=bm9wZQ", "cursor"),
        ])
    func invalid(query: String, field: String) async throws {
        let h = try AppHarness()
        let ana = try await h.register("ana@example.com")
        for path in ["/v1/groups", "/v1/invitations"] {
            let reply = await h.send(.get, "\(path)?\(query)", token: ana.token)
            #expect(reply.status == 422)
            #expect(reply.errorField == field)
        }
        #expect(await h.send(.get, "/v1/groups?limit=100", token: ana.token).status == 200)
    }

    @Test("invitation lists page newest first")
    func invitations() async throws {
        let f = try await GroupFixture.make()
        var ids: [String] = []
        for _ in 0..<3 {
            let reply = try await f.h.expect(
                201, .post, "/v1/groups/\(f.groupID)/invitations", json: #"{"invitee_email":"outsider@example.com"}"#,
                token: f.owner.token)
            ids.append(reply.object("invitation")?["id"] as? String ?? "")
            f.h.clock.advance(by: 1)
        }
        for path in ["/v1/groups/\(f.groupID)/invitations", "/v1/invitations"] {
            let token = path.hasPrefix("/v1/groups") ? f.admin.token : f.outsider.token
            let first = try await f.h.expect(200, .get, "\(path)?limit=2", token: token)
            let cursor = try #require(first.json["next_cursor"] as? String)
            let second = try await f.h.expect(200, .get, "\(path)?limit=2&cursor=\(cursor)", token: token)
            let got = ((first.json["invitations"] as? [[String: Any]] ?? []) + (second.json["invitations"] as? [[String: Any]] ?? []))
                .compactMap { $0["id"] as? String }
            #expect(got == ids.reversed())
            #expect(second.json["next_cursor"] is NSNull)
        }
    }
}
