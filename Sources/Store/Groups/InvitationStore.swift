public import Domain
import Foundation
public import Storage

/// Invitations by email or link (docs/design.md#invitations). Every mutation appends one
/// batch: the invitation document to the inviter's and the invitee's `user:<id>` feeds ("my
/// invitations"; invitations stay off the group topic, which plain members read), and on
/// acceptance the new membership to `group:<id>`.
public enum InvitationStore {
    static let select = """
        SELECT i.id AS id, i.group_id AS group_id, g.name AS group_name, i.invited_by AS invited_by,
               u.display_name AS invited_by_name, i.invitee_email AS invitee_email, i.method AS method,
               i.role AS role, i.status AS status, i.accepted_by AS accepted_by, i.created_ms AS created_ms,
               i.expires_ms AS expires_ms, i.responded_ms AS responded_ms
        FROM invitations i JOIN groups g ON g.id = i.group_id JOIN users u ON u.id = i.invited_by
        """

    /// Creates an invitation (owner/admin; only the owner may invite as admin). `tokenHash` is
    /// SHA-256 of a link invitation's token, nil for an email invitation. At most 10 per inviter per
    /// hour (`rateLimited`). Event `invitation_created`.
    public static func create(
        groupID: String, actor: User, inviteeEmail: String?, role: GroupRole, tokenHash: [UInt8]?, mailTokenHash: [UInt8]? = nil,
        at now: Int64, on db: any SQLConnection
    ) throws -> Invitation {
        let (group, member) = try GroupStore.managerAccess(groupID: groupID, userID: actor.id, on: db)
        guard role != .owner else { throw DomainError.invalidField(field: "role", message: "role must be member or admin") }
        // The same rule that revokes the invitation once its creator loses the right (`revokeGrants`).
        guard GroupRules.mayInvite(as: member.role, granting: role) else {
            throw DomainError.permissionDenied("only the owner can invite admins")
        }
        let recent = try db.query(
            "SELECT created_ms FROM invitations WHERE invited_by = ?1 AND created_ms > ?2",
            [.text(actor.id), .integer(Invitation.creationWindow.windowStart(now: now))]
        ).compactMap { $0.int("created_ms") }
        if case .refused(let seconds) = Invitation.creationWindow.evaluate(failureTimes: recent, now: now) {
            throw DomainError.rateLimited(retryAfterSeconds: seconds)
        }
        let invitation = Invitation(
            id: UUID().uuidString.lowercased(), groupID: groupID, groupName: group.name, invitedBy: actor.id,
            invitedByName: actor.displayName, inviteeEmail: inviteeEmail, method: inviteeEmail == nil ? .link : .email,
            role: role, status: .pending, acceptedBy: nil, createdAt: Timestamp(milliseconds: now),
            expiresAt: Timestamp(milliseconds: now + Invitation.lifetimeMilliseconds), respondedAt: nil)
        try db.run(
            """
            INSERT INTO invitations (id, group_id, invited_by, invitee_email, token_hash, method, role, status,
                                     created_ms, expires_ms, mail_token_hash)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8, ?9, ?10)
            """,
            [
                .text(invitation.id), .text(groupID), .text(actor.id), SQLValue(inviteeEmail), SQLValue(tokenHash),
                .text(invitation.method.rawValue), .text(role.rawValue), .integer(now),
                .integer(invitation.expiresAt.milliseconds), inviteeEmail == nil ? .null : SQLValue(mailTokenHash),
            ])
        try ChangeLog.append(
            try feedChanges(invitation, op: .added, on: db), event: .invitationCreated, actor: .user(actor.id), at: now,
            on: db)
        try NotificationOutbox.invitationCreated(invitation, at: now, on: db)
        return invitation
    }

    /// The invitation with this id.
    public static func invitation(id: String, at now: Int64, on db: any SQLConnection) throws -> Invitation? {
        guard UUIDText.isCanonical(id) else { return nil }
        return try db.queryOne(select + " WHERE i.id = ?1 AND g.deleted_ms IS NULL", [.text(id)]).map { try fromRow($0, now) }
    }

