public import Domain
import Foundation
public import Storage

/// The transactional outbox of notifications (migration 0014; docs/notifications.md#pipeline). Every
/// producer runs inside the mutation's own write transaction, next to its change-log batch: nothing
/// is queued for a rolled-back change, nothing queued is lost on a crash. A row's `key` makes it
/// exactly-once — queuing the same key again does nothing — and rows stay after they are handled
/// until the retention sweep (`purgeHandled`).
///
/// Recipients are chosen here by the rules of docs/notifications.md (never the actor; only active
/// members of the group with `notification_enabled`); the dispatcher checks them again when it sends.
public enum NotificationOutbox {
    /// One queued notification.
    public struct Entry: Sendable, Equatable, Encodable {
        public var id: Int64
        public var key: String
        public var type: NotificationType
        public var groupID: String?
        public var actorID: String?
        public var recipients: [String]
        public var content: NotificationContent
        public var createdAt: Int64
        public var notBefore: Int64
        public var expiresAt: Int64
        public var state: State

        enum CodingKeys: String, CodingKey {
            case id, key, type, recipients, content, state
            case groupID = "group_id"
            case actorID = "actor_id"
            case createdAt = "created_ms"
            case notBefore = "not_before_ms"
            case expiresAt = "expires_ms"
        }
    }

    /// Where a row is in its life.
    public enum State: String, Sendable, Encodable {
        /// Waiting for the dispatcher.
        case pending
        /// Turned into deliveries to devices.
        case expanded
        /// Recorded, never sent: a fire found stale after downtime (`NotificationScheduler`).
        case skipped
        /// Its time to live ran out before it was sent.
        case expired
    }

    /// Handled rows are kept this long (so a fire's key still answers "already done"), then purged.
    public static let handledRetentionMilliseconds: Int64 = 7 * 86_400_000

    /// Queues a notification unless its key is already queued; a notification without recipients is
    /// not queued. `state` is `.pending` except for the scheduler's stale fires (`.skipped`);
    /// `alarmID` names the alarm whose instant a scheduler fire is (re-checked at the claim).
    /// Returns whether a row was inserted.
    @discardableResult
    static func enqueue(
        _ type: NotificationType, key: String, groupID: String?, alarmID: String? = nil, actorID: String?,
        recipients: [String], content: NotificationContent, notBefore: Int64, expiresAt: Int64, state: State = .pending,
        at now: Int64, on db: any SQLConnection
    ) throws -> Bool {
        guard !recipients.isEmpty || state != .pending else { return false }
        let recipientsJSON = String(decoding: DocumentCoding.encode(recipients), as: UTF8.self)
        let contentJSON = String(decoding: DocumentCoding.encode(content), as: UTF8.self)
        return try db.run(
            """
            INSERT INTO notification_outbox (key, type, group_id, actor_id, recipients, content, created_ms, not_before_ms,
                expires_ms, state, done_ms, alarm_id)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
            ON CONFLICT (key) DO NOTHING
            """,
            [
                .text(key), .text(type.rawValue), SQLValue(groupID), SQLValue(actorID), .text(recipientsJSON),
                .text(contentJSON), .integer(now), .integer(notBefore), .integer(expiresAt), .text(state.rawValue),
                state == .pending ? .null : .integer(now), SQLValue(alarmID),
            ]) > 0
    }

    /// Whether a row with this key exists (in any state).
    public static func contains(key: String, on db: any SQLConnection) throws -> Bool {
        try db.queryOne("SELECT 1 AS one FROM notification_outbox WHERE key = ?1", [.text(key)]) != nil
    }

    /// Rows in key order (tests, chronir-admin); `state` nil for all.
    public static func entries(state: State? = nil, limit: Int = 1_000, on db: any SQLConnection) throws -> [Entry] {
        let rows = try db.query(
            """
            SELECT id, key, type, group_id, actor_id, recipients, content, created_ms, not_before_ms, expires_ms, state
            FROM notification_outbox WHERE state = ?1 OR ?2 = 1 ORDER BY id LIMIT ?3
            """, [.text(state?.rawValue ?? ""), .integer(state == nil ? 1 : 0), .integer(Int64(limit))])
        return try rows.map(entryFromRow)
    }

    /// Queues an operator's test notification to `userID`'s devices (`chronir-admin notifications
    /// test`); returns its key.
    public static func enqueueTest(userID: String, title: String, body: String, at now: Int64, on db: any SQLConnection)
        throws -> String
    {
        let key = "test:\(userID):\(now):\(UInt32.random(in: 0...UInt32.max))"
        try enqueue(
            .test, key: key, groupID: nil, actorID: nil, recipients: [userID],
            content: NotificationContent.make(.test, groupID: nil, title: title, message: .text(body)), notBefore: now,
            expiresAt: now + NotificationType.test.policy.timeToLiveMilliseconds, at: now, on: db)
        return key
    }

