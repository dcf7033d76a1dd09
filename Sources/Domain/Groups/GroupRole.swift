/// A member's role in a group (docs/design.md#roles-and-membership). Exactly one active `owner` per group.
public enum GroupRole: String, Sendable, Codable, CaseIterable {
    /// Created the group (or received it by transfer): everything, incl. delete, roles, transfer.
    case owner
    /// Edits the group, invites, rotates the code, removes plain members.
    case admin
    /// Reads, completes assigned alarms, leaves.
    case member

    /// Whether this role manages the group (edit, invite, invite code): owner or admin.
    public var canManage: Bool { self != .member }
}
