public import Domain
import Foundation
public import Storage

/// SQL for groups and memberships. Every function runs inside the caller's transaction; every
/// mutation appends one change-log batch with whole new documents: group and member documents to
/// `group:<id>`, and to each affected user's `user:<id>` the group they gained (`added`) or lost
/// (`removed`, reason `left | removed | group_deleted | account_deleted`) access to.
public enum GroupStore {
    /// A group with its active members (the answer of `GET /v1/groups/{id}`).
    public struct Detail: Sendable, Encodable {
        public var group: Group
        public var members: [GroupMember]
    }

    /// Columns `groupFromRow` reads, optionally qualified by a table alias.
    static func groupColumns(alias: String = "") -> String {
        let prefix = alias.isEmpty ? "" : alias + "."
        return [
            "id", "name", "description", "icon_name", "color_tag", "owner_id", "max_members", "member_count", "version",
            "created_ms", "updated_ms", "frozen_ms",
        ].map { prefix + $0 }.joined(separator: ", ")
    }
    static let memberColumns =
        "group_id, user_id, display_name, role, status, joined_ms, removed_ms, removed_by, notification_enabled"

    // MARK: - Reads

    /// The live (not deleted) group with this id.
    public static func group(id: String, on db: any SQLConnection) throws -> Group? {
        let read = groupRead(id: id)
        return try db.queryOne(read.sql, read.bindings).map(groupFromRow)
    }

    /// The membership record of a user in a group, whatever its status.
    public static func member(groupID: String, userID: String, on db: any SQLConnection) throws -> GroupMember? {
        let read = memberRead(groupID: groupID, userID: userID)
        return try db.queryOne(read.sql, read.bindings).map(memberFromRow)
    }

    /// The statement `group(id:)` runs.
    static func groupRead(id: String) -> (sql: String, bindings: [SQLValue]) {
        ("SELECT \(groupColumns()) FROM groups WHERE id = ?1 AND deleted_ms IS NULL", [.text(id)])
    }

    /// The statement that locks the group's row until COMMIT (`SQLConnection.forUpdate`): what
    /// serialises the `.concurrent` writes that count the group's rows (creating a shared alarm).
    /// Taken after the account's lock (`AccountStore.accountLock`) when a write takes both, never
    /// before it, so two such writes never wait for each other in a cycle.
    static func groupLock(groupID: String, on db: any SQLConnection) -> (sql: String, bindings: [SQLValue]) {
        ("SELECT 1 AS one FROM groups WHERE id = ?1" + db.forUpdate, [.text(groupID)])
    }

    /// The statement `member(groupID:userID:)` runs.
    static func memberRead(groupID: String, userID: String) -> (sql: String, bindings: [SQLValue]) {
        ("SELECT \(memberColumns) FROM group_members WHERE group_id = ?1 AND user_id = ?2", [.text(groupID), .text(userID)])
    }

    /// The statement `activeMembers(groupID:)` runs.
    static func activeMembersRead(groupID: String) -> (sql: String, bindings: [SQLValue]) {
        (
            """
            SELECT \(memberColumns) FROM group_members WHERE group_id = ?1 AND status = 'active'
            ORDER BY role = 'owner' DESC, joined_ms, user_id
            """, [.text(groupID)]
        )
    }

    /// The active membership of `userID` in `groupID`; else (never a member, removed, left)
    /// `notFound("member")`.
    static func activeMember(groupID: String, userID: String, on db: any SQLConnection) throws -> GroupMember {
        guard let found = try member(groupID: groupID, userID: userID, on: db), found.status == .active else {
            throw DomainError.notFound("member")
        }
        return found
    }

    /// The group and the caller's active membership. Anyone else — never a member, removed, left, or
    /// the group deleted — gets `notFound("group")`: a non-member learns nothing about the group.
    /// Both are read in one round trip (`SQLConnection.queryEach`).
    public static func access(groupID: String, userID: String, on db: any SQLConnection) throws -> (Group, GroupMember) {
        try access(groupID: groupID, userID: userID, with: [], on: db).0
    }

    /// `access`, with `more` statements sent in the same round trip after its two; returns their rows
    /// too (all of them run, whatever `access` answers).
    static func access(
        groupID: String, userID: String, with more: [(sql: String, bindings: [SQLValue])], on db: any SQLConnection
    ) throws -> ((Group, GroupMember), [[Row]]) {
        guard UUIDText.isCanonical(groupID) else { throw DomainError.notFound("group") }
        let rows = try db.queryEach([groupRead(id: groupID), memberRead(groupID: groupID, userID: userID)] + more)
        guard let group = try rows[0].first.map(groupFromRow), let member = try rows[1].first.map(memberFromRow),
            member.status == .active
        else { throw DomainError.notFound("group") }
        return ((group, member), Array(rows.dropFirst(2)))
    }

