/// One membership of a user in a group
/// (docs/design.md#roles-and-membership). Leaving or removal keeps the record with its end time.
public struct GroupMember: Sendable, Codable, Equatable {
    /// Membership state: `active → removed | left`; removed/left may rejoin with a newer invite.
    public enum Status: String, Sendable, Codable, CaseIterable {
        case active, removed, left
    }

    public var groupID: String
    public var userID: String
    /// Cached from the user's profile when they joined.
    public var displayName: String
    public var role: GroupRole
    public var status: Status
    /// The latest (re)join.
    public var joinedAt: Timestamp
    /// When the membership ended (removed or left); nil while active.
    @ExplicitNull public var removedAt: Timestamp?
    /// Who removed the member; nil while active and when they left.
    @ExplicitNull public var removedBy: String?
    /// Whether the member wants this group's push notifications (data-schema §4.5); only they change
    /// it (`PATCH /v1/groups/{id}/membership`). Every (re)join starts with it on.
    public var notificationEnabled: Bool

    public init(
        groupID: String, userID: String, displayName: String, role: GroupRole, status: Status, joinedAt: Timestamp,
        removedAt: Timestamp? = nil, removedBy: String? = nil, notificationEnabled: Bool = true
    ) {
        self.groupID = groupID
        self.userID = userID
        self.displayName = displayName
        self.role = role
        self.status = status
        self.joinedAt = joinedAt
        self.removedAt = removedAt
        self.removedBy = removedBy
        self.notificationEnabled = notificationEnabled
    }

    enum CodingKeys: String, CodingKey {
        case role, status
        case groupID = "group_id"
        case userID = "user_id"
        case displayName = "display_name"
        case joinedAt = "joined_at"
        case removedAt = "removed_at"
        case removedBy = "removed_by"
        case notificationEnabled = "notification_enabled"
    }
}
