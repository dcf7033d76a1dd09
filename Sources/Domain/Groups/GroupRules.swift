/// Group field validation and role rules (docs/design.md#groups, docs/design.md#roles-and-membership), as pure functions.
public enum GroupRules {
    /// Longest group name, in characters (docs/design.md#groups: 100).
    public static let maxNameCharacters = 100
    /// Longest description, in characters (docs/design.md#groups: 500).
    public static let maxDescriptionCharacters = 500
    /// Longest icon name, in bytes: a symbol name such as `house`, not content.
    public static let maxIconNameBytes = 64

    /// Normalises as a `FreeText` name and checks 1…100 characters.
    public static func normalizeName(_ raw: String) throws(DomainError) -> String {
        let name = try FreeText.normalize(raw, .name, field: "name")
        guard !name.isEmpty else { throw .invalidField(field: "name", message: "name is required") }
        guard name.count <= maxNameCharacters else {
            throw .invalidField(field: "name", message: "name is longer than \(maxNameCharacters) characters")
        }
        return name
    }

    /// Normalises as a `FreeText` note; empty becomes nil; at most 500 characters.
    public static func normalizeDescription(_ raw: String?) throws(DomainError) -> String? {
        guard let raw else { return nil }
        let text = try FreeText.normalize(raw, .note, field: "description")
        guard !text.isEmpty else { return nil }
        guard text.count <= maxDescriptionCharacters else {
            throw .invalidField(
                field: "description", message: "description is longer than \(maxDescriptionCharacters) characters")
        }
        return text
    }

    /// 1…64 bytes of `[a-z0-9._-]` (symbol names like `house`, `briefcase.fill`); empty becomes nil.
    public static func validateIconName(_ raw: String?) throws(DomainError) -> String? {
        guard let icon = raw, !icon.isEmpty else { return nil }
        guard icon.utf8.count <= maxIconNameBytes,
            icon.utf8.allSatisfy({ ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 46 || $0 == 45 || $0 == 95 })
        else {
            throw .invalidField(field: "icon_name", message: "icon_name must be 1–64 characters of a-z, 0-9, '.', '-', '_'")
        }
        return icon
    }

    /// `#RRGGBB` (hex digits, either case; stored uppercase); empty becomes nil.
    public static func validateColorTag(_ raw: String?) throws(DomainError) -> String? {
        guard let color = raw, !color.isEmpty else { return nil }
        let bytes = Array(color.utf8)
        guard bytes.count == 7, bytes[0] == 35,
            bytes[1...].allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 70) || ($0 >= 97 && $0 <= 102) })
        else { throw .invalidField(field: "color_tag", message: "color_tag must be #RRGGBB") }
        return color.uppercased()
    }

    /// What `DELETE /v1/groups/{id}/members/{user_id}` does when `actor` names `target`: anyone may
    /// leave (`left`) except the owner, who must transfer first; the owner removes anyone else; an
    /// admin removes plain members only (`removed`).
    public static func removalOutcome(actor: GroupMember, target: GroupMember) throws(DomainError) -> GroupMember.Status {
        if actor.userID == target.userID {
            guard actor.role != .owner else { throw .ownerMustTransfer }
            return .left
        }
        switch actor.role {
        case .owner: return .removed
        case .admin:
            guard target.role == .member else { throw .permissionDenied("admins can remove members only") }
            return .removed
        case .member: throw .permissionDenied("only the owner or an admin can remove members")
        }
    }

    /// `member ↔ admin`, by the owner only; the owner's own role changes only by transfer.
    public static func checkRoleChange(actor: GroupMember, target: GroupMember, to role: GroupRole) throws(DomainError) {
        guard actor.role == .owner else { throw .permissionDenied("only the owner can change roles") }
        guard target.role != .owner, role != .owner else {
            throw .invalidField(field: "role", message: "ownership changes only by transfer")
        }
    }

    /// Whether a member with `role` (nil: no longer an active member, or suspended) may create an
    /// invitation granting `granted`: owner and admins invite members; only the owner invites admins.
    /// An invitation stays usable only while its creator still could create it.
    public static func mayInvite(as role: GroupRole?, granting granted: GroupRole) -> Bool {
        guard let role, role.canManage, granted != .owner else { return false }
        return granted == .member || role == .owner
    }

    /// Whether a member with `role` (nil as above) may create or rotate the group's invite code; a
    /// code stays usable only while its creator still could create it.
    public static func mayCreateInviteCode(as role: GroupRole?) -> Bool {
        role?.canManage ?? false
    }

    /// Whether a former member (removed or left at `endedMs`) may rejoin with an invite created at
    /// `inviteCreatedMs`: only an invite newer than their departure admits them again.
    public static func mayRejoin(endedMs: Int64?, inviteCreatedMs: Int64) -> Bool {
        guard let endedMs else { return true }
        return inviteCreatedMs > endedMs
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s = s.dropFirst() }
        while let l = s.last, l.isWhitespace { s = s.dropLast() }
        return String(s)
    }

}