    /// Like `access`, and the member must be owner or admin (else `permissionDenied`).
    public static func managerAccess(groupID: String, userID: String, on db: any SQLConnection) throws -> (Group, GroupMember) {
        let (group, member) = try access(groupID: groupID, userID: userID, on: db)
        try requireManager(member)
        return (group, member)
    }

    /// `permissionDenied` unless `member` is the owner or an admin.
    static func requireManager(_ member: GroupMember) throws {
        guard member.role.canManage else { throw DomainError.permissionDenied("only the owner or an admin can do this") }
    }

    /// Active members, owner first, then by join time.
    public static func activeMembers(groupID: String, on db: any SQLConnection) throws -> [GroupMember] {
        let read = activeMembersRead(groupID: groupID)
        return try db.query(read.sql, read.bindings).map(memberFromRow)
    }

    /// The group and its active members.
    public static func detail(_ group: Group, on db: any SQLConnection) throws -> Detail {
        Detail(group: group, members: try activeMembers(groupID: group.id, on: db))
    }

    /// The live groups where the user is an active member, oldest first, `limit` at a time after
    /// `after`.
    public static func groups(
        ofUser userID: String, after: PageKey? = nil, limit: Int = 100, on db: any SQLConnection
    ) throws -> Page<Group> {
        let rows = try db.query(
            """
            SELECT \(groupColumns(alias: "g")) FROM groups g JOIN group_members m ON m.group_id = g.id
            WHERE m.user_id = ?1 AND m.status = 'active' AND g.deleted_ms IS NULL
              AND (CAST(?2 AS BIGINT) IS NULL OR g.created_ms > ?2 OR (g.created_ms = ?2 AND g.id > ?3))
            ORDER BY g.created_ms, g.id
            LIMIT ?4
            """, [.text(userID), SQLValue(after?.milliseconds), SQLValue(after?.id), .integer(Int64(limit) + 1)]
        ).map(groupFromRow)
        return page(rows, limit: limit) { PageKey(milliseconds: $0.createdAt.milliseconds, id: $0.id) }
    }

    // MARK: - Mutations

    /// Creates a group owned by `owner` (who becomes its first member). Event `group_created`.
    public static func create(
        name: String, description: String?, iconName: String?, colorTag: String?, maxMembers: Int64, owner: User,
        at now: Int64, on db: any SQLConnection
    ) throws -> Detail {
        let id = UUID().uuidString.lowercased()
        let group = Group(
            id: id, name: name, description: description, iconName: iconName, colorTag: colorTag, ownerID: owner.id,
            maxMembers: maxMembers, memberCount: 1, version: 1, createdAt: Timestamp(milliseconds: now),
            updatedAt: Timestamp(milliseconds: now))
        try db.run(
            """
            INSERT INTO groups (id, name, description, icon_name, color_tag, owner_id, max_members, member_count,
                                version, created_ms, updated_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, 1, ?8, ?8)
            """,
            [
                .text(id), .text(name), SQLValue(description), SQLValue(iconName), SQLValue(colorTag), .text(owner.id),
                .integer(maxMembers), .integer(now),
            ])
        let member = GroupMember(
            groupID: id, userID: owner.id, displayName: owner.displayName, role: .owner, status: .active,
            joinedAt: Timestamp(milliseconds: now))
        try saveMember(member, insert: true, on: db)
        try ChangeLog.append(
            [groupChange(group, .added), memberChange(member, .added), accessChange(owner.id, group, gained: true)],
            event: .groupCreated, actor: .user(owner.id), at: now, on: db)
        return Detail(group: group, members: [member])
    }

    /// Edits name/description/icon/color (owner or admin). `nil` leaves a field; `.some(nil)` clears
    /// an optional one. A stale `expectedVersion` → `versionConflict` with the current document.
    /// Event `group_updated`.
    public static func update(
        groupID: String, actorID: String, name: String?, description: String??, iconName: String??, colorTag: String??,
        expectedVersion: Int64?, at now: Int64, on db: any SQLConnection
    ) throws -> Group {
        var (group, _) = try managerAccess(groupID: groupID, userID: actorID, on: db)
        if let expectedVersion, expectedVersion != group.version {
            throw DomainError.versionConflict(current: DocumentCoding.encode(group))
        }
        let before = group
        if let name { group.name = name }
        if let description { group.description = description }
        if let iconName { group.iconName = iconName }
        if let colorTag { group.colorTag = colorTag }
        guard group != before else { return group }  // nothing changed: no new version, no log row
        try saveGroup(&group, at: now, on: db)
        try ChangeLog.append([groupChange(group, .modified)], event: .groupUpdated, actor: .user(actorID), at: now, on: db)
        return group
    }

