public import Domain
import Foundation
public import Storage

/// SQL for shared alarms. Every function runs inside the caller's transaction; every
/// mutation appends one change-log batch to `group:<id>` with whole new documents: kind
/// `shared_alarm` (entity id = alarm id), `shared_completion`, and `missed_occurrence` (entity id
/// `<alarm_id>:<scheduled ms>`). Events: `shared_alarm_created`, `shared_alarm_updated`,
/// `shared_alarm_deleted`, `shared_completion`, `missed_alarm_followup`; membership hooks add their
/// alarm changes to the membership batch (`member_removed`, `member_left`, `account_deleted`).
///
/// Access: any active member reads; owner/admin create and edit; the creator or the owner deletes.
/// Non-members get 404 for the group (`GroupStore.access`); an unknown or deleted alarm is
/// `alarmNotFound`.
public enum SharedAlarmStore {
    // MARK: - Reads

    /// The alarm with this id in the group; deleted ones only with `includeDeleted`.
    /// `locked`: the row stays locked until COMMIT (`SQLConnection.forUpdate`), for a `.concurrent`
    /// write that decides on the alarm's state.
    public static func alarm(
        id: String, groupID: String, includeDeleted: Bool = false, locked: Bool = false, on db: any SQLConnection
    ) throws -> SharedAlarm? {
        guard let read = alarmRead(id: id, groupID: groupID, includeDeleted: includeDeleted, locked: locked, on: db) else {
            return nil
        }
        return try db.queryOne(read.sql, read.bindings).map(alarmFromRow)
    }

    /// The statement `alarm(id:groupID:includeDeleted:locked:)` runs; nil for an id no alarm can have.
    static func alarmRead(
        id: String, groupID: String, includeDeleted: Bool = false, locked: Bool, on db: any SQLConnection
    ) -> (sql: String, bindings: [SQLValue])? {
        guard UUIDText.isCanonical(id) else { return nil }
        return (
            "SELECT document FROM shared_alarms WHERE id = ?1 AND group_id = ?2 AND (?3 = 1 OR deleted_ms IS NULL)"
                + (locked ? db.forUpdate : ""),
            [.text(id), .text(groupID), .integer(includeDeleted ? 1 : 0)]
        )
    }

    /// The caller's membership and the live alarm; `notFound("group")` for non-members,
    /// `alarmNotFound` for an unknown or deleted alarm. One round trip (`GroupStore.access(with:)`).
    public static func access(
        groupID: String, alarmID: String, userID: String, locked: Bool = false, on db: any SQLConnection
    ) throws -> (GroupMember, SharedAlarm) {
        let statement = alarmRead(id: alarmID, groupID: groupID, locked: locked, on: db)
        let ((_, member), rows) = try GroupStore.access(
            groupID: groupID, userID: userID, with: statement.map { [$0] } ?? [], on: db)
        guard let alarm = try rows.first?.first.map(alarmFromRow) else { throw DomainError.alarmNotFound }
        return (member, alarm)
    }

    /// What a write to one alarm decides on and writes back (`writeAccess`).
    struct AlarmRead {
        /// The caller's active membership.
        var member: GroupMember
        /// The live alarm, its row locked until COMMIT (`SQLConnection.forUpdate`); nil when unknown or
        /// deleted.
        var alarm: SharedAlarm?
        /// The ids of the group's active members (`activeMemberIDs`).
        var members: [String]
        /// The alarm's live attachments, oldest first: what its documents carry.
        var attachments: [Attachment]
    }

    /// Everything a write to one alarm reads, in one round trip: the caller's membership
    /// (`GroupStore.access`: `notFound("group")` for a non-member), the alarm, locked, the group's
    /// active members and the alarm's attachments. The caller checks the role before the alarm, so
    /// a member who may not write learns nothing about it.
    static func writeAccess(groupID: String, alarmID: String, userID: String, on db: any SQLConnection) throws -> AlarmRead {
        guard let statement = alarmRead(id: alarmID, groupID: groupID, locked: true, on: db) else {
            let (_, member) = try GroupStore.access(groupID: groupID, userID: userID, on: db)
            return AlarmRead(member: member, alarm: nil, members: [], attachments: [])
        }
        let ((_, member), rows) = try GroupStore.access(
            groupID: groupID, userID: userID,
            with: [
                statement, GroupStore.activeMembersRead(groupID: groupID),
                AttachmentStore.liveRead(.sharedAlarm(groupID: groupID, alarmID: alarmID)),
            ], on: db)
        return AlarmRead(
            member: member, alarm: try rows[0].first.map(alarmFromRow),
            members: try rows[1].map { try GroupStore.memberFromRow($0).userID },
            attachments: try rows[2].map(AttachmentStore.attachmentFromRow))
    }

