/// What a landing page (`/join/<CODE>`, `/invite/<token>`) shows before anyone joins: the group's
/// name, colour, icon and size, and who invited — and nothing else of the group (docs/api.md#landing-previews).
public struct InvitePreview: Sendable, Codable, Equatable {
    /// The group's name.
    public var groupName: String
    /// `#RRGGBB`, as the group document has it.
    @ExplicitNull public var colorTag: String?
    /// The group's icon name, as the group document has it.
    @ExplicitNull public var iconName: String?
    /// Active members, owner included.
    public var memberCount: Int64
    /// Display name of whoever made the code (its last rotation) or the invitation; nil for a code an
    /// operator made (`chronir-admin invites rotate`): no person invited.
    @ExplicitNull public var invitedByName: String?
    /// The signed-in caller's own relation to the group: null when signed out or never a
    /// member. Their own data, so it leaks nothing the caller does not know.
    @ExplicitNull public var yourMembership: YourMembership? = nil

    /// `your_membership`.
    public enum YourMembership: String, Sendable, Codable, Equatable {
        /// Already in the group: the landing says so instead of offering to join.
        case active
        /// A former member whom this code admits again (it was made after they went).
        case mayRejoin = "may_rejoin"
        /// A former member this code does not admit (made before they were removed or left): they need a
        /// new code or an invitation (the join answers 403 REJOIN_NEEDS_NEW_INVITE).
        case needsNewInvite = "needs_new_invite"
    }

    public init(groupName: String, colorTag: String?, iconName: String?, memberCount: Int64, invitedByName: String?) {
        self.groupName = groupName
        self.colorTag = colorTag
        self.iconName = iconName
        self.memberCount = memberCount
        self.invitedByName = invitedByName
    }

    /// The preview of `group`, invited by `invitedByName`.
    public init(_ group: Group, invitedByName: String?) {
        self.init(
            groupName: group.name, colorTag: group.colorTag, iconName: group.iconName, memberCount: group.memberCount,
            invitedByName: invitedByName)
    }

    enum CodingKeys: String, CodingKey {
        case groupName = "group_name"
        case colorTag = "color_tag"
        case iconName = "icon_name"
        case memberCount = "member_count"
        case invitedByName = "invited_by_name"
        case yourMembership = "your_membership"
    }
}
