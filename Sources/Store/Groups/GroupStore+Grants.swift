import Domain
import Storage

/// What a person handed out — pending invitations and the group's invite code — lives only as long
/// as they could still hand it out. Every change that takes that right away (leaving,
/// removal by the owner, an admin or an operator, demotion, the owner's transfer, suspension)
/// revokes, in its own transaction, what the person can no longer create (`GroupRules.mayInvite`,
/// `GroupRules.mayCreateInviteCode`). Each revocation is recorded exactly as the explicit one: an
/// invitation through `InvitationStore.markRevoked` (one `invitation_revoked` batch to the inviter's
/// and the addressee's feeds), the code through `InviteCodeStore.markDisabled` (an
/// `invite_code_disabled` batch on the group topic), attributed to the actor of the change, with
/// `reason` naming it. Account deletion does the same inside its own batch
/// (`GroupStore+AccountDeletion`).
extension GroupStore {
    /// Why grants were revoked, as stored in the revocation's `reason` (the audit trail).
    public struct GrantRevocationReason: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The creator left the group.
        public static let creatorLeft = GrantRevocationReason(rawValue: "creator_left")
        /// The creator was removed (by the owner, an admin or an operator).
        public static let creatorRemoved = GrantRevocationReason(rawValue: "creator_removed")
        /// The creator's role no longer allows it (demotion, or the owner's transfer).
        public static let creatorRoleChanged = GrantRevocationReason(rawValue: "creator_role_changed")
        /// The creator's account was suspended.
        public static let creatorSuspended = GrantRevocationReason(rawValue: "creator_suspended")
    }

    /// Revokes `userID`'s live pending invitations of `groupID` (nil: of every group) that
    /// `GroupRules.mayInvite(as: role, …)` no longer allows, and disables the group's code when they
    /// created it and `GroupRules.mayCreateInviteCode(as: role)` no longer holds. `role` is what the
    /// person is now: nil once they left, were removed or suspended. Appends one batch per revoked
    /// thing, after the caller's own batch. Groups frozen now are skipped (their rows are read-only,
    /// and nothing in them can be used while frozen); `reconcileGrants` catches up on unfreezing.
    /// Returns how many were revoked.
    @discardableResult
    static func revokeGrants(
        of userID: String, in groupID: String?, keeping role: GroupRole?, actor: Actor,
        reason: GrantRevocationReason, at now: Int64, on db: any SQLConnection
    ) throws -> Int {
        var revoked = 0
        let pending = try db.query(
            """
            SELECT i.id AS id, i.role AS role FROM invitations i JOIN groups g ON g.id = i.group_id
            WHERE i.invited_by = ?1 AND i.status = 'pending' AND i.expires_ms > ?2 AND (CAST(?3 AS TEXT) IS NULL OR i.group_id = ?3)
              AND g.deleted_ms IS NULL AND g.frozen_ms IS NULL
            ORDER BY i.created_ms, i.id
            """, [.text(userID), .integer(now), SQLValue(groupID)])
        for row in pending {
            guard let id = row.string("id"), let granted = row.string("role").flatMap(GroupRole.init(rawValue:)),
                !GroupRules.mayInvite(as: role, granting: granted),
                var invitation = try InvitationStore.invitation(id: id, at: now, on: db)
            else { continue }
            try InvitationStore.markRevoked(&invitation, actor: actor, reason: reason.rawValue, at: now, on: db)
            revoked += 1
        }
        guard !GroupRules.mayCreateInviteCode(as: role) else { return revoked }
        let codes = try db.query(
            """
            SELECT c.group_id AS group_id FROM invite_codes c JOIN groups g ON g.id = c.group_id
            WHERE c.created_by = ?1 AND c.disabled_ms IS NULL AND (CAST(?2 AS TEXT) IS NULL OR c.group_id = ?2)
              AND g.deleted_ms IS NULL AND g.frozen_ms IS NULL
            ORDER BY c.group_id
            """, [.text(userID), SQLValue(groupID)])
        for row in codes {
            guard let group = row.string("group_id") else { continue }
            try InviteCodeStore.markDisabled(groupID: group, actor: actor, reason: reason.rawValue, at: now, on: db)
            revoked += 1
        }
        return revoked
    }

    /// Revokes every live grant of the group whose creator could no longer create it — not an active
    /// member with the needed role, or a suspended account. Run when a group is unfrozen: changes
    /// that happened while it was frozen could not touch its rows. Attributed to `actor`.
    @discardableResult
    static func reconcileGrants(groupID: String, actor: Actor, at now: Int64, on db: any SQLConnection) throws -> Int {
        let creators = try db.query(
            """
            SELECT invited_by AS user_id FROM invitations WHERE group_id = ?1 AND status = 'pending' AND expires_ms > ?2
            UNION SELECT created_by FROM invite_codes WHERE group_id = ?1 AND disabled_ms IS NULL
            """, [.text(groupID), .integer(now)]
        ).compactMap { $0.string("user_id") }
        var revoked = 0
        for userID in creators where userID != "admin" {
            let account = try AccountStore.user(id: userID, on: db)  // nil: deleted
            let membership = try member(groupID: groupID, userID: userID, on: db)
            let usable = account?.status == .active && membership?.status == .active
            let role = usable ? membership?.role : nil
            let reason: GrantRevocationReason =
                account?.status == .suspended
                ? .creatorSuspended
                : membership?.status == .left
                    ? .creatorLeft
                    : usable ? .creatorRoleChanged : .creatorRemoved
            revoked += try revokeGrants(of: userID, in: groupID, keeping: role, actor: actor, reason: reason, at: now, on: db)
        }
        return revoked
    }
}