    /// Which alarms a list shows by their archive state (docs/design.md#done-and-archived).
    public enum ArchivedFilter: String, Sendable, CaseIterable {
        /// Those not archived (the group's list by default).
        case exclude = "false"
        /// Only the archived ones.
        case only = "true"
        /// Both (the realtime snapshot: a client shows "Archived (n)" from it).
        case include = "any"
    }

    /// The group's alarms, oldest first, `limit` at a time after `after`; live ones unless
    /// `includeDeleted`; archived ones as `archived` says. The caller must be an active member.
    public static func alarms(
        groupID: String, userID: String, includeDeleted: Bool, archived: ArchivedFilter = .include,
        after: GroupStore.PageKey? = nil, limit: Int = 100, on db: any SQLConnection
    ) throws -> GroupStore.Page<SharedAlarm> {
        _ = try GroupStore.access(groupID: groupID, userID: userID, on: db)
        let archiveClause: String
        switch archived {
        case .exclude: archiveClause = "AND archived_ms IS NULL"
        case .only: archiveClause = "AND archived_ms IS NOT NULL"
        case .include: archiveClause = ""
        }
        let rows = try db.query(
            """
            SELECT document FROM shared_alarms
            WHERE group_id = ?1 AND (?2 = 1 OR deleted_ms IS NULL) \(archiveClause)
              AND (CAST(?3 AS BIGINT) IS NULL OR created_ms > ?3 OR (created_ms = ?3 AND id > ?4))
            ORDER BY created_ms, id
            LIMIT ?5
            """,
            [
                .text(groupID), .integer(includeDeleted ? 1 : 0), SQLValue(after?.milliseconds), SQLValue(after?.id),
                .integer(Int64(limit) + 1),
            ]
        ).map(alarmFromRow)
        return GroupStore.page(rows, limit: limit) {
            GroupStore.PageKey(milliseconds: $0.createdAt.milliseconds, id: $0.id)
        }
    }

    /// The `state` filter of `GET /v1/me/shared-alarms` (docs/design.md#what-do-i-have-to-do), at `now`.
    public enum MineState: String, Sendable, CaseIterable {
        /// The open occurrence's time is ahead (paused alarms included: theirs stands after the pause).
        case upcoming
        /// Its time has come and its grace has not run out.
        case due
        /// Its time has come and it is still unanswered — by me with `assigned=me`, by anyone otherwise —
        /// within the grace or after it (until the sweep marks it missed).
        case overdue
    }

    /// My shared alarms across every group where I am an active member (live, unfrozen groups; live,
    /// enabled alarms with a next fire), in `next_fire_at` then id order, `limit` at a time after
    /// `after`. `assignedToMe`: only alarms whose open occurrence still waits for my answer
    /// (`shared_alarm_pending`). A membership that ends drops its group at once: the join reads
    /// `group_members` as of this transaction.
    public static func mine(
        userID: String, state: MineState?, assignedToMe: Bool, at now: Int64, after: GroupStore.PageKey? = nil,
        limit: Int = 50, on db: any SQLConnection
    ) throws -> GroupStore.Page<SharedAlarm> {
        let stateClause: String
        switch state {
        case nil: stateClause = ""
        case .upcoming: stateClause = "AND a.next_fire_ms > ?3"
        case .due: stateClause = "AND a.next_fire_ms <= ?3 AND a.next_fire_ms + a.grace_ms > ?3"
        case .overdue:
            stateClause = """
                AND a.next_fire_ms <= ?3 AND (?2 = 1 OR NOT EXISTS (
                    SELECT 1 FROM shared_completions c WHERE c.alarm_id = a.id AND c.scheduled_ms = a.next_fire_ms
                      AND c.withdrawn_ms IS NULL))
                """
        }
        let rows = try db.query(
            """
            SELECT a.document AS document FROM group_members m
            JOIN groups g ON g.id = m.group_id
            JOIN shared_alarms a ON a.group_id = m.group_id
            WHERE m.user_id = ?1 AND m.status = 'active' AND g.deleted_ms IS NULL AND g.frozen_ms IS NULL
              AND a.deleted_ms IS NULL AND a.next_fire_ms IS NOT NULL \(stateClause)
              AND (?2 = 0 OR EXISTS (SELECT 1 FROM shared_alarm_pending p WHERE p.alarm_id = a.id AND p.user_id = ?1))
              AND (CAST(?4 AS BIGINT) IS NULL OR a.next_fire_ms > ?4 OR (a.next_fire_ms = ?4 AND a.id > ?5))
            ORDER BY a.next_fire_ms, a.id
            LIMIT ?6
            """,
            [
                .text(userID), .integer(assignedToMe ? 1 : 0), .integer(now), SQLValue(after?.milliseconds),
                SQLValue(after?.id), .integer(Int64(limit) + 1),
            ]
        ).map(alarmFromRow)
        return GroupStore.page(rows, limit: limit) {
            GroupStore.PageKey(milliseconds: $0.nextFireAt?.milliseconds ?? 0, id: $0.id)
        }
    }

