/// What the group feed shows about its invite code: when it was made and until when it works,
/// never the code (the code itself is shown once, to whoever created it).
public struct InviteCodeRecord: Sendable, Codable, Equatable {
    public var groupID: String
    public var createdBy: String
    public var createdAt: Timestamp
    public var expiresAt: Timestamp
    /// Set when the code was disabled (`DELETE …/invite-code`).
    @ExplicitNull public var disabledAt: Timestamp?

    public init(groupID: String, createdBy: String, createdAt: Timestamp, expiresAt: Timestamp, disabledAt: Timestamp?) {
        self.groupID = groupID
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.disabledAt = disabledAt
    }

    enum CodingKeys: String, CodingKey {
        case groupID = "group_id"
        case createdBy = "created_by"
        case createdAt = "created_at"
        case expiresAt = "expires_at"
        case disabledAt = "disabled_at"
    }
}