    /// Rows per (state, type), for operators.
    public static func counts(on db: any SQLConnection) throws -> [(state: String, type: String, count: Int64)] {
        try db.query("SELECT state, type, COUNT(*) AS n FROM notification_outbox GROUP BY state, type ORDER BY state, type")
            .map { ($0.string("state") ?? "", $0.string("type") ?? "", $0.int("n") ?? 0) }
    }

    /// Retention: deletes handled rows older than `before`.
    public static func purgeHandled(before: Int64, on db: any SQLConnection) throws -> Int {
        try db.run("DELETE FROM notification_outbox WHERE done_ms IS NOT NULL AND done_ms < ?1", [.integer(before)])
    }

    // MARK: - Recipients

    /// Active members of `groupID` who want its notifications, in join order, without `excluded`.
    static func listeningMembers(of groupID: String, excluding excluded: Set<String>, on db: any SQLConnection) throws
        -> [String]
    {
        try db.query(
            """
            SELECT user_id FROM group_members
            WHERE group_id = ?1 AND status = 'active' AND notification_enabled = 1
            ORDER BY joined_ms, user_id
            """, [.text(groupID)]
        ).compactMap { $0.string("user_id") }.filter { !excluded.contains($0) }
    }

    /// The members among `candidates` who are active and listening in `groupID`, in `candidates` order.
    static func listening(_ candidates: [String], in groupID: String, on db: any SQLConnection) throws -> [String] {
        ordered(candidates, among: Set(try listeningMembers(of: groupID, excluding: [], on: db)))
    }

    /// The `candidates` that are in `members`, in `candidates` order, once each.
    static func ordered(_ candidates: [String], among members: Set<String>) -> [String] {
        var seen = Set<String>()
        return candidates.filter { members.contains($0) && seen.insert($0).inserted }
    }

    /// The group's name and its members among `candidates` who are active and listening, in
    /// `candidates` order, once each — `groupName` and `listening` in one query (a fire's staging
    /// needs both).
    static func audience(_ candidates: [String], in groupID: String, on db: any SQLConnection) throws
        -> (groupName: String, listening: [String])
    {
        let everyone = try audience(in: groupID, excluding: [], on: db)
        return (everyone.groupName, ordered(candidates, among: Set(everyone.listening)))
    }

    /// The group's name and `listeningMembers(of:excluding:)`, in one query (a change that tells the
    /// group names it).
    static func audience(in groupID: String, excluding excluded: Set<String>, on db: any SQLConnection) throws
        -> (groupName: String, listening: [String])
    {
        let rows = try db.query(
            """
            SELECT g.name AS name, m.user_id AS user_id FROM groups g
            LEFT JOIN group_members m ON m.group_id = g.id AND m.status = 'active' AND m.notification_enabled = 1
            WHERE g.id = ?1
            ORDER BY m.joined_ms, m.user_id
            """, [.text(groupID)])
        return (rows.first?.string("name") ?? "", rows.compactMap { $0.string("user_id") }.filter { !excluded.contains($0) })
    }

    static func groupName(_ groupID: String, on db: any SQLConnection) throws -> String {
        try db.queryOne("SELECT name FROM groups WHERE id = ?1", [.text(groupID)])?.string("name") ?? ""
    }

    static func entryFromRow(_ row: Row) throws -> Entry {
        guard let id = row.int("id"), let key = row.string("key"), let type = row.string("type"),
            let recipients = row.string("recipients"), let content = row.string("content"),
            let created = row.int("created_ms"), let notBefore = row.int("not_before_ms"),
            let expires = row.int("expires_ms"), let state = row.string("state").flatMap(State.init(rawValue:))
        else { throw StoreError.corruptRow(table: "notification_outbox") }
        return Entry(
            id: id, key: key, type: NotificationType(rawValue: type), groupID: row.string("group_id"),
            actorID: row.string("actor_id"),
            recipients: try DocumentCoding.decode([String].self, from: Array(recipients.utf8)),
            content: try DocumentCoding.decode(NotificationContent.self, from: Array(content.utf8)), createdAt: created,
            notBefore: notBefore, expiresAt: expires, state: state)
    }
}

// MARK: - Producers (called from the Store mutations, in their transaction)