    /// The invitation whose token hashes to `tokenHash`: a link invitation's token, or the token an email
    /// invitation's mail carries (`mail_token_hash`, migration 0028; it still names the invitation for its
    /// addressee only, `resolve`).
    public static func invitation(tokenHash: [UInt8], at now: Int64, on db: any SQLConnection) throws -> Invitation? {
        let row =
            try db.queryOne(select + " WHERE i.token_hash = ?1 AND g.deleted_ms IS NULL", [.blob(tokenHash)])
            ?? db.queryOne(select + " WHERE i.mail_token_hash = ?1 AND g.deleted_ms IS NULL", [.blob(tokenHash)])
        return try row.map { try fromRow($0, now) }
    }

    /// Pending, unexpired invitations addressed to `email` (in live groups), newest first, `limit` at
    /// a time after `after`.
    public static func pending(
        forEmail email: String, after: GroupStore.PageKey? = nil, limit: Int = 100, at now: Int64, on db: any SQLConnection
    ) throws -> GroupStore.Page<Invitation> {
        let rows = try db.query(
            select + """
                 WHERE i.invitee_email = ?1 AND i.status = 'pending' AND i.expires_ms > ?2 AND g.deleted_ms IS NULL
                  AND (CAST(?3 AS BIGINT) IS NULL OR i.created_ms < ?3 OR (i.created_ms = ?3 AND i.id < ?4))
                ORDER BY i.created_ms DESC, i.id DESC
                LIMIT ?5
                """,
            [.text(email), .integer(now), SQLValue(after?.milliseconds), SQLValue(after?.id), .integer(Int64(limit) + 1)]
        ).map { try fromRow($0, now) }
        return GroupStore.page(rows, limit: limit) { GroupStore.PageKey(milliseconds: $0.createdAt.milliseconds, id: $0.id) }
    }

    /// Every invitation of a group (owner/admin), newest first, with expiry applied to the status.
    public static func list(
        groupID: String, actorID: String, after: GroupStore.PageKey? = nil, limit: Int = 100, at now: Int64,
        on db: any SQLConnection
    ) throws -> GroupStore.Page<Invitation> {
        _ = try GroupStore.managerAccess(groupID: groupID, userID: actorID, on: db)
        let rows = try db.query(
            select + """
                 WHERE i.group_id = ?1 AND (CAST(?2 AS BIGINT) IS NULL OR i.created_ms < ?2 OR (i.created_ms = ?2 AND i.id < ?3))
                ORDER BY i.created_ms DESC, i.id DESC
                LIMIT ?4
                """, [.text(groupID), SQLValue(after?.milliseconds), SQLValue(after?.id), .integer(Int64(limit) + 1)]
        ).map { try fromRow($0, now) }
        return GroupStore.page(rows, limit: limit) { GroupStore.PageKey(milliseconds: $0.createdAt.milliseconds, id: $0.id) }
    }

    /// Deletes invitations that expired before `cutoff` without being answered (retention sweeper:
    /// 30 days after expiry, `Invitation.retentionAfterExpiryMilliseconds`).
    @discardableResult
    public static func purgeExpired(expiredBefore cutoff: Int64, on db: any SQLConnection) throws -> Int {
        try db.run(
            "DELETE FROM invitations WHERE expires_ms < ?1 AND status IN ('pending', 'expired')", [.integer(cutoff)])
    }

    /// How the caller names an invitation: its id (email invitations, by their addressee) or a link
    /// token's hash.
    public enum Reference: Sendable {
        case id(String)
        case tokenHash([UInt8])
    }

    /// The invitation `reference` names, as `user` may see it: an email invitation only by the account
    /// with that email; a link invitation only through its token. Anything else is `notFound`.
    static func resolve(_ reference: Reference, for user: User, at now: Int64, on db: any SQLConnection) throws -> Invitation {
        let found: Invitation?
        switch reference {
        case .id(let id):
            found = try invitation(id: id, at: now, on: db).flatMap { $0.method == .email ? $0 : nil }
        case .tokenHash(let hash):
            found = try invitation(tokenHash: hash, at: now, on: db)
        }
        guard let invitation = found, invitation.status != .revoked,
            invitation.method == .link || invitation.inviteeEmail == user.email
        else { throw DomainError.notFound("invitation") }
        return invitation
    }

