import Domain
import SQLite
import Storage
import Store
import TestSupport
import Testing

@Suite("Store — groups, invite codes, invitations (migration 0002)")
struct GroupStoreTests {
    let secret = Array(repeating: UInt8(7), count: 32)

    func database(_ backend: TestBackend) throws -> (TemporaryDirectory, any SQLDatabase) {
        let storage = try backend.open(migrations: Schema.migrations(for: backend.dialect))
        return (storage.directory, storage.database)
    }

    func user(_ name: String, on c: any SQLConnection) throws -> User {
        try AccountStore.register(
            email: "\(name)@example.com", displayName: name, passwordHash: "h", tier: .premium, at: 1, on: c)
    }

    @Test("0002_groups follows 0001_init")
    func migration() {
        #expect(Schema.migrations.map(\.name).prefix(2) == ["0001_init", "0002_groups"])
    }

    @Test("the schema refuses a member count over the limit and a second owner", arguments: TestBackend.available)
    func constraints(_ backend: TestBackend) throws {
        let (_, db) = try database(backend)
        let (owner, other, detail) = try db.writeSync { c in
            let owner = try user("o", on: c)
            let other = try user("x", on: c)
            let detail = try GroupStore.create(
                name: "G", description: nil, iconName: nil, colorTag: nil, maxMembers: 1, owner: owner, at: 2, on: c)
            return (owner, other, detail)
        }
        #expect(
            violatesConstraint {
                try db.writeSync { c in try c.run("UPDATE groups SET member_count = 2 WHERE id = ?1", [.text(detail.group.id)]) }
            })
        #expect(
            violatesConstraint {
                try db.writeSync { c in
                    try c.run(
                        """
                        INSERT INTO group_members (group_id, user_id, display_name, role, status, joined_ms)
                        VALUES (?1, ?2, 'x', 'owner', 'active', 3)
                        """, [.text(detail.group.id), .text(other.id)])
                }
            })
        #expect(detail.members.map(\.userID) == [owner.id])
    }

    @Test("a join refused by the member limit leaves no row and no change-log row behind", arguments: TestBackend.available)
    func atomicJoin(_ backend: TestBackend) throws {
        let (_, db) = try database(backend)
        let (joiner, code, groupID) = try db.writeSync { c in
            let owner = try user("o", on: c)
            let joiner = try user("j", on: c)
            let detail = try GroupStore.create(
                name: "G", description: nil, iconName: nil, colorTag: nil, maxMembers: 1, owner: owner, at: 2, on: c)
            let (code, _) = try InviteCodeStore.rotate(groupID: detail.group.id, actorID: owner.id, secret: secret, at: 3, on: c)
            return (joiner, code, detail.group.id)
        }
        let before = try db.readSync { try ChangeLog.latestSeq(on: $0) }
        #expect(throws: DomainError.groupMemberLimit) {
            try db.writeSync { c in
                try InviteCodeStore.join(codeHash: code.hash(secret: secret), user: joiner, clientIP: "ip", at: 4, on: c)
            }
        }
        #expect(try db.readSync { try ChangeLog.latestSeq(on: $0) } == before)
        #expect(try db.readSync { try GroupStore.member(groupID: groupID, userID: joiner.id, on: $0) } == nil)
    }

    @Test("attempt records and long-expired invitations are purged by age", arguments: TestBackend.available)
    func retention(_ backend: TestBackend) throws {
        let (_, db) = try database(backend)
        try db.writeSync { c in
            let owner = try user("o", on: c)
            let detail = try GroupStore.create(
                name: "G", description: nil, iconName: nil, colorTag: nil, maxMembers: 5, owner: owner, at: 2, on: c)
            for at: Int64 in [10, 20, 30] {
                _ = try InviteCodeStore.join(codeHash: nil, user: owner, clientIP: "ip", at: at, on: c)
            }
            _ = try InvitationStore.create(
                groupID: detail.group.id, actor: owner, inviteeEmail: "a@example.com", role: .member, tokenHash: nil,
                at: 5, on: c)
        }
        #expect(try db.readSync { try $0.scalar("SELECT count(*) FROM invite_attempts") } == .integer(6))
        #expect(try db.writeSync { try InviteCodeStore.purgeAttempts(olderThan: 25, on: $0) } == 4)
        let expiry = 5 + Invitation.lifetimeMilliseconds
        #expect(try db.writeSync { try InvitationStore.purgeExpired(expiredBefore: expiry, on: $0) } == 0)
        #expect(try db.writeSync { try InvitationStore.purgeExpired(expiredBefore: expiry + 1, on: $0) } == 1)
    }
}