    /// Active member ids of the group, owner first then by join time.
    static func activeMemberIDs(groupID: String, on db: any SQLConnection) throws -> [String] {
        try GroupStore.activeMembers(groupID: groupID, on: db).map(\.userID)
    }

    // MARK: - Mutations

    /// A write's `is_enabled` and `paused_until`: nil = unchanged; `pausedUntil: .some(nil)`
    /// clears the pause. `pausedUntil` is taken through `SharedAlarmRules.pauseEnd` here.
    public struct ControlsEdit: Sendable, Equatable {
        public var isEnabled: Bool?
        public var pausedUntil: Timestamp??
        public init(isEnabled: Bool? = nil, pausedUntil: Timestamp?? = nil) {
            self.isEnabled = isEnabled
            self.pausedUntil = pausedUntil
        }

        /// The switches `alarm` gets at `now`: what the edit names, else what is in force (a lapsed
        /// pause is none).
        func resolved(for alarm: SharedAlarm, at now: Int64) throws -> (isEnabled: Bool, pausedUntil: Timestamp?) {
            let pause: Timestamp?
            if let requested = pausedUntil {
                pause = try SharedAlarmRules.pauseEnd(requested, now: now)
            } else {
                pause = alarm.pausedUntil.flatMap { $0.milliseconds > now ? $0 : nil }
            }
            return (isEnabled ?? alarm.isEnabled, pause)
        }
    }

