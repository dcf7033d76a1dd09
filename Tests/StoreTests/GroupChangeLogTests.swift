import Domain
import SQLite
import Storage
import Store
import TestSupport
import Testing

/// Each group mutation appends exactly one batch: its event, its topics, and documents that decode
/// to exactly what the store returned (whole documents, not diffs) — followed, when it takes away
/// someone's right to invite, by the revocations that causes, each its own batch.
@Suite("Store — one change-log batch per group mutation", .serialized)
struct GroupChangeLogTests {
    struct Logged {
        var event: String
        var rows: [(topic: String, kind: String, op: String, entity: String, document: [UInt8]?, reason: String?)]
        var summary: [String] { rows.map { "\($0.topic) \($0.kind) \($0.op)" } }
    }

    let db: any SQLDatabase
    let secret = Array(repeating: UInt8(3), count: 32)

    init(_ backend: TestBackend = .sqlite) throws {
        db = try backend.open(migrations: Schema.migrations(for: backend.dialect)).database
    }

    /// Runs `body` in one write transaction and returns the one batch it appended. `followedBy` names
    /// the events of the batches expected after it in the same transaction: the revocations a
    /// removal or demotion causes (`GroupStore.revokeGrants`), each its own batch.
    func logged<T>(followedBy: [String] = [], _ body: (any SQLConnection) throws -> T) throws -> (T, Logged) {
        let before = try db.readSync { try ChangeLog.latestSeq(on: $0) }
        let value = try db.writeSync(body)
        let all = try db.readSync { c in
            try c.query(
                "SELECT seq, batch, event, topic, kind, op, entity_id, document, reason FROM change_log WHERE seq > ?1 ORDER BY seq",
                [.integer(before)])
        }
        let rows = all.filter { $0.int("batch") == before + 1 }
        var following: [String] = []
        for row in all.dropFirst(rows.count) where row.int("batch") == row.int("seq") {
            following.append(row.string("event") ?? "")
        }
        #expect(following == followedBy, "the batches after the mutation's own")
        #expect(!rows.isEmpty, "one batch")
        #expect(Set(rows.compactMap { $0.string("event") }).count == 1, "one event")
        return (
            value,
            Logged(
                event: rows.first?.string("event") ?? "",
                rows: rows.map {
                    (
                        $0.string("topic") ?? "", $0.string("kind") ?? "", $0.string("op") ?? "", $0.string("entity_id") ?? "",
                        $0.string("document").map { Array($0.utf8) }, $0.string("reason")
                    )
                })
        )
    }

    @Test("create, update, join, role change, transfer, leave, remove, code, invitations, delete", arguments: TestBackend.available)
    static func everyMutation(_ backend: TestBackend) throws {
        try Self(backend).everyMutation()
    }