    /// Soft-deletes the group (owner only): every member's access ends at once. Event `group_deleted`.
    public static func delete(groupID: String, actorID: String, at now: Int64, on db: any SQLConnection) throws {
        let (group, member) = try access(groupID: groupID, userID: actorID, on: db)
        guard member.role == .owner else { throw DomainError.permissionDenied("only the owner can delete the group") }
        let changes = try softDelete(group, reason: "group_deleted", at: now, on: db)
        try ChangeLog.append(changes, event: .groupDeleted, actor: .user(actorID), at: now, on: db)
    }

    /// Marks the group deleted and disables its code; returns the changes to log (the group removed
    /// from its topic and from every active member's feed) and queues `group_deleted` to those members'
    /// devices (`NotificationOutbox.groupDeleted`). Member rows stay, for the audit trail.
    static func softDelete(_ group: Group, reason: String, at now: Int64, on db: any SQLConnection) throws -> [Change] {
        let members = try activeMembers(groupID: group.id, on: db)
        try db.run("UPDATE groups SET deleted_ms = ?2, updated_ms = ?2 WHERE id = ?1", [.text(group.id), .integer(now)])
        try db.run(
            "UPDATE invite_codes SET disabled_ms = ?2 WHERE group_id = ?1 AND disabled_ms IS NULL", [.text(group.id), .integer(now)])
        try NotificationOutbox.groupDeleted(group, members: members.map(\.userID), at: now, on: db)
        var changes = [
            Change(
                topic: ChangeLog.groupTopic(group.id), kind: .group, op: .removed, entityID: group.id,
                document: nil, reason: reason)
        ]
        changes += members.map { accessChange($0.userID, group, gained: false, reason: reason) }
        return changes
    }

    /// How long a deleted group's alarms, completions and attachments are kept (docs/design.md#retention:
    /// 30 days, the seeds' figure for deleted groups): an operator can still restore it from a backup.
    public static let retentionAfterDeleteMilliseconds: Int64 = 30 * 86_400_000

    /// Retention sweeper: for every group deleted before `cutoff`, marks its live attachments deleted
    /// (the orphan sweep then removes their files — their upload is older than its grace — and drops
    /// the rows, which releases the uploaders' and the group's quota bytes), and deletes its shared
    /// alarms and with them (ON DELETE CASCADE) their completions, assignment and pending rows. (A
    /// frozen group cannot be deleted, so the frozen triggers never refuse this.) The group row, its
    /// member rows (the audit trail) and its change-log history stay. Appends nothing to the change
    /// log: nobody can read the group any more. Returns how many alarms went.
    @discardableResult
    public static func purgeDeleted(deletedBefore cutoff: Int64, at now: Int64, on db: any SQLConnection) throws -> Int {
        try db.run(
            """
            UPDATE attachments SET deleted_ms = ?2
            WHERE deleted_ms IS NULL AND group_id IN (SELECT id FROM groups WHERE deleted_ms < ?1)
            """, [.integer(cutoff), .integer(now)])
        return try db.run(
            "DELETE FROM shared_alarms WHERE group_id IN (SELECT id FROM groups WHERE deleted_ms < ?1)", [.integer(cutoff)])
    }

    /// `member ↔ admin`, by the owner. Event `role_changed`; a demotion revokes what the member can
    /// no longer hand out (`revokeGrants`).
    public static func changeRole(
        groupID: String, actorID: String, targetID: String, role: GroupRole, at now: Int64, on db: any SQLConnection
    ) throws -> GroupMember {
        let (_, actor) = try access(groupID: groupID, userID: actorID, on: db)
        guard actor.role == .owner else { throw DomainError.permissionDenied("only the owner can change roles") }
        var target = try activeMember(groupID: groupID, userID: targetID, on: db)
        try GroupRules.checkRoleChange(actor: actor, target: target, to: role)
        guard target.role != role else { return target }
        target.role = role
        try saveMember(target, insert: false, on: db)
        try ChangeLog.append(
            [memberChange(target, .modified), memberFeedChange(target)], event: .roleChanged, actor: .user(actorID),
            at: now, on: db)
        try revokeGrants(
            of: target.userID, in: groupID, keeping: role, actor: .user(actorID), reason: .creatorRoleChanged, at: now,
            on: db)
        return target
    }

