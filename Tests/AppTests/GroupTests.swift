import Domain
import Foundation
import SQLite
import Storage
import TestSupport
import Testing
import Wire

@testable import App

@Suite("Groups — CRUD, roles, transfer, removal and leave, change log", .serialized)
struct GroupTests {
    func document(_ row: Row) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data((row.string("document") ?? "").utf8)) as? [String: Any])
    }

    @Test("create: premium caller becomes owner; one group_created batch with whole documents")
    func create() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let (token, id) = try await h.register("ana@example.com")
        let reply = await h.send(
            .post, "/v1/groups",
            json: ##"{"name":" Household ","description":"Chores","icon_name":"house","color_tag":"#a1b2c3"}"##,
            token: token)
        #expect(reply.status == 201)
        let group = try #require(reply.object("group"))
        let groupID = try #require(group["id"] as? String)
        #expect(group["name"] as? String == "Household")
        #expect(group["color_tag"] as? String == "#A1B2C3")
        #expect(group["owner_id"] as? String == id)
        #expect(group["max_members"] as? Int == 10)
        #expect(group["member_count"] as? Int == 1)
        #expect(group["version"] as? Int == 1)
        #expect(group["created_at"] as? String == "2026-02-06T09:00:00.000Z")
        let members = try #require(reply.json["members"] as? [[String: Any]])
        #expect(members.count == 1)
        #expect(members[0]["role"] as? String == "owner")
        #expect(members[0]["status"] as? String == "active")
        #expect(members[0]["display_name"] as? String == "Ana")

        let batch = try h.lastBatch()
        #expect(batch.allSatisfy { $0.string("event") == "group_created" && $0.int("batch") == batch[0].int("seq") })
        #expect(
            batch.map { "\($0.string("topic")!) \($0.string("kind")!) \($0.string("op")!)" } == [
                "group:\(groupID) group added", "group:\(groupID) member added", "user:\(id) group added",
            ])
        #expect(try document(batch[0])["name"] as? String == "Household")
        #expect(try document(batch[0])["description"] as? String == "Chores")
        #expect(try document(batch[1])["role"] as? String == "owner")

        let list = await h.send(.get, "/v1/groups", token: token)
        #expect((list.json["groups"] as? [[String: Any]])?.map { $0["id"] as? String } == [groupID])
    }

    @Test("a new display name reaches every group the member is in, live, in the profile's batch")
    func renamePropagates() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        let second = try await h.createGroup(token: f.owner.token, name: "Second")
        #expect(await h.join(try await h.inviteCode(second, token: f.owner.token), token: f.member.token).status == 200)
        try await h.expect(200, .patch, "/v1/me", json: #"{"display_name":"Bea B."}"#, token: f.member.token)
        let batch = try h.lastBatch()
        #expect(batch.first?.string("event") == "user_updated")
        let memberRows = batch.filter { $0.string("kind") == "member" }
        #expect(Set(memberRows.compactMap { $0.string("topic") }) == ["group:\(f.groupID)", "group:\(second)", "user:\(f.member.id)"])
        for group in [f.groupID, second] {
            let detail = try await h.expect(200, .get, "/v1/groups/\(group)", token: f.owner.token).json
            let me = (detail["members"] as? [[String: Any]])?.first { $0["user_id"] as? String == f.member.id }
            #expect(me?["display_name"] as? String == "Bea B.")
        }
        // Unchanged name: no member rows; a removed member's old record keeps its name.
        try await h.expect(200, .patch, "/v1/me", json: #"{"display_name":"Bea B."}"#, token: f.member.token)
        #expect(try h.lastBatch().allSatisfy { $0.string("kind") == "user" })
    }

    @Test("create needs premium: 403 TIER_REQUIRED, nothing written")
    func tierRequired() async throws {
        let h = try AppHarness()
        let (token, _) = try await h.register("free@example.com")
        let reply = await h.send(.post, "/v1/groups", json: #"{"name":"Home"}"#, token: token)
        #expect(reply.status == 403)
        #expect(reply.errorName == "TIER_REQUIRED")
        #expect(try h.database.readSync { try $0.scalar("SELECT count(*) FROM groups") } == .integer(0))
    }

    @Test(
        "invalid bodies are 422 naming the field, and nothing is written",
        arguments: [
            (#"{"name":""}"#, "name"),
            (#"{"description":"x"}"#, "name"),
            (#"{"name":12}"#, "name"),
            (#"{"name":"ok","color_tag":"red"}"#, "color_tag"),
            (##"{"name":"ok","color_tag":"#12345G"}"##, "color_tag"),
            (#"{"name":"ok","icon_name":"Not An Icon"}"#, "icon_name"),
            (#"{"name":"ok","owner_id":"x"}"#, "owner_id"),
            (#"{"name":"ok","description":7}"#, "description"),
        ])
    func invalidCreate(body: String, field: String) async throws {
        let h = try AppHarness(defaultTier: .premium)
        let (token, _) = try await h.register("a@example.com")
        let reply = await h.send(.post, "/v1/groups", json: body, token: token)
        #expect(reply.status == 422)
        #expect(reply.errorName == "VALIDATION_FAILED")
        #expect(reply.errorField == field)
        #expect(try h.database.readSync { try $0.scalar("SELECT count(*) FROM groups") } == .integer(0))
    }

    @Test("name ≤ 100 and description ≤ 500 characters: at the limit and one over")
    func lengthLimits() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let (token, _) = try await h.register("a@example.com")
        let name100 = String(repeating: "é", count: 100)
        #expect(await h.send(.post, "/v1/groups", json: #"{"name":"\#(name100)"}"#, token: token).status == 201)
        #expect(await h.send(.post, "/v1/groups", json: #"{"name":"\#(name100)x"}"#, token: token).errorField == "name")
        let d500 = String(repeating: "d", count: 500)
        #expect(
            await h.send(.post, "/v1/groups", json: #"{"name":"n","description":"\#(d500)"}"#, token: token).status == 201)
        #expect(
            await h.send(.post, "/v1/groups", json: #"{"name":"n","description":"\#(d500)d"}"#, token: token)
                .errorField == "description")
    }

    @Test("PATCH bumps version; a stale version is 409 SYNC_CONFLICT with the current document")
    func patchVersioning() async throws {
        let f = try await GroupFixture.make()
        let g = "/v1/groups/\(f.groupID)"
        let current = await f.h.send(.get, g, token: f.admin.token)
        let version = try #require(current.object("group")?["version"] as? Int)
        let ok = await f.h.send(
            .patch, g, json: #"{"name":"Home","description":null,"version":\#(version)}"#, token: f.admin.token)
        #expect(ok.status == 200)
        #expect(ok.json["name"] as? String == "Home")
        #expect(ok.json["version"] as? Int == version + 1)
        #expect(ok.json["description"] is NSNull)
        let batch = try f.h.lastBatch()
        #expect(batch.map { $0.string("event") } == ["group_updated"])
        #expect(try document(batch[0])["name"] as? String == "Home")

        let stale = await f.h.send(.patch, g, json: #"{"name":"Late","version":\#(version)}"#, token: f.owner.token)
        #expect(stale.status == 409)
        #expect(stale.errorName == "SYNC_CONFLICT")
        let currentDoc = (stale.object("error")?["current"] as? [String: Any])
        #expect(currentDoc?["name"] as? String == "Home")
        #expect(currentDoc?["version"] as? Int == version + 1)
        #expect(await f.h.send(.patch, g, json: #"{"nmae":"typo"}"#, token: f.owner.token).errorField == "nmae")
        // A patch that changes nothing writes nothing.
        let seq = try f.h.database.readSync { try $0.scalar("SELECT MAX(seq) FROM change_log") }
        let same = await f.h.send(.patch, g, json: #"{"name":"Home"}"#, token: f.owner.token)
        #expect(same.json["version"] as? Int == version + 1)
        #expect(try f.h.database.readSync { try $0.scalar("SELECT MAX(seq) FROM change_log") } == seq)
    }

    @Test("roles: the owner promotes and demotes; nobody else changes roles; the owner's role only by transfer")
    func roles() async throws {
        let f = try await GroupFixture.make()
        let m = "/v1/groups/\(f.groupID)/members"
        let promoted = await f.h.send(.patch, "\(m)/\(f.member.id)", json: #"{"role":"admin"}"#, token: f.owner.token)
        #expect(promoted.status == 200)
        #expect(promoted.json["role"] as? String == "admin")
        let batch = try f.h.lastBatch()
        #expect(
            batch.map { "\($0.string("event")!) \($0.string("topic")!) \($0.string("kind")!)" } == [
                "role_changed group:\(f.groupID) member", "role_changed user:\(f.member.id) member",
            ])
        #expect(await f.h.send(.patch, "\(m)/\(f.member.id)", json: #"{"role":"member"}"#, token: f.owner.token).status == 200)
        #expect(await f.h.send(.patch, "\(m)/\(f.other.id)", json: #"{"role":"admin"}"#, token: f.admin.token).status == 403)
        #expect(await f.h.send(.patch, "\(m)/\(f.owner.id)", json: #"{"role":"admin"}"#, token: f.owner.token).status == 422)
        #expect(await f.h.send(.patch, "\(m)/\(f.member.id)", json: #"{"role":"owner"}"#, token: f.owner.token).status == 422)
        #expect(await f.h.send(.patch, "\(m)/\(f.member.id)", json: #"{"role":"boss"}"#, token: f.owner.token).errorField == "role")
        #expect(await f.h.send(.patch, "\(m)/\(f.removed.id)", json: #"{"role":"admin"}"#, token: f.owner.token).status == 404)
    }

    @Test("transfer: to an active member only; the old owner becomes admin; one batch")
    func transfer() async throws {
        let f = try await GroupFixture.make()
        let g = "/v1/groups/\(f.groupID)"
        #expect(await f.h.send(.post, "\(g)/transfer", json: #"{"user_id":"\#(f.removed.id)"}"#, token: f.owner.token).status == 404)
        let reply = await f.h.send(.post, "\(g)/transfer", json: #"{"user_id":"\#(f.member.id)"}"#, token: f.owner.token)
        #expect(reply.status == 200)
        #expect(reply.object("group")?["owner_id"] as? String == f.member.id)
        let roles = Dictionary(
            uniqueKeysWithValues: (reply.json["members"] as? [[String: Any]] ?? []).map {
                ($0["user_id"] as? String ?? "", $0["role"] as? String ?? "")
            })
        #expect(roles[f.member.id] == "owner")
        #expect(roles[f.owner.id] == "admin")
        let batch = try f.h.lastBatch()
        #expect(Set(batch.map { $0.string("event") }) == ["ownership_transferred"])
        #expect(batch.count == 5)
        // The old owner can now leave; the new one cannot.
        #expect(await f.h.send(.delete, "\(g)/members/\(f.owner.id)", token: f.owner.token).status == 204)
        let stuck = await f.h.send(.delete, "\(g)/members/\(f.member.id)", token: f.member.token)
        #expect(stuck.status == 409)
        #expect(stuck.errorName == "OWNER_MUST_TRANSFER")
    }

    @Test("removal and leave: statuses, who removed, access ends, admins remove plain members only")
    func removal() async throws {
        let f = try await GroupFixture.make()
        let g = "/v1/groups/\(f.groupID)"
        #expect(await f.h.send(.delete, "\(g)/members/\(f.owner.id)", token: f.admin.token).status == 403)
        #expect(await f.h.send(.delete, "\(g)/members/\(f.other.id)", token: f.admin.token).status == 204)
        var batch = try f.h.lastBatch()
        #expect(
            batch.map { "\($0.string("event")!) \($0.string("topic")!) \($0.string("kind")!) \($0.string("op")!)" } == [
                "member_removed group:\(f.groupID) member modified", "member_removed group:\(f.groupID) group modified",
                "member_removed user:\(f.other.id) group removed",
            ])
        let removedDoc = try document(batch[0])
        #expect(removedDoc["status"] as? String == "removed")
        #expect(removedDoc["removed_by"] as? String == f.admin.id)
        #expect(removedDoc["removed_at"] as? String != nil)
        #expect(batch[2].string("reason") == "removed")
        #expect(await f.h.send(.get, g, token: f.other.token).status == 404)

        #expect(await f.h.send(.delete, "\(g)/members/\(f.member.id)", token: f.member.token).status == 204)
        batch = try f.h.lastBatch()
        #expect(batch.first?.string("event") == "member_left")
        #expect(try document(batch[0])["status"] as? String == "left")
        #expect(try document(batch[0])["removed_by"] is NSNull)
        #expect(await f.h.send(.get, "/v1/groups", token: f.member.token).json["groups"].map { ($0 as? [Any])?.count } == 0)
        let detail = await f.h.send(.get, g, token: f.owner.token)
        #expect(detail.object("group")?["member_count"] as? Int == 2)
        #expect((detail.json["members"] as? [Any])?.count == 2)
    }

    @Test("delete: soft, owner only, every member's access ends at once")
    func delete() async throws {
        let f = try await GroupFixture.make()
        let g = "/v1/groups/\(f.groupID)"
        #expect(await f.h.send(.delete, g, token: f.owner.token).status == 204)
        let batch = try f.h.lastBatch()
        #expect(Set(batch.map { $0.string("event") }) == ["group_deleted"])
        #expect(batch[0].string("topic") == "group:\(f.groupID)")
        #expect(batch[0].string("op") == "removed")
        #expect(
            Set(batch.dropFirst().compactMap { $0.string("topic") })
                == Set(
                    [f.owner, f.admin, f.member, f.other].map { "user:\($0.id)" }))
        for account in [f.owner, f.admin, f.member] {
            #expect(await f.h.send(.get, g, token: account.token).status == 404)
            #expect(await f.h.send(.get, "/v1/groups", token: account.token).json["groups"].map { ($0 as? [Any])?.count } == 0)
        }
        #expect(await f.h.join(f.code, token: f.outsider.token).errorName == "INVITE_CODE_INVALID")
        #expect(try f.h.database.readSync { try $0.scalar("SELECT count(*) FROM groups WHERE deleted_ms IS NOT NULL") } == .integer(1))
    }

    @Test("malformed ids are plain 404s")
    func malformedIDs() async throws {
        let f = try await GroupFixture.make()
        #expect(await f.h.send(.get, "/v1/groups/not-a-uuid", token: f.owner.token).status == 404)
        #expect(await f.h.send(.get, "/v1/groups/\(f.groupID.uppercased())", token: f.owner.token).status == 404)
    }
}
