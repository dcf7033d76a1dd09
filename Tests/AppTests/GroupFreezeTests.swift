import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

@Suite("Frozen groups — read-only for everyone until unfrozen", .serialized)
struct GroupFreezeTests {
    func freeze(_ f: GroupFixture, _ frozen: Bool) throws {
        let now = f.h.clock.nowMilliseconds()
        _ = try f.h.database.writeSync {
            try GroupStore.adminSetFrozen(groupID: f.groupID, frozen: frozen, reason: "test", at: now, on: $0)
        }
    }

    @Test("every write to a frozen group is 409 GROUP_FROZEN and changes nothing; reads work; unfreeze restores")
    func frozen() async throws {
        let f = try await GroupFixture.make()
        let g = "/v1/groups/\(f.groupID)"
        let logBefore = try f.h.database.readSync { try ChangeLog.latestSeq(on: $0) }
        try freeze(f, true)
        let seqAfterFreeze = try f.h.database.readSync { try ChangeLog.latestSeq(on: $0) }
        #expect(seqAfterFreeze == logBefore + 1)

        let shown = await f.h.send(.get, g, token: f.member.token)
        #expect(shown.status == 200)
        #expect(((shown.json["group"] as? [String: Any])?["frozen_at"] as? String) != nil)

        let writes: [(HTTPMethod, String, String?, String)] = [
            (.patch, g, #"{"name":"Renamed"}"#, f.owner.token),
            (.patch, "\(g)/members/\(f.member.id)", #"{"role":"admin"}"#, f.owner.token),
            (.delete, "\(g)/members/\(f.member.id)", nil, f.admin.token),
            (.delete, "\(g)/members/\(f.member.id)", nil, f.member.token),
            (.post, "\(g)/transfer", #"{"user_id":"\#(f.admin.id)"}"#, f.owner.token),
            (.post, "\(g)/invite-code", nil, f.owner.token),
            (.post, "\(g)/invitations", #"{"role":"member"}"#, f.owner.token),
            (.post, "/v1/join", #"{"code":"\#(f.code)"}"#, f.outsider.token),
            (
                .post, "\(g)/alarms",
                #"""
                {"title":"T","schedule":{"type":"custom_days","interval_days":1,"start_date":"2026-02-06"},"times_of_day":[{"hour":10,\#
                "minute":0}],"timezone":"UTC"}
                """#,
                f.owner.token
            ),
            (.delete, g, nil, f.owner.token),
        ]
        for (method, path, json, token) in writes {
            let reply = await f.h.send(method, path, json: json, token: token)
            #expect(reply.status == 409, "\(method) \(path): \(reply.text)")
            #expect(reply.errorName == "GROUP_FROZEN", "\(method) \(path): \(reply.text)")
        }
        #expect(try f.h.database.readSync { try ChangeLog.latestSeq(on: $0) } == seqAfterFreeze)
        #expect(
            violatesConstraint {
                try f.h.database.writeSync {
                    try GroupStore.adminRename(groupID: f.groupID, name: "X", reason: nil, at: 1, on: $0)
                }
            })

        try freeze(f, false)
        let renamed = await f.h.send(.patch, g, json: #"{"name":"Renamed"}"#, token: f.owner.token)
        #expect(renamed.status == 200)
        #expect(renamed.json["frozen_at"] is NSNull)
    }

    @Test("freezing is idempotent and logged once, with the reason")
    func idempotent() async throws {
        let f = try await GroupFixture.make()
        try freeze(f, true)
        try freeze(f, true)
        let rows = try f.h.database.readSync {
            try AuditTrail.entries(AuditTrail.Filter(actor: "admin"), limit: 10, on: $0)
        }
        #expect(rows.map(\.event) == ["group_frozen"])
        #expect(rows.first?.reason == "test")
    }
}