    /// The caller's own settings for a group they are an active member of (`notification_enabled`).
    /// Event `member_settings_changed`, to the group and to the member's own feed (their other
    /// devices); nothing is logged when the value does not change.
    public static func setNotifications(
        groupID: String, userID: String, enabled: Bool, at now: Int64, on db: any SQLConnection
    ) throws -> GroupMember {
        var (_, member) = try access(groupID: groupID, userID: userID, on: db)
        guard member.notificationEnabled != enabled else { return member }
        member.notificationEnabled = enabled
        try saveMember(member, insert: false, on: db)
        try ChangeLog.append(
            [memberChange(member, .modified), memberFeedChange(member)], event: .memberSettingsChanged,
            actor: .user(userID), at: now, on: db)
        return member
    }

    /// Hands the group to another active member (owner only); the old owner becomes admin, and their
    /// pending admin invitations are revoked (`revokeGrants`). Event `ownership_transferred`.
    public static func transfer(
        groupID: String, actorID: String, targetID: String, at now: Int64, on db: any SQLConnection
    ) throws -> Detail {
        var (group, actor) = try access(groupID: groupID, userID: actorID, on: db)
        guard actor.role == .owner else { throw DomainError.permissionDenied("only the owner can transfer the group") }
        guard targetID != actorID else { return try detail(group, on: db) }
        var target = try activeMember(groupID: groupID, userID: targetID, on: db)
        let changes = try handOver(&group, from: &actor, to: &target, at: now, on: db)
        try ChangeLog.append(changes, event: .ownershipTransferred, actor: .user(actorID), at: now, on: db)
        try revokeGrants(
            of: actorID, in: groupID, keeping: .admin, actor: .user(actorID), reason: .creatorRoleChanged, at: now, on: db)
        return try detail(group, on: db)
    }

    /// Makes `target` the owner and `from` an admin; returns the changes to log.
    static func handOver(
        _ group: inout Group, from old: inout GroupMember, to target: inout GroupMember, at now: Int64, on db: any SQLConnection
    ) throws -> [Change] {
        old.role = .admin
        try saveMember(old, insert: false, on: db)
        target.role = .owner
        try saveMember(target, insert: false, on: db)
        group.ownerID = target.userID
        try saveGroup(&group, at: now, on: db)
        return [
            groupChange(group, .modified), memberChange(old, .modified), memberChange(target, .modified),
            memberFeedChange(old), memberFeedChange(target),
        ]
    }

    /// Removes a member or, when the actor names themself, leaves (`GroupRules.removalOutcome`).
    /// Events `member_removed` / `member_left`, then the revocation of what they handed out
    /// (`revokeGrants`); the member's devices get `group_access_ended` (`NotificationOutbox.accessEnded`).
    public static func removeMember(
        groupID: String, actorID: String, targetID: String, at now: Int64, on db: any SQLConnection
    ) throws -> GroupMember {
        var (group, actor) = try access(groupID: groupID, userID: actorID, on: db)
        var target = try activeMember(groupID: groupID, userID: targetID, on: db)
        let outcome = try GroupRules.removalOutcome(actor: actor, target: target)
        let changes = try end(&target, of: &group, as: outcome, by: outcome == .removed ? actorID : nil, at: now, on: db)
        try NotificationOutbox.accessEnded(target, group: group, reason: outcome.rawValue, at: now, on: db)
        try ChangeLog.append(
            changes, event: outcome == .left ? .memberLeft : .memberRemoved, actor: .user(actorID), at: now, on: db)
        try revokeGrants(
            of: targetID, in: groupID, keeping: nil, actor: .user(actorID),
            reason: outcome == .left ? .creatorLeft : .creatorRemoved, at: now, on: db)
        return target
    }

    /// Ends an active membership (`removed` or `left`) and returns the changes to log, including the
    /// shared alarms it unassigns them from (`SharedAlarmStore.memberEnded`).
    static func end(
        _ member: inout GroupMember, of group: inout Group, as status: GroupMember.Status, by remover: String?,
        at now: Int64, on db: any SQLConnection
    ) throws -> [Change] {
        member.status = status
        member.removedAt = Timestamp(milliseconds: now)
        member.removedBy = remover
        try saveMember(member, insert: false, on: db)
        group.memberCount -= 1
        try saveGroup(&group, at: now, on: db)
        return [
            memberChange(member, .modified), groupChange(group, .modified),
            accessChange(member.userID, group, gained: false, reason: status.rawValue),
        ] + (try SharedAlarmStore.memberEnded(groupID: group.id, userID: member.userID, at: now, on: db))
    }

