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
    }
}