    /// The `/invite/<token>` landing page's preview of the link invitation whose token hashes to
    /// `tokenHash` (docs/security.md#invitation-previews). The token is a 256-bit link secret, so no
    /// attempt limit applies and no sign-in is needed: whoever holds the link may read what accepting
    /// it would show. It answers as an accept by a stranger would: pending → the preview; expired →
    /// `invitationExpired`; accepted or declined → `invitationAlreadyAccepted`; revoked, unknown, or
    /// the group deleted → `notFound`. Reads only.
    public static func preview(tokenHash: [UInt8], at now: Int64, on db: any SQLConnection) throws -> InvitePreview {
        guard let invitation = try invitation(tokenHash: tokenHash, at: now, on: db), invitation.status != .revoked,
            let group = try GroupStore.group(id: invitation.groupID, on: db)
        else { throw DomainError.notFound("invitation") }
        switch invitation.status {
        case .pending: return InvitePreview(group, invitedByName: invitation.invitedByName)
        case .expired: throw DomainError.invitationExpired
        case .accepted, .declined, .revoked: throw DomainError.invitationAlreadyAccepted
        }
    }

    /// Accepts: the user becomes a member with the invitation's role (member limit enforced). An email
    /// invitation needs the addressee's account to have verified that address (`emailNotVerified`):
    /// otherwise whoever registers an invited address first could take the invitation — its role
    /// included (the red team's takeover).
    /// Idempotent for the same user; accepted by someone else or declined → `invitationAlreadyAccepted`;
    /// expired, or older than the user's own removal/leave → `invitationExpired`. An active member
    /// accepting keeps their role. Event `invitation_accepted`.
    public static func accept(
        _ reference: Reference, user: User, at now: Int64, on db: any SQLConnection
    ) throws -> GroupStore.Detail {
        var invitation = try resolve(reference, for: user, at: now, on: db)
        guard var group = try GroupStore.group(id: invitation.groupID, on: db) else { throw DomainError.notFound("invitation") }
        let previous = try GroupStore.member(groupID: group.id, userID: user.id, on: db)
        switch invitation.status {
        case .accepted where invitation.acceptedBy == user.id:
            guard previous?.status == .active else { throw DomainError.invitationAlreadyAccepted }
            return try GroupStore.detail(group, on: db)
        case .accepted, .declined, .revoked:
            throw DomainError.invitationAlreadyAccepted
        case .expired:
            throw DomainError.invitationExpired
        case .pending:
            guard invitation.method == .link || user.emailVerified else { throw DomainError.emailNotVerified }
        }
        if previous?.status == .active, invitation.method == .link { return try GroupStore.detail(group, on: db) }
        var changes: [Change] = []
        if previous?.status != .active {
            guard GroupRules.mayRejoin(endedMs: previous?.removedAt?.milliseconds, inviteCreatedMs: invitation.createdAt.milliseconds)
            else { throw DomainError.invitationExpired }
            changes = try GroupStore.admit(user, to: &group, role: invitation.role, previous: previous, at: now, on: db).1
        }
        invitation.status = .accepted
        invitation.acceptedBy = user.id
        invitation.respondedAt = Timestamp(milliseconds: now)
        try db.run(
            "UPDATE invitations SET status = 'accepted', accepted_by = ?2, responded_ms = ?3 WHERE id = ?1",
            [.text(invitation.id), .text(user.id), .integer(now)])
        changes += try feedChanges(invitation, op: .modified, extraUser: user.id, on: db)
        try ChangeLog.append(changes, event: .invitationAccepted, actor: .user(user.id), at: now, on: db)
        return try GroupStore.detail(group, on: db)
    }

    /// Declines an email invitation (its addressee only; idempotent). Event `invitation_declined`.
    public static func decline(_ reference: Reference, user: User, at now: Int64, on db: any SQLConnection) throws -> Invitation {
        var invitation = try resolve(reference, for: user, at: now, on: db)
        guard invitation.method == .email else { throw DomainError.notFound("invitation") }
        switch invitation.status {
        case .declined: return invitation
        case .accepted, .revoked: throw DomainError.invitationAlreadyAccepted
        case .expired: throw DomainError.invitationExpired
        case .pending: break
        }
        invitation.status = .declined
        invitation.respondedAt = Timestamp(milliseconds: now)
        try db.run(
            "UPDATE invitations SET status = 'declined', responded_ms = ?2 WHERE id = ?1",
            [.text(invitation.id), .integer(now)])
        try ChangeLog.append(
            try feedChanges(invitation, op: .modified, on: db), event: .invitationDeclined, actor: .user(user.id),
            at: now, on: db)
        return invitation
    }