    /// Admits `user` to `group` with `role` — a new member, or a former one rejoining — enforcing
    /// `max_members` inside the caller's write transaction (the single writer serialises joins, so
    /// the last free seat goes to exactly one). Returns the changes to log — with the "everyone"
    /// alarms whose open occurrence now waits for them too (`SharedAlarmStore.memberJoined`) — and queues
    /// `group_member_joined` (`NotificationOutbox`). Throws `groupMemberLimit`.
    static func admit(
        _ user: User, to group: inout Group, role: GroupRole, previous: GroupMember?, at now: Int64, on db: any SQLConnection
    ) throws -> (GroupMember, [Change]) {
        guard group.memberCount < group.maxMembers else { throw DomainError.groupMemberLimit }
        try EntitlementStore.checkOwnerSubscription(groupID: group.id, what: "the group is not accepting new members", at: now, on: db)
        let member = GroupMember(
            groupID: group.id, userID: user.id, displayName: user.displayName, role: role, status: .active,
            joinedAt: Timestamp(milliseconds: now))
        try saveMember(member, insert: previous == nil, on: db)
        group.memberCount += 1
        try saveGroup(&group, at: now, on: db)
        try NotificationOutbox.memberJoined(member, group: group, at: now, on: db)
        return (
            member,
            [
                memberChange(member, previous == nil ? .added : .modified), groupChange(group, .modified),
                accessChange(user.id, group, gained: true),
            ] + (try SharedAlarmStore.memberJoined(groupID: group.id, at: now, on: db))
        )
    }

    // MARK: - Rows and changes

    /// Writes every mutable column, bumping `version` and `updated_at`.
    static func saveGroup(_ group: inout Group, at now: Int64, on db: any SQLConnection) throws {
        group.version += 1
        group.updatedAt = Timestamp(milliseconds: now)
        try db.run(
            """
            UPDATE groups SET name = ?2, description = ?3, icon_name = ?4, color_tag = ?5, owner_id = ?6,
                member_count = ?7, version = ?8, updated_ms = ?9
            WHERE id = ?1
            """,
            [
                .text(group.id), .text(group.name), SQLValue(group.description), SQLValue(group.iconName),
                SQLValue(group.colorTag), .text(group.ownerID), .integer(group.memberCount), .integer(group.version),
                .integer(now),
            ])
    }

    static func saveMember(_ m: GroupMember, insert: Bool, on db: any SQLConnection) throws {
        let values: [SQLValue] = [
            .text(m.groupID), .text(m.userID), .text(m.displayName), .text(m.role.rawValue), .text(m.status.rawValue),
            .integer(m.joinedAt.milliseconds), SQLValue(m.removedAt?.milliseconds), SQLValue(m.removedBy),
            .integer(m.notificationEnabled ? 1 : 0),
        ]
        if insert {
            try db.run(
                """
                INSERT INTO group_members (group_id, user_id, display_name, role, status, joined_ms, removed_ms, removed_by,
                    notification_enabled)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                """, values)
        } else {
            try db.run(
                """
                UPDATE group_members SET display_name = ?3, role = ?4, status = ?5, joined_ms = ?6, removed_ms = ?7,
                    removed_by = ?8, notification_enabled = ?9
                WHERE group_id = ?1 AND user_id = ?2
                """, values)
        }
    }

    /// The group document on its own topic.
    static func groupChange(_ group: Group, _ op: Change.Op) -> Change {
        Change(
            topic: ChangeLog.groupTopic(group.id), kind: .group, op: op, entityID: group.id,
            document: DocumentCoding.encode(group))
    }

    /// Profile hook (docs/design.md#accounts): the user's display name is now `name`, and every
    /// membership in a live, unfrozen group shows it from this transaction on — one member document per
    /// group, on the group's topic and the user's own. Ended memberships keep the name they had; a
    /// frozen group is read-only and keeps it until it is unfrozen and the name changes again. Answers
    /// and activity keep the name given when they were recorded (history).
    static func renamed(userID: String, to name: String, on db: any SQLConnection) throws -> [Change] {
        let query = membershipsToRename(userID: userID, to: name)
        return try renamed(try db.query(query.sql, query.bindings), to: name, on: db)
    }

