public import Domain
public import Storage

/// Operator actions on groups (chronir-admin). An operator is not a member, so these skip the
/// member-role checks of the API functions but reuse the same mechanics (`end`, `softDelete`,
/// `handOver`, `admit`'s documents, the change builders): what a removal or a transfer does to the
/// data and to the change log is defined once. Every batch is attributed to `admin` with a reason.
extension GroupStore {
    /// A live group by id, or `notFound`.
    public static func liveGroup(_ groupID: String, on db: any SQLConnection) throws -> Group {
        guard let group = try group(id: groupID.lowercased(), on: db) else { throw DomainError.notFound("group") }
        return group
    }

    /// Live groups, newest first, optionally whose name contains `search` or whose owner has `ownerEmail`.
    public static func moderationList(
        search: String?, ownerEmail: String?, limit: Int, on db: any SQLConnection
    ) throws -> [Group] {
        let pattern = search.map { "%" + $0.lowercased().map { "%_\\".contains($0) ? "\\\($0)" : "\($0)" }.joined() + "%" }
        return try db.query(
            """
            SELECT \(groupColumns(alias: "g")) FROM groups g JOIN users u ON u.id = g.owner_id
            WHERE g.deleted_ms IS NULL AND (CAST(?1 AS TEXT) IS NULL OR lower(g.name) LIKE ?1 ESCAPE '\\')
              AND (CAST(?2 AS TEXT) IS NULL OR u.email = ?2)
            ORDER BY g.created_ms DESC, g.id LIMIT ?3
            """,
            [
                pattern.map { .text($0) } ?? .null, ownerEmail.map { .text($0.lowercased()) } ?? .null,
                .integer(Int64(limit)),
            ]
        ).map(groupFromRow)
    }

    /// Renames a group. Event `group_updated`.
    public static func adminRename(groupID: String, name: String, reason: String?, at now: Int64, on db: any SQLConnection)
        throws -> Group
    {
        var group = try liveGroup(groupID, on: db)
        let name = try GroupRules.normalizeName(name)
        guard name != group.name else { return group }
        group.name = name
        try saveGroup(&group, at: now, on: db)
        try ChangeLog.append(
            [groupChange(group, .modified).with(reason: reason)], event: .groupUpdated, actor: .admin, at: now, on: db)
        return group
    }

    /// Soft-deletes a group; every member's access ends at once. Event `group_deleted`.
    public static func adminDelete(groupID: String, reason: String?, at now: Int64, on db: any SQLConnection) throws {
        let group = try liveGroup(groupID, on: db)
        let changes = try softDelete(group, reason: reason ?? "group_deleted", at: now, on: db)
        try ChangeLog.append(changes, event: .groupDeleted, actor: .admin, at: now, on: db)
    }

    /// Freezes (`frozen: true`) or unfreezes a group. While frozen, database triggers (migration
    /// 0005) refuse every write to the group's rows — from the API, the admin CLI or the sweeper —
    /// with `group_frozen`. Events `group_frozen` / `group_unfrozen`; idempotent. Unfreezing revokes
    /// the grants whose creators lost the right meanwhile (`reconcileGrants`).
    public static func adminSetFrozen(
        groupID: String, frozen: Bool, reason: String?, at now: Int64, on db: any SQLConnection
    ) throws -> Group {
        var group = try liveGroup(groupID, on: db)
        guard (group.frozenAt != nil) != frozen else { return group }
        group.frozenAt = frozen ? Timestamp(milliseconds: now) : nil
        group.version += 1
        group.updatedAt = Timestamp(milliseconds: now)
        try db.run(
            "UPDATE groups SET frozen_ms = ?2, version = ?3, updated_ms = ?4 WHERE id = ?1",
            [.text(group.id), SQLValue(group.frozenAt?.milliseconds), .integer(group.version), .integer(now)])
        try ChangeLog.append(
            [groupChange(group, .modified).with(reason: reason)], event: frozen ? .groupFrozen : .groupUnfrozen,
            actor: .admin, at: now, on: db)
        if !frozen { try reconcileGrants(groupID: group.id, actor: .admin, at: now, on: db) }
        return group
    }

    /// Removes an active member other than the owner (transfer first). Event `member_removed`.
    public static func adminRemoveMember(
        groupID: String, userID: String, reason: String?, at now: Int64, on db: any SQLConnection
    ) throws -> GroupMember {
        var (group, target) = try liveMembership(groupID: groupID, userID: userID, on: db)
        guard target.role != .owner else { throw DomainError.ownerMustTransfer }
        let changes = try end(&target, of: &group, as: .removed, by: "admin", at: now, on: db)
        try commitAdmin(
            changes, reason: reason, event: .memberRemoved, revoking: target.userID, in: group.id, keeping: nil,
            because: .creatorRemoved, at: now, on: db)
        return target
    }

    /// Sets an active non-owner member's role to `member` or `admin`. Event `role_changed`.
    public static func adminChangeRole(
        groupID: String, userID: String, role: GroupRole, reason: String?, at now: Int64, on db: any SQLConnection
    ) throws -> GroupMember {
        let (group, member) = try liveMembership(groupID: groupID, userID: userID, on: db)
        var target = member
        guard target.role != .owner, role != .owner else {
            throw DomainError.permissionDenied("ownership moves only by transfer")
        }
        guard target.role != role else { return target }
        target.role = role
        try saveMember(target, insert: false, on: db)
        try commitAdmin(
            [memberChange(target, .modified), memberFeedChange(target)], reason: reason, event: .roleChanged,
            revoking: target.userID, in: group.id, keeping: role, because: .creatorRoleChanged, at: now, on: db)
        return target
    }