    /// Revokes a pending invitation (its inviter or the group owner; idempotent). Other members get
    /// `permissionDenied`, non-members `notFound`. Event `invitation_revoked`.
    public static func revoke(id: String, actorID: String, at now: Int64, on db: any SQLConnection) throws {
        guard var invitation = try invitation(id: id, at: now, on: db) else { throw DomainError.notFound("invitation") }
        let (_, member) = try GroupStore.access(groupID: invitation.groupID, userID: actorID, on: db)
        guard invitation.invitedBy == actorID || member.role == .owner else {
            throw DomainError.permissionDenied("only the inviter or the owner can revoke an invitation")
        }
        try markRevoked(&invitation, actor: .user(actorID), reason: nil, at: now, on: db)
    }

    /// Revokes an invitation for an operator (idempotent). Event `invitation_revoked`.
    public static func adminRevoke(id: String, reason: String?, at now: Int64, on db: any SQLConnection) throws -> Invitation {
        guard var invitation = try invitation(id: id.lowercased(), at: now, on: db) else {
            throw DomainError.notFound("invitation")
        }
        try markRevoked(&invitation, actor: .admin, reason: reason, at: now, on: db)
        return invitation
    }

    /// Moves a pending (or expired) invitation to `revoked` and logs it; shared by the API and the operator.
    static func markRevoked(
        _ invitation: inout Invitation, actor: Actor, reason: String?, at now: Int64, on db: any SQLConnection
    ) throws {
        let id = invitation.id
        switch invitation.status {
        case .revoked: return
        case .accepted, .declined: throw DomainError.invitationAlreadyAccepted
        case .pending, .expired: break
        }
        invitation.status = .revoked
        invitation.respondedAt = Timestamp(milliseconds: now)
        try db.run(
            "UPDATE invitations SET status = 'revoked', responded_ms = ?2 WHERE id = ?1", [.text(id), .integer(now)])
        try ChangeLog.append(
            try feedChanges(invitation, op: .modified, on: db).map { $0.with(reason: reason) },
            event: .invitationRevoked, actor: actor, at: now, on: db)
    }

    /// The invitation document on the inviter's feed, the addressee's (when an account has that
    /// email) and `extraUser`'s (the acceptor of a link).
    static func feedChanges(
        _ invitation: Invitation, op: Change.Op, extraUser: String? = nil, on db: any SQLConnection
    ) throws -> [Change] {
        var users = [invitation.invitedBy]
        if let email = invitation.inviteeEmail,
            let row = try db.queryOne("SELECT id FROM users WHERE email = ?1 AND deleted_ms IS NULL", [.text(email)]),
            let id = row.string("id")
        {
            users.append(id)
        }
        if let extraUser { users.append(extraUser) }
        var seen = Set<String>()
        let document = DocumentCoding.encode(invitation)
        return users.filter { seen.insert($0).inserted }.map {
            Change(topic: ChangeLog.userTopic($0), kind: .invitation, op: op, entityID: invitation.id, document: document)
        }
    }

    static func fromRow(_ row: Row, _ now: Int64) throws -> Invitation {
        guard let id = row.string("id"), let groupID = row.string("group_id"), let groupName = row.string("group_name"),
            let by = row.string("invited_by"), let byName = row.string("invited_by_name"),
            let method = row.string("method").flatMap(Invitation.Method.init(rawValue:)),
            let role = row.string("role").flatMap(GroupRole.init(rawValue:)),
            let status = row.string("status").flatMap(Invitation.Status.init(rawValue:)),
            let created = row.int("created_ms"), let expires = row.int("expires_ms")
        else { throw StoreError.corruptRow(table: "invitations") }
        var invitation = Invitation(
            id: id, groupID: groupID, groupName: groupName, invitedBy: by, invitedByName: byName,
            inviteeEmail: row.string("invitee_email"), method: method, role: role, status: status,
            acceptedBy: row.string("accepted_by"), createdAt: Timestamp(milliseconds: created),
            expiresAt: Timestamp(milliseconds: expires),
            respondedAt: row.int("responded_ms").map(Timestamp.init(milliseconds:)))
        invitation.status = invitation.effectiveStatus(at: now)
        return invitation
    }
}