    /// The statement that reads the live memberships whose name `renamed` changes (a caller may send
    /// it together with its own reads, `SQLConnection.queryEach`).
    static func membershipsToRename(userID: String, to name: String) -> (sql: String, bindings: [SQLValue]) {
        (membershipsToRenameSQL, [.text(userID), .text(name)])
    }

    private static let membershipsToRenameSQL = """
        SELECT \(memberColumns.split(separator: ", ").map { "m.\($0) AS \($0)" }.joined(separator: ", "))
        FROM group_members m JOIN groups g ON g.id = m.group_id
        WHERE m.user_id = ?1 AND m.status = 'active' AND m.display_name <> ?2
          AND g.deleted_ms IS NULL AND g.frozen_ms IS NULL
        ORDER BY m.joined_ms, m.group_id
        """

    /// `renamed` over the rows `membershipsToRename` read.
    static func renamed(_ rows: [Row], to name: String, on db: any SQLConnection) throws -> [Change] {
        let memberships = try rows.map(memberFromRow)
        var changes: [Change] = []
        for var member in memberships {
            member.displayName = name
            try saveMember(member, insert: false, on: db)
            changes += [memberChange(member, .modified), memberFeedChange(member)]
        }
        return changes
    }

    /// A member document on the group's topic (entity id `<group_id>:<user_id>`).
    static func memberChange(_ member: GroupMember, _ op: Change.Op) -> Change {
        Change(
            topic: ChangeLog.groupTopic(member.groupID), kind: .member, op: op,
            entityID: "\(member.groupID):\(member.userID)", document: DocumentCoding.encode(member))
    }

    /// The user's own membership document on their feed (role changes).
    static func memberFeedChange(_ member: GroupMember) -> Change {
        Change(
            topic: ChangeLog.userTopic(member.userID), kind: .member, op: .modified,
            entityID: "\(member.groupID):\(member.userID)", document: DocumentCoding.encode(member))
    }

    /// "My groups": the user gained (`added`, whole group) or lost (`removed`, with reason) access.
    static func accessChange(_ userID: String, _ group: Group, gained: Bool, reason: String? = nil) -> Change {
        Change(
            topic: ChangeLog.userTopic(userID), kind: .group, op: gained ? .added : .removed, entityID: group.id,
            document: gained ? DocumentCoding.encode(group) : nil, reason: reason)
    }

    static func groupFromRow(_ row: Row) throws -> Group {
        guard let id = row.string("id"), let name = row.string("name"), let owner = row.string("owner_id"),
            let maxMembers = row.int("max_members"), let count = row.int("member_count"),
            let version = row.int("version"), let created = row.int("created_ms"), let updated = row.int("updated_ms")
        else { throw StoreError.corruptRow(table: "groups") }
        return Group(
            id: id, name: name, description: row.string("description"), iconName: row.string("icon_name"),
            colorTag: row.string("color_tag"), ownerID: owner, maxMembers: maxMembers, memberCount: count,
            version: version, createdAt: Timestamp(milliseconds: created), updatedAt: Timestamp(milliseconds: updated),
            frozenAt: row.int("frozen_ms").map(Timestamp.init(milliseconds:)))
    }

    static func memberFromRow(_ row: Row) throws -> GroupMember {
        guard let groupID = row.string("group_id"), let userID = row.string("user_id"),
            let name = row.string("display_name"),
            let role = row.string("role").flatMap(GroupRole.init(rawValue:)),
            let status = row.string("status").flatMap(GroupMember.Status.init(rawValue:)),
            let joined = row.int("joined_ms")
        else { throw StoreError.corruptRow(table: "group_members") }
        return GroupMember(
            groupID: groupID, userID: userID, displayName: name, role: role, status: status,
            joinedAt: Timestamp(milliseconds: joined), removedAt: row.int("removed_ms").map(Timestamp.init(milliseconds:)),
            removedBy: row.string("removed_by"), notificationEnabled: row.int("notification_enabled") != 0)
    }
}

/// Lowercase UUID text as this server issues ids (so a malformed id is a plain 404, not a query).
enum UUIDText {
    static func isCanonical(_ text: String) -> Bool {
        let b = Array(text.utf8)
        guard b.count == 36 else { return false }
        for (i, c) in b.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard c == 45 else { return false }
            } else {
                guard (c >= 48 && c <= 57) || (c >= 97 && c <= 102) else { return false }
            }
        }
        return true
    }
}