extension NotificationOutbox {
    /// A member answered an occurrence → `shared_completion` to the group's other members.
    static func sharedCompletion(_ completion: SharedCompletion, alarm: SharedAlarm, at now: Int64, on db: any SQLConnection)
        throws
    {
        let actor = completion.userID
        let (group, recipients) = try audience(in: completion.groupID, excluding: Set([actor].compactMap { $0 }), on: db)
        let status = completion.status == .completed ? "completed" : "skipped"
        let content = NotificationContent.make(
            .sharedCompletion, groupID: completion.groupID, title: alarm.settings.title,
            message: NotificationMessage(
                .completionAnswered,
                ["actor": completion.userName, "status": status, "group": group]),
            extra: ["alarm_id": alarm.id, "completion_id": completion.id])
        try enqueue(
            .sharedCompletion, key: "shared_completion:\(completion.id)", groupID: completion.groupID, actorID: actor,
            recipients: recipients, content: content, notBefore: now,
            expiresAt: now + NotificationType.sharedCompletion.policy.timeToLiveMilliseconds, at: now, on: db)
    }

    /// An alarm was created or its settings changed → `shared_alarm_created` / `shared_alarm_updated`
    /// (key per version, so every edit is one notification) to the members except the actor.
    static func alarmChanged(_ alarm: SharedAlarm, created: Bool, actorID: String, at now: Int64, on db: any SQLConnection)
        throws
    {
        let type: NotificationType = created ? .sharedAlarmCreated : .sharedAlarmUpdated
        let (group, recipients) = try audience(in: alarm.groupID, excluding: [actorID], on: db)
        let content = NotificationContent.make(
            type, groupID: alarm.groupID, title: alarm.settings.title,
            message: NotificationMessage(created ? .alarmCreated : .alarmChanged, ["group": group]),
            extra: ["alarm_id": alarm.id])
        try enqueue(
            type, key: "\(type.rawValue):\(alarm.id):\(alarm.version)", groupID: alarm.groupID, actorID: actorID,
            recipients: recipients, content: content, notBefore: now, expiresAt: now + type.policy.timeToLiveMilliseconds,
            at: now, on: db)
    }

    /// Someone joined (invite code or invitation) → `group_member_joined` to the others.
    static func memberJoined(_ member: GroupMember, group: Group, at now: Int64, on db: any SQLConnection) throws {
        let recipients = try listeningMembers(of: group.id, excluding: [member.userID], on: db)
        let content = NotificationContent.make(
            .groupMemberJoined, groupID: group.id, title: group.name,
            message: NotificationMessage(.memberJoined, ["member": member.displayName]),
            extra: ["user_id": member.userID])
        try enqueue(
            .groupMemberJoined, key: "group_member_joined:\(group.id):\(member.userID):\(member.joinedAt.milliseconds)",
            groupID: group.id, actorID: member.userID, recipients: recipients, content: content, notBefore: now,
            expiresAt: now + NotificationType.groupMemberJoined.policy.timeToLiveMilliseconds, at: now, on: db)
    }

    /// An email invitation to an address that has an account → `group_invitation` to that account
    /// (until the invitation expires). Link invitations have no addressee: nothing is queued.
    static func invitationCreated(_ invitation: Invitation, at now: Int64, on db: any SQLConnection) throws {
        guard let email = invitation.inviteeEmail,
            let invitee = try db.queryOne(
                "SELECT id FROM users WHERE email = ?1 AND deleted_ms IS NULL AND status = 'active'", [.text(email)]
            )?.string("id"), invitee != invitation.invitedBy
        else { return }
        let content = NotificationContent.make(
            .groupInvitation, groupID: invitation.groupID, title: invitation.groupName,
            message: NotificationMessage(.invited, ["inviter": invitation.invitedByName]), extra: ["invitation_id": invitation.id])
        try enqueue(
            .groupInvitation, key: "group_invitation:\(invitation.id)", groupID: nil, actorID: invitation.invitedBy,
            recipients: [invitee], content: content, notBefore: now,
            expiresAt: min(invitation.expiresAt.milliseconds, now + NotificationType.groupInvitation.policy.timeToLiveMilliseconds),
            at: now, on: db)
    }