    /// Creates an alarm (owner/admin) from validated `settings`, opening its first occurrence after
    /// `now`. Assignees must be active members. At most `maxAlarmsPerGroup` live alarms per group
    /// (`alarmLimitReached`) and 5 creations per user per minute (`rateLimited`). Event
    /// `shared_alarm_created`.
    /// Safe as a `.concurrent` write: the creator's row and then the group's are locked before
    /// anything is counted, so two creations by one account (its rate window spans its groups) or in
    /// one group (its alarm count) run one after the other, each counting what the one before
    /// committed, while creations elsewhere run beside them; what else it reads (the membership and
    /// role, the owner's subscription, the active members) only `.immediate` writes change.
    public static func create(
        groupID: String, actorID: String, settings: AlarmSettings, controls: ControlsEdit = ControlsEdit(), at now: Int64,
        on db: any SQLConnection
    ) throws -> SharedAlarm {
        let window = SharedAlarmRules.creationWindow
        let ((_, member), rows) = try GroupStore.access(
            groupID: groupID, userID: actorID,
            with: [
                AccountStore.accountLock(userID: actorID, on: db), GroupStore.groupLock(groupID: groupID, on: db),
                (
                    "SELECT created_ms FROM shared_alarms WHERE created_by = ?1 AND created_ms > ?2",
                    [.text(actorID), .integer(window.windowStart(now: now))]
                ),
                ("SELECT COUNT(*) AS live FROM shared_alarms WHERE group_id = ?1 AND deleted_ms IS NULL", [.text(groupID)]),
                GroupStore.activeMembersRead(groupID: groupID),
            ], on: db)
        try GroupStore.requireManager(member)
        try EntitlementStore.checkOwnerSubscription(groupID: groupID, what: "the group is not accepting new shared alarms", at: now, on: db)
        if case .refused(let seconds) = window.evaluate(failureTimes: rows[2].compactMap { $0.int("created_ms") }, now: now) {
            throw DomainError.rateLimited(retryAfterSeconds: seconds)
        }
        if let live = rows[3].first?.int("live"), live >= SharedAlarmRules.maxAlarmsPerGroup {
            throw DomainError.alarmLimitReached
        }
        let members = try rows[4].map { try GroupStore.memberFromRow($0).userID }
        try SharedAlarmRules.checkAssignees(settings.assignedTo, activeMembers: members)
        var alarm = SharedAlarm(
            id: UUID().uuidString.lowercased(), groupID: groupID, createdBy: actorID, settings: settings,
            createdAt: Timestamp(milliseconds: now), updatedAt: Timestamp(milliseconds: now))
        let switches = try controls.resolved(for: alarm, at: now)
        _ = alarm.setControls(isEnabled: switches.isEnabled, pausedUntil: switches.pausedUntil, at: now)
        alarm.openNextOccurrence(after: now, activeMembers: members)
        try db.run(
            """
            INSERT INTO shared_alarms (id, group_id, created_by, document, next_fire_ms, open_ms, grace_ms, version,
                                       created_ms, updated_ms)
            VALUES (?1, ?2, ?3, '{}', NULL, NULL, 1, 1, ?4, ?4)
            """, [.text(alarm.id), .text(groupID), .text(actorID), .integer(now)])
        // A new id: it has no attachments yet.
        let encoded = try write(alarm, on: db)
        try ChangeLog.append(
            [alarmChange(alarm, .added, attachments: [], encoded: encoded)], event: .sharedAlarmCreated, actor: .user(actorID), at: now,
            on: db)
        try NotificationOutbox.alarmChanged(alarm, created: true, actorID: actorID, at: now, on: db)
        return alarm
    }

    /// Edits an alarm (owner/admin). `edit` changes a copy of the settings; the result is validated as
    /// a whole; returns the alarm with its attachments and its change-log document (`Edited`). A stale
    /// `expectedVersion` → `versionConflict` with the current alarm. What the edit
    /// does to the open occurrence is the domain's rule (`SharedAlarm.edit`,
    /// docs/design.md#who-answers-the-open-occurrence). `archived`: `true` archives the alarm as the
    /// rest of the edit leaves it — `alarmNotDone` with the current alarm unless that is done; `false`
    /// takes it out of the archive (docs/design.md#done-and-archived). Nothing changed → nothing
    /// written. Event `shared_alarm_updated`; archiving alone notifies nobody.
    /// Safe as a `.concurrent` write: the alarm row is locked before anything is decided, so edits,
    /// answers (`CompletionStore.record`) and the delete of one alarm run one after the other, each
    /// on what the one before committed; what else it reads (the membership, the group, its members,
    /// the attachments) only `.immediate` writes change.
    public static func update(
        groupID: String, alarmID: String, actorID: String, expectedVersion: Int64?, controls: ControlsEdit = ControlsEdit(),
        archived: Bool? = nil, at now: Int64, on db: any SQLConnection, edit: (inout AlarmSettings) throws -> Void
    ) throws -> Edited {
        let read = try writeAccess(groupID: groupID, alarmID: alarmID, userID: actorID, on: db)
        try GroupStore.requireManager(read.member)
        guard var alarm = read.alarm else { throw DomainError.alarmNotFound }
        if let expectedVersion, expectedVersion != alarm.version {
            throw DomainError.versionConflict(current: DocumentCoding.encode(alarm))
        }
        var settings = alarm.settings
        try edit(&settings)
        settings = try SharedAlarmRules.validate(settings, now: now, keptTiming: settings.timing == alarm.settings.timing)
        let switches = try controls.resolved(for: alarm, at: now)
        var probe = alarm
        let edited =
            settings != alarm.settings
            || probe.setControls(isEnabled: switches.isEnabled, pausedUntil: switches.pausedUntil, at: now)
        let before = alarm
        if edited {
            let added = settings.assignedTo.filter { !alarm.settings.assignedTo.contains($0) }
            try SharedAlarmRules.checkAssignees(added, activeMembers: read.members)
            alarm.edit(
                settings: settings, isEnabled: switches.isEnabled, pausedUntil: switches.pausedUntil, activeMembers: read.members,
                at: now)
        }
        switch archived {
        case true?:
            guard alarm.isDone else { throw DomainError.alarmNotDone(current: DocumentCoding.encode(before)) }
            if alarm.archivedAt == nil { alarm.archivedAt = Timestamp(milliseconds: now) }
        case false?: alarm.archivedAt = nil
        case nil: break
        }
        alarm.unarchiveUnlessDone()
        guard alarm != before else {
            let document = DocumentCoding.encode(WithAttachments(before, attachments: read.attachments))
            return Edited(alarm: before, attachments: read.attachments, document: document)
        }
        // One encode serves the table, the change log and the changed keys.
        let encoded = try save(&alarm, at: now, on: db)
        var change = alarmChange(alarm, .modified, attachments: read.attachments, encoded: encoded)
        // The row's reason names what the person changed (`editedKeys`), for the activity history only.
        change.reason = alarm.editedKeys(from: before, encoded: encoded).joined(separator: ",")
        try ChangeLog.append([change], event: .sharedAlarmUpdated, actor: .user(actorID), at: now, on: db)
        if edited {
            try NotificationOutbox.alarmChanged(alarm, created: false, actorID: actorID, at: now, on: db)
        }
        return Edited(alarm: alarm, attachments: read.attachments, document: change.document ?? [])
    }

