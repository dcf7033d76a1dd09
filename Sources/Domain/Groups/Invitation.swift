/// An invitation to a group, by email or by link (docs/design.md#invitations). A link invitation's token
/// is shown once to its creator; only SHA-256 of it is stored and it never appears in this document.
public struct Invitation: Sendable, Codable, Equatable {
    /// `pending → accepted | declined | expired | revoked`.
    public enum Status: String, Sendable, Codable, CaseIterable {
        case pending, accepted, declined, expired, revoked
    }

    /// How the invitee is reached: an addressed `email`, or a `link` anyone holding it may use once.
    public enum Method: String, Sendable, Codable, CaseIterable {
        case email, link
    }

    /// Invitations live 7 days.
    public static let lifetimeMilliseconds: Int64 = 7 * 24 * 3600 * 1000
    /// Each user may create at most 10 invitations an hour (docs/design.md#rate-limits).
    public static let creationWindow = AttemptWindow(maxAttempts: 10, windowMilliseconds: 3600 * 1000)
    /// Expired invitations are purged this long after expiry (retention sweeper).
    public static let retentionAfterExpiryMilliseconds: Int64 = 30 * 24 * 3600 * 1000

    public var id: String
    public var groupID: String
    public var groupName: String
    public var invitedBy: String
    public var invitedByName: String
    @ExplicitNull public var inviteeEmail: String?
    public var method: Method
    /// The role granted on acceptance (`member` or `admin`).
    public var role: GroupRole
    public var status: Status
    @ExplicitNull public var acceptedBy: String?
    public var createdAt: Timestamp
    public var expiresAt: Timestamp
    @ExplicitNull public var respondedAt: Timestamp?

    public init(
        id: String, groupID: String, groupName: String, invitedBy: String, invitedByName: String,
        inviteeEmail: String?, method: Method, role: GroupRole, status: Status, acceptedBy: String?,
        createdAt: Timestamp, expiresAt: Timestamp, respondedAt: Timestamp?
    ) {
        self.id = id
        self.groupID = groupID
        self.groupName = groupName
        self.invitedBy = invitedBy
        self.invitedByName = invitedByName
        self.inviteeEmail = inviteeEmail
        self.method = method
        self.role = role
        self.status = status
        self.acceptedBy = acceptedBy
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.respondedAt = respondedAt
    }

    /// The status as of `now`: a pending invitation past its expiry reads as `expired`.
    public func effectiveStatus(at now: Int64) -> Status {
        status == .pending && expiresAt.milliseconds <= now ? .expired : status
    }

    enum CodingKeys: String, CodingKey {
        case id, method, role, status
        case groupID = "group_id"
        case groupName = "group_name"
        case invitedBy = "invited_by"
        case invitedByName = "invited_by_name"
        case inviteeEmail = "invitee_email"
        case acceptedBy = "accepted_by"
        case createdAt = "created_at"
        case expiresAt = "expires_at"
        case respondedAt = "responded_at"
    }
}
