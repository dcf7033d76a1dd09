/// A group as the API and the change log show it (docs/design.md#groups). The invite code is never
/// part of it: only its keyed hash is stored, and the code is shown once to whoever created it.
public struct Group: Sendable, Codable, Equatable {
    public var id: String
    public var name: String
    @ExplicitNull public var description: String?
    @ExplicitNull public var iconName: String?
    /// `#RRGGBB`.
    @ExplicitNull public var colorTag: String?
    public var ownerID: String
    public var maxMembers: Int64
    /// Active members, owner included.
    public var memberCount: Int64
    /// Bumped on every change of this document (optimistic locking, CA010).
    public var version: Int64
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    /// Set while an operator has frozen the group: it is read-only for everyone until unfrozen.
    @ExplicitNull public var frozenAt: Timestamp?

    public init(
        id: String, name: String, description: String?, iconName: String?, colorTag: String?, ownerID: String,
        maxMembers: Int64, memberCount: Int64, version: Int64, createdAt: Timestamp, updatedAt: Timestamp,
        frozenAt: Timestamp? = nil
    ) {
        self.frozenAt = frozenAt
        self.id = id
        self.name = name
        self.description = description
        self.iconName = iconName
        self.colorTag = colorTag
        self.ownerID = ownerID
        self.maxMembers = maxMembers
        self.memberCount = memberCount
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, name, description, version
        case iconName = "icon_name"
        case colorTag = "color_tag"
        case ownerID = "owner_id"
        case maxMembers = "max_members"
        case memberCount = "member_count"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case frozenAt = "frozen_at"
    }
}