    /// What `update` answers.
    public struct Edited: Sendable {
        /// The alarm after the edit.
        public var alarm: SharedAlarm
        /// Its live attachments, oldest first.
        public var attachments: [Attachment]
        /// The alarm with its attachments as the change log holds it (`WithAttachments`' bytes).
        public var document: [UInt8]
    }

    /// Soft-deletes an alarm (its creator or the group owner; anyone else `permissionDenied`).
    /// Event `shared_alarm_deleted` (op `removed`, reason `deleted`); the group's active members'
    /// devices get the silent `shared_alarm_deleted` (`NotificationOutbox.alarmDeleted`).
    /// Safe as a `.concurrent` write, as `update`: the alarm row is locked first, so an edit or an
    /// answer that read the alarm before the delete committed never writes it back alive.
    public static func delete(groupID: String, alarmID: String, actorID: String, at now: Int64, on db: any SQLConnection)
        throws
    {
        let (member, found) = try access(groupID: groupID, alarmID: alarmID, userID: actorID, locked: true, on: db)
        var alarm = found
        guard member.role == .owner || alarm.createdBy == actorID else {
            throw DomainError.permissionDenied("only the alarm's creator or the group owner can delete it")
        }
        alarm.deletedAt = Timestamp(milliseconds: now)
        try save(&alarm, at: now, on: db)
        try ChangeLog.append(
            [
                Change(
                    topic: ChangeLog.groupTopic(groupID), kind: .sharedAlarm, op: .removed, entityID: alarm.id,
                    document: nil, reason: "deleted")
            ],
            event: .sharedAlarmDeleted, actor: .user(actorID), at: now, on: db)
        try NotificationOutbox.alarmDeleted(alarm, at: now, on: db)
    }

    /// Membership hook: `userID` stopped being an active member of `groupID` (removed, left, account
    /// deleted). Unassigns them from every live alarm and hands their pending place in open occurrences
    /// to whoever the assignment names now (`SharedAlarm.dropMember`). Call after the membership row is
    /// updated, in the same transaction; the returned changes join the membership batch.
    static func memberEnded(groupID: String, userID: String, at now: Int64, on db: any SQLConnection) throws -> [Change] {
        let members = try activeMemberIDs(groupID: groupID, on: db).filter { $0 != userID }
        return try conformLiveAlarms(groupID: groupID, at: now, on: db) {
            $0.dropMember(userID, activeMembers: members, at: now)
        }
    }