    func everyMutation() throws {
        let (o, a, b) = try db.writeSync { c in
            (
                try AccountStore.register(email: "o@example.com", displayName: "O", passwordHash: "h", tier: .premium, at: 1, on: c),
                try AccountStore.register(email: "a@example.com", displayName: "A", passwordHash: "h", tier: .free, at: 1, on: c),
                try AccountStore.register(email: "b@example.com", displayName: "B", passwordHash: "h", tier: .free, at: 1, on: c)
            )
        }
        let (detail, created) = try logged { c in
            try GroupStore.create(name: "G", description: "d", iconName: nil, colorTag: nil, maxMembers: 10, owner: o, at: 10, on: c)
        }
        let g = detail.group.id
        #expect(created.event == "group_created")
        #expect(created.summary == ["group:\(g) group added", "group:\(g) member added", "user:\(o.id) group added"])
        #expect(try DocumentCoding.decode(Group.self, from: created.rows[0].document ?? []) == detail.group)
        #expect(try DocumentCoding.decode(GroupMember.self, from: created.rows[1].document ?? []) == detail.members[0])

        let (updated, update) = try logged { c in
            try GroupStore.update(
                groupID: g, actorID: o.id, name: "H", description: .some(nil), iconName: nil, colorTag: nil,
                expectedVersion: 1, at: 11, on: c)
        }
        #expect(update.event == "group_updated")
        #expect(update.summary == ["group:\(g) group modified"])
        #expect(try DocumentCoding.decode(Group.self, from: update.rows[0].document ?? []) == updated)

        let ((code, record), codeLog) = try logged { c in
            try InviteCodeStore.rotate(groupID: g, actorID: o.id, secret: secret, at: 12, on: c)
        }
        #expect(codeLog.event == "invite_code_created")
        #expect(codeLog.summary == ["group:\(g) invite_code modified"])
        #expect(try DocumentCoding.decode(InviteCodeRecord.self, from: codeLog.rows[0].document ?? []) == record)

        for (user, at) in [(a, Int64(13)), (b, Int64(14))] {
            let (_, joined) = try logged { c in
                try InviteCodeStore.join(codeHash: code.hash(secret: secret), user: user, clientIP: "ip", at: at, on: c)
            }
            #expect(joined.event == "member_joined")
            #expect(joined.summary == ["group:\(g) member added", "group:\(g) group modified", "user:\(user.id) group added"])
        }

        let (promoted, roleLog) = try logged { c in
            try GroupStore.changeRole(groupID: g, actorID: o.id, targetID: a.id, role: .admin, at: 15, on: c)
        }
        #expect(roleLog.event == "role_changed")
        #expect(roleLog.summary == ["group:\(g) member modified", "user:\(a.id) member modified"])
        #expect(try DocumentCoding.decode(GroupMember.self, from: roleLog.rows[0].document ?? []) == promoted)

        let (_, transferLog) = try logged { c in try GroupStore.transfer(groupID: g, actorID: o.id, targetID: a.id, at: 16, on: c) }
        #expect(transferLog.event == "ownership_transferred")
        #expect(
            transferLog.summary == [
                "group:\(g) group modified", "group:\(g) member modified", "group:\(g) member modified",
                "user:\(o.id) member modified", "user:\(a.id) member modified",
            ])

        // o created the code: leaving disables it, as an explicit disable would.
        let (_, leaveLog) = try logged(followedBy: ["invite_code_disabled"]) { c in
            try GroupStore.removeMember(groupID: g, actorID: o.id, targetID: o.id, at: 17, on: c)
        }
        #expect(leaveLog.event == "member_left")
        #expect(leaveLog.rows.last?.reason == "left")

        let (invitation, invited) = try logged { c in
            try InvitationStore.create(
                groupID: g, actor: a, inviteeEmail: "o@example.com", role: .member, tokenHash: nil, at: 18, on: c)
        }
        #expect(invited.event == "invitation_created")
        #expect(invited.summary == ["user:\(a.id) invitation added", "user:\(o.id) invitation added"])
        #expect(try DocumentCoding.decode(Invitation.self, from: invited.rows[0].document ?? []) == invitation)

        let (_, removeLog) = try logged { c in try GroupStore.removeMember(groupID: g, actorID: a.id, targetID: b.id, at: 19, on: c) }
        #expect(removeLog.event == "member_removed")
        let removedDoc = try DocumentCoding.decode(GroupMember.self, from: removeLog.rows[0].document ?? [])
        #expect(removedDoc.status == .removed)
        #expect(removedDoc.removedBy == a.id)
        #expect(removedDoc.removedAt == Timestamp(milliseconds: 19))

        let (_, rotateLog) = try logged { c in try InviteCodeStore.rotate(groupID: g, actorID: a.id, secret: secret, at: 20, on: c) }
        #expect(rotateLog.event == "invite_code_rotated")
        let (_, disableLog) = try logged { c in try InviteCodeStore.disable(groupID: g, actorID: a.id, at: 20, on: c) }
        #expect(disableLog.event == "invite_code_disabled")

        let (_, deleteLog) = try logged { c in try GroupStore.delete(groupID: g, actorID: a.id, at: 21, on: c) }
        #expect(deleteLog.event == "group_deleted")
        #expect(deleteLog.summary == ["group:\(g) group removed", "user:\(a.id) group removed"])
        #expect(deleteLog.rows.allSatisfy { $0.document == nil && $0.reason == "group_deleted" })
    }
}
