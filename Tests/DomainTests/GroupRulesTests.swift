import Domain
import Testing

@Suite("Group rules — fields, removal, roles, rejoin")
struct GroupRulesTests {
    func member(_ id: String, _ role: GroupRole) -> GroupMember {
        GroupMember(
            groupID: "g", userID: id, displayName: id, role: role, status: .active, joinedAt: Timestamp(milliseconds: 0))
    }

    @Test("names are trimmed, 1…100 characters, no control characters")
    func names() throws {
        #expect(try GroupRules.normalizeName("  Home ") == "Home")
        #expect(try GroupRules.normalizeName(String(repeating: "ü", count: 100)).count == 100)
        #expect(throws: DomainError.self) { try GroupRules.normalizeName(String(repeating: "ü", count: 101)) }
        #expect(throws: DomainError.self) { try GroupRules.normalizeName("   ") }
        #expect(throws: DomainError.self) { try GroupRules.normalizeName("a\u{7}b") }
    }

    @Test("description ≤ 500, empty is nil; icon names; #RRGGBB colours stored uppercase")
    func optionalFields() throws {
        #expect(try GroupRules.normalizeDescription("  ") == nil)
        #expect(try GroupRules.normalizeDescription(String(repeating: "d", count: 500))?.count == 500)
        #expect(throws: DomainError.self) { try GroupRules.normalizeDescription(String(repeating: "d", count: 501)) }
        #expect(try GroupRules.validateIconName("briefcase.fill") == "briefcase.fill")
        #expect(throws: DomainError.self) { try GroupRules.validateIconName("House") }
        #expect(try GroupRules.validateColorTag("#0a0B0c") == "#0A0B0C")
        for bad in ["0A0B0C", "#0A0B0", "#0A0B0CD", "#GGGGGG", "red"] {
            #expect(throws: DomainError.invalidField(field: "color_tag", message: "color_tag must be #RRGGBB")) {
                try GroupRules.validateColorTag(bad)
            }
        }
    }

    @Test("removal: self is leave (not for the owner); owner removes anyone; admin removes members only")
    func removal() throws {
        let owner = member("o", .owner)
        let admin = member("a", .admin)
        let admin2 = member("a2", .admin)
        let plain = member("m", .member)
        let plain2 = member("m2", .member)
        #expect(try GroupRules.removalOutcome(actor: plain, target: plain) == .left)
        #expect(try GroupRules.removalOutcome(actor: admin, target: admin) == .left)
        #expect(throws: DomainError.ownerMustTransfer) { try GroupRules.removalOutcome(actor: owner, target: owner) }
        #expect(try GroupRules.removalOutcome(actor: owner, target: admin) == .removed)
        #expect(try GroupRules.removalOutcome(actor: admin, target: plain) == .removed)
        #expect(throws: DomainError.self) { try GroupRules.removalOutcome(actor: admin, target: admin2) }
        #expect(throws: DomainError.self) { try GroupRules.removalOutcome(actor: admin, target: owner) }
        #expect(throws: DomainError.self) { try GroupRules.removalOutcome(actor: plain, target: plain2) }
    }

    @Test("roles change member ↔ admin by the owner only")
    func roleChanges() throws {
        let owner = member("o", .owner)
        let admin = member("a", .admin)
        let plain = member("m", .member)
        try GroupRules.checkRoleChange(actor: owner, target: plain, to: .admin)
        try GroupRules.checkRoleChange(actor: owner, target: admin, to: .member)
        #expect(throws: DomainError.self) { try GroupRules.checkRoleChange(actor: admin, target: plain, to: .admin) }
        #expect(throws: DomainError.self) { try GroupRules.checkRoleChange(actor: owner, target: owner, to: .admin) }
        #expect(throws: DomainError.self) { try GroupRules.checkRoleChange(actor: owner, target: plain, to: .owner) }
    }

    @Test("a former member rejoins only with an invite strictly newer than their departure")
    func rejoin() {
        #expect(GroupRules.mayRejoin(endedMs: nil, inviteCreatedMs: 0))
        #expect(!GroupRules.mayRejoin(endedMs: 100, inviteCreatedMs: 99))
        #expect(!GroupRules.mayRejoin(endedMs: 100, inviteCreatedMs: 100))
        #expect(GroupRules.mayRejoin(endedMs: 100, inviteCreatedMs: 101))
    }

    @Test("documents encode snake_case with explicit nulls")
    func documents() {
        let m = member("u", .admin)
        let json = String(decoding: DocumentCoding.encode(m), as: UTF8.self)
        #expect(
            json == #"{"display_name":"u","group_id":"g","joined_at":"1970-01-01T00:00:00.000Z","#
                + #""notification_enabled":true,"removed_at":null,"removed_by":null,"role":"admin","status":"active","#
                + #""user_id":"u"}"#)
    }
}