    /// Membership hook: `userID` became an active member of `groupID` (joined, accepted, re-admitted).
    /// "Everyone" alarms' open occurrences now wait for them too (`SharedAlarm.memberJoined`). Call
    /// after the membership row is written, in the same transaction; the returned changes join the
    /// membership batch.
    static func memberJoined(groupID: String, at now: Int64, on db: any SQLConnection) throws -> [Change] {
        let members = try activeMemberIDs(groupID: groupID, on: db)
        return try conformLiveAlarms(groupID: groupID, at: now, on: db) {
            $0.memberJoined(activeMembers: members, at: now)
        }
    }

    /// Runs `change` on every live alarm of the group, saving those it reports changed; returns their
    /// change-log entries.
    static func conformLiveAlarms(
        groupID: String, at now: Int64, on db: any SQLConnection, _ change: (inout SharedAlarm) -> Bool
    ) throws -> [Change] {
        let alarms = try db.query(
            "SELECT document FROM shared_alarms WHERE group_id = ?1 AND deleted_ms IS NULL ORDER BY created_ms, id",
            [.text(groupID)]
        ).map(alarmFromRow)
        var changes: [Change] = []
        for var alarm in alarms where change(&alarm) {
            try save(&alarm, at: now, on: db)
            changes.append(try alarmChange(alarm, .modified, on: db))
        }
        return changes
    }

    /// The overdue sweep (a timer calls it): every live alarm of a live group whose open
    /// occurrence is still open `grace_minutes` after its time is marked `missed` — once: the next
    /// occurrence opens at once, after the missed one's time (*decision*: no answers are taken for a
    /// missed occurrence; the schedule moves on as if it had closed, without `last_completed_at`).
    /// One batch per alarm, event `missed_alarm_followup`, actor `system`: the missed occurrence
    /// (kind `missed_occurrence`, with `alarm_id`, `pending_uids` naming who did not answer) and the
    /// advanced alarm. At most `limit` alarms per call; returns how many were marked.
    @discardableResult
    public static func sweepOverdue(at now: Int64, limit: Int = 500, on db: any SQLConnection) throws -> Int {
        let alarms = try db.query(
            """
            SELECT a.document FROM shared_alarms a JOIN groups g ON g.id = a.group_id
            WHERE a.deleted_ms IS NULL AND g.deleted_ms IS NULL AND g.frozen_ms IS NULL AND a.open_ms IS NOT NULL
              AND a.open_ms <= ?1 - 60000 AND a.open_ms + a.grace_ms <= ?1  -- grace ≥ 1 minute: the index prunes
            ORDER BY a.open_ms, a.id
            LIMIT ?2
            """, [.integer(now), .integer(Int64(limit))]
        ).map(alarmFromRow)
        for var alarm in alarms {
            let members = try activeMemberIDs(groupID: alarm.groupID, on: db)
            guard let missed = alarm.markMissed(at: now, activeMembers: members) else { continue }
            try save(&alarm, at: now, on: db)
            let record = MissedOccurrence(alarmID: alarm.id, groupID: alarm.groupID, occurrence: missed)
            try ChangeLog.append(
                [
                    Change(
                        topic: ChangeLog.groupTopic(alarm.groupID), kind: .missedOccurrence, op: .added,
                        entityID: "\(alarm.id):\(missed.scheduledAt.milliseconds)",
                        document: DocumentCoding.encode(record)),
                    try alarmChange(alarm, .modified, on: db),
                ],
                event: .missedAlarmFollowup, actor: .system, at: now, on: db)
            try NotificationOutbox.occurrenceMissed(alarm, missed: missed, at: now, on: db)
        }
        return alarms.count
    }

    /// How long a soft-deleted alarm is kept before `purgeDeleted` removes it (docs/design.md#retention: 30 days).
    public static let retentionAfterDeleteMilliseconds: Int64 = 30 * 86_400_000

    /// Retention sweeper: removes alarms soft-deleted before `cutoff`, and with them (ON DELETE
    /// CASCADE) their completions. Returns how many alarms went.
    @discardableResult
    public static func purgeDeleted(deletedBefore cutoff: Int64, on db: any SQLConnection) throws -> Int {
        try db.run("DELETE FROM shared_alarms WHERE deleted_ms < ?1", [.integer(cutoff)])
    }

    /// The change-log document of a missed occurrence.
    struct MissedOccurrence: Encodable {
        var alarmID: String
        var groupID: String
        var occurrence: Occurrence
        enum CodingKeys: String, CodingKey {
            case alarmID = "shared_alarm_id"
            case groupID = "group_id"
            case occurrence
        }
    }