    /// Makes an active member the owner; the old owner becomes admin. Event `ownership_transferred`.
    public static func adminTransfer(
        groupID: String, userID: String, reason: String?, at now: Int64, on db: any SQLConnection
    ) throws -> Detail {
        var (group, target) = try liveMembership(groupID: groupID, userID: userID, on: db)
        guard target.role != .owner else { return try detail(group, on: db) }
        guard var owner = try member(groupID: group.id, userID: group.ownerID, on: db) else {
            throw StoreError.corruptRow(table: "group_members")
        }
        let changes = try handOver(&group, from: &owner, to: &target, at: now, on: db)
        try commitAdmin(
            changes, reason: reason, event: .ownershipTransferred, revoking: owner.userID, in: group.id,
            keeping: .admin, because: .creatorRoleChanged, at: now, on: db)
        return try detail(group, on: db)
    }

    /// The target of an operator's membership action: the live group `groupID` and `userID`'s active
    /// membership in it (404 for either, before anything changes).
    private static func liveMembership(
        groupID: String, userID: String, on db: any SQLConnection
    ) throws -> (group: Group, member: GroupMember) {
        let group = try liveGroup(groupID, on: db)
        return (group, try activeMember(groupID: group.id, userID: userID, on: db))
    }

    /// The tail of every operator action on a membership: `changes` as one change-log batch carrying
    /// `reason`, then the grants `userID` may no longer hand out in the group (`revokeGrants`, keeping
    /// `role`'s).
    private static func commitAdmin(
        _ changes: [Change], reason: String?, event: ChangeEvent, revoking userID: String, in groupID: String,
        keeping role: GroupRole?, because grantReason: GrantRevocationReason, at now: Int64, on db: any SQLConnection
    ) throws {
        try ChangeLog.append(changes.map { $0.with(reason: reason) }, event: event, actor: .admin, at: now, on: db)
        try revokeGrants(of: userID, in: groupID, keeping: role, actor: .admin, reason: grantReason, at: now, on: db)
    }
}

extension InviteCodeStore {
    /// What an operator sees of a group's code: its public facts plus the abuse counters.
    public struct Status: Sendable {
        public var record: InviteCodeRecord?
        /// Failed attempts against this code within the last hour.
        public var recentFailures: Int
        /// When the lock ends, if locked now.
        public var lockedUntil: Timestamp?
    }

    /// The code's status for `groups show`.
    public static func status(groupID: String, at now: Int64, on db: any SQLConnection) throws -> Status {
        let record = try record(groupID: groupID, on: db)
        let failures = try failureTimes(subject: codeSubject(groupID), window: InviteCode.codeWindow, at: now, on: db)
        let locked = try db.queryOne(
            "SELECT locked_until_ms FROM invite_codes WHERE group_id = ?1 AND locked_until_ms > ?2",
            [.text(groupID), .integer(now)]
        )?.int("locked_until_ms")
        return Status(record: record, recentFailures: failures.count, lockedUntil: locked.map(Timestamp.init(milliseconds:)))
    }

    /// Creates or rotates a group's code for an operator; returns the new code (shown once).
    public static func adminRotate(
        groupID: String, secret: [UInt8], reason: String?, at now: Int64, on db: any SQLConnection
    ) throws -> (code: InviteCode, record: InviteCodeRecord) {
        let group = try GroupStore.liveGroup(groupID, on: db)
        return try install(groupID: group.id, createdBy: "admin", actor: .admin, reason: reason, secret: secret, at: now, on: db)
    }

    /// Disables a group's code (idempotent). Event `invite_code_disabled`.
    public static func adminDisable(groupID: String, reason: String?, at now: Int64, on db: any SQLConnection) throws {
        let group = try GroupStore.liveGroup(groupID, on: db)
        try markDisabled(groupID: group.id, actor: .admin, reason: reason, at: now, on: db)
    }

    /// Clears a code's lock and its failure count. Returns whether anything was cleared.
    @discardableResult
    public static func adminUnlock(groupID: String, reason: String?, at now: Int64, on db: any SQLConnection) throws -> Bool {
        let group = try GroupStore.liveGroup(groupID, on: db)
        let unlocked = try db.run(
            "UPDATE invite_codes SET locked_until_ms = NULL WHERE group_id = ?1 AND locked_until_ms IS NOT NULL",
            [.text(group.id)])
        let cleared = try db.run("DELETE FROM invite_attempts WHERE subject = ?1", [.text(codeSubject(group.id))])
        guard unlocked + cleared > 0, let record = try record(groupID: group.id, on: db) else { return false }
        try ChangeLog.append(
            [change(record).with(reason: reason)], event: .inviteCodeUnlocked, actor: .admin, at: now, on: db)
        return true
    }
}

extension Change {
    /// The same change carrying `reason` (when given).
    func with(reason: String?) -> Change {
        guard let reason else { return self }
        var copy = self
        copy.reason = reason
        return copy
    }
}

extension InvitationStore {
    /// Invitations for an operator, newest first, optionally of one group and/or one status
    /// (`expired` is derived from the clock, as the API shows it).
    public static func moderationList(
        groupID: String?, status: Invitation.Status?, limit: Int, at now: Int64, on db: any SQLConnection
    ) throws -> [Invitation] {
        let rows = try db.query(
            select + """
                 WHERE (CAST(?1 AS TEXT) IS NULL OR i.group_id = ?1)
                ORDER BY i.created_ms DESC, i.id DESC
                """, [groupID.map { .text($0.lowercased()) } ?? .null]
        ).map { try fromRow($0, now) }
        return Array(rows.filter { status == nil || $0.status == status }.prefix(limit))
    }
}