    /// The overdue sweep marked an occurrence missed → `missed_alarm_followup` to who did not answer,
    /// the owner and the admins.
    static func occurrenceMissed(_ alarm: SharedAlarm, missed: Occurrence, at now: Int64, on db: any SQLConnection) throws {
        let managers = try db.query(
            """
            SELECT user_id FROM group_members
            WHERE group_id = ?1 AND status = 'active' AND role IN ('owner', 'admin') ORDER BY joined_ms, user_id
            """, [.text(alarm.groupID)]
        ).compactMap { $0.string("user_id") }
        let recipients = try listening(missed.pendingUIDs + managers, in: alarm.groupID, on: db)
        let scheduled = missed.scheduledAt.milliseconds
        let content = NotificationContent.make(
            .missedAlarmFollowup, groupID: alarm.groupID, title: alarm.settings.title,
            message: NotificationMessage(.alarmMissed, ["group": try groupName(alarm.groupID, on: db)]),
            extra: ["alarm_id": alarm.id, "scheduled_at": missed.scheduledAt.description])
        try enqueue(
            .missedAlarmFollowup, key: "missed_alarm_followup:\(alarm.id):\(scheduled)", groupID: alarm.groupID,
            actorID: nil, recipients: recipients, content: content, notBefore: now,
            expiresAt: now + NotificationType.missedAlarmFollowup.policy.timeToLiveMilliseconds, at: now, on: db)
    }
}

// MARK: - Lifecycle producers (silent; docs/apps.md#lifecycle-pushes)

extension NotificationOutbox {
    /// Queues a silent lifecycle notification to `recipients` — every affected account, the actor
    /// included (their other devices hold copies too), whatever their per-group mute. The row has no
    /// `group_id`: the dispatcher's group and membership re-checks would drop it, since the group or
    /// the membership it tells about is gone by then; only the account must still be active.
    static func lifecycle(
        _ type: NotificationType, key: String, groupID: String, title: String, message: NotificationMessage, extra: [String: String],
        recipients: [String], at now: Int64, on db: any SQLConnection
    ) throws {
        let content = NotificationContent.make(type, groupID: groupID, title: title, message: message, extra: extra)
        try enqueue(
            type, key: key, groupID: nil, actorID: nil, recipients: recipients, content: content, notBefore: now,
            expiresAt: now + type.policy.timeToLiveMilliseconds, at: now, on: db)
    }

    /// Active members of `groupID`, muted or not, in join order.
    static func activeMembers(of groupID: String, on db: any SQLConnection) throws -> [String] {
        try db.query(
            "SELECT user_id FROM group_members WHERE group_id = ?1 AND status = 'active' ORDER BY joined_ms, user_id",
            [.text(groupID)]
        ).compactMap { $0.string("user_id") }
    }

    /// A shared alarm was deleted → `shared_alarm_deleted` (`drop: alarm`) to the group's active members.
    static func alarmDeleted(_ alarm: SharedAlarm, at now: Int64, on db: any SQLConnection) throws {
        try lifecycle(
            .sharedAlarmDeleted, key: "shared_alarm_deleted:\(alarm.id)", groupID: alarm.groupID, title: alarm.settings.title,
            message: NotificationMessage(.alarmDeleted, ["group": try groupName(alarm.groupID, on: db)]),
            extra: ["alarm_id": alarm.id, "drop": "alarm"], recipients: try activeMembers(of: alarm.groupID, on: db), at: now,
            on: db)
    }

    /// A membership ended (`reason` `removed` or `left`) → `group_access_ended` (`drop: group`) to that member.
    static func accessEnded(_ member: GroupMember, group: Group, reason: String, at now: Int64, on db: any SQLConnection) throws {
        let ended = member.removedAt?.milliseconds ?? now
        try lifecycle(
            .groupAccessEnded, key: "group_access_ended:\(group.id):\(member.userID):\(ended)", groupID: group.id,
            title: group.name, message: NotificationMessage(.accessEnded, ["reason": reason]),
            extra: ["drop": "group", "reason": reason], recipients: [member.userID], at: now, on: db)
    }

    /// A group was deleted → `group_deleted` (`drop: group`) to `members` (its active members before).
    static func groupDeleted(_ group: Group, members: [String], at now: Int64, on db: any SQLConnection) throws {
        try lifecycle(
            .groupDeleted, key: "group_deleted:\(group.id)", groupID: group.id, title: group.name,
            message: NotificationMessage(.groupDeleted), extra: ["drop": "group", "reason": "deleted"], recipients: members, at: now, on: db
        )
    }

    /// An operator froze or unfroze a group (`group` as saved, its new `version` in the key) →
    /// `group_frozen` (`drop: group`) or `group_unfrozen` (`refresh: group`) to its active members.
    static func groupFrozen(_ group: Group, frozen: Bool, at now: Int64, on db: any SQLConnection) throws {
        let type: NotificationType = frozen ? .groupFrozen : .groupUnfrozen
        try lifecycle(
            type, key: "\(type.rawValue):\(group.id):\(group.version)", groupID: group.id, title: group.name,
            message: NotificationMessage(frozen ? .groupFrozen : .groupUnfrozen),
            extra: frozen ? ["drop": "group", "reason": "frozen"] : ["refresh": "group"],
            recipients: try activeMembers(of: group.id, on: db), at: now, on: db)
    }
}