    // MARK: - Rows and changes

    /// Bumps `version` and `updated_at`, clears `archived_at` of an alarm no longer done, then writes
    /// the row.
    @discardableResult
    static func save(_ alarm: inout SharedAlarm, at now: Int64, on db: any SQLConnection) throws -> [UInt8] {
        alarm.unarchiveUnlessDone()
        alarm.version += 1
        alarm.updatedAt = Timestamp(milliseconds: now)
        return try write(alarm, on: db)
    }

    /// Writes the document and the columns copied from it (`pre_alarm_ms`: `SharedAlarm.preAlarmAt`;
    /// `archived_ms`: `archived_at`). Returns the document's bytes.
    @discardableResult
    static func write(_ alarm: SharedAlarm, on db: any SQLConnection) throws -> [UInt8] {
        let encoded = DocumentCoding.encode(alarm)
        let document = String(decoding: encoded, as: UTF8.self)
        try db.run(
            """
            UPDATE shared_alarms SET document = ?2, next_fire_ms = ?3, open_ms = ?4, grace_ms = ?5, version = ?6,
                updated_ms = ?7, deleted_ms = ?8, pre_alarm_ms = ?9, archived_ms = ?10
            WHERE id = ?1
            """,
            [
                .text(alarm.id), .text(document), SQLValue(alarm.nextFireAt?.milliseconds),
                SQLValue(alarm.openOccurrence?.scheduledAt.milliseconds),
                .integer(Int64(alarm.settings.graceMinutes) * 60_000), .integer(alarm.version),
                .integer(alarm.updatedAt.milliseconds), SQLValue(alarm.deletedAt?.milliseconds),
                SQLValue(alarm.preAlarmAt), SQLValue(alarm.archivedAt?.milliseconds),
            ])
        try writePending(alarm, on: db)
        return encoded
    }

    /// Keeps `shared_alarm_pending` (migration 0020) equal to the open occurrence's `pending_uids` of a
    /// live alarm: what `GET /v1/me/shared-alarms?assigned=me` searches.
    static func writePending(_ alarm: SharedAlarm, on db: any SQLConnection) throws {
        try db.run("DELETE FROM shared_alarm_pending WHERE alarm_id = ?1", [.text(alarm.id)])
        guard alarm.deletedAt == nil, let open = alarm.openOccurrence, !open.pendingUIDs.isEmpty else { return }
        let pending = open.pendingUIDs
        let rows = pending.indices.map { "(?1, ?\($0 + 2))" }.joined(separator: ", ")
        try db.run(
            "INSERT INTO shared_alarm_pending (alarm_id, user_id) VALUES \(rows)",
            [.text(alarm.id)] + pending.map { SQLValue.text($0) })
    }

    /// The alarm document, with its live attachments, on its group's topic.
    static func alarmChange(_ alarm: SharedAlarm, _ op: Change.Op, on db: any SQLConnection) throws -> Change {
        alarmChange(
            alarm, op, attachments: try AttachmentStore.live(.sharedAlarm(groupID: alarm.groupID, alarmID: alarm.id), on: db))
    }

    /// `alarmChange` for a caller that read the alarm's live `attachments` in this transaction.
    /// `encoded`: the alarm as `DocumentCoding.encode` wrote it (`save`'s answer), when the caller has
    /// it: the document is then those bytes with the attachments put in, not the alarm encoded again.
    static func alarmChange(_ alarm: SharedAlarm, _ op: Change.Op, attachments: [Attachment], encoded: [UInt8]? = nil) -> Change {
        let withAttachments = WithAttachments(alarm, attachments: attachments)
        let document = encoded.map(withAttachments.encoded(from:)) ?? DocumentCoding.encode(withAttachments)
        return Change(
            topic: ChangeLog.groupTopic(alarm.groupID), kind: .sharedAlarm, op: op, entityID: alarm.id, document: document)
    }

    static func alarmFromRow(_ row: Row) throws -> SharedAlarm {
        guard let text = row.string("document"),
            let alarm = try? DocumentCoding.decode(SharedAlarm.self, from: Array(text.utf8))
        else { throw StoreError.corruptRow(table: "shared_alarms") }
        return alarm
    }
}
