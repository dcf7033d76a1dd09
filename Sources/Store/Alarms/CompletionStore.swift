public import Domain
import Foundation
public import Storage

/// SQL for shared completions (docs/design.md#occurrences-and-completions). Completions are
/// immutable: they are inserted, listed, marked withdrawn by their author, and — only on
/// account deletion — anonymised.
public enum CompletionStore {
    /// What `record` did.
    public struct Recorded: Sendable {
        /// The member's answer for the occurrence (new, or the one a retry names).
        public var completion: SharedCompletion
        /// The alarm after the answer (advanced if the answer closed its occurrence).
        public var alarm: SharedAlarm
        /// false: a retry; nothing was written.
        public var created: Bool
        /// The completion's live attachments (none for a new one).
        public var completionAttachments: [Attachment]
        /// The alarm's live attachments.
        public var alarmAttachments: [Attachment]
    }

    /// The answer a member gives to an occurrence.
    public struct Answer: Sendable {
        public var status: CompletionStatus
        public var method: CompletionMethod
        public var snoozeCount: Int64
        public var note: String?
        /// The occurrence the member answers; nil = the current open one.
        public var scheduledAt: Int64?

        public init(
            status: CompletionStatus, method: CompletionMethod, snoozeCount: Int64, note: String?, scheduledAt: Int64?
        ) {
            self.status = status
            self.method = method
            self.snoozeCount = snoozeCount
            self.note = note
            self.scheduledAt = scheduledAt
        }
    }

    static let columns =
        "id, group_id, alarm_id, user_id, user_name, scheduled_ms, status, completion_method, snooze_count, note, completed_ms, "
        + "withdrawn_ms"

    /// Records `userID`'s answer to the alarm's occurrence. In order:
    /// 1. the member already answered that occurrence (`scheduled_at`, or the open one) → that record,
    ///    `created: false` (a retry — even after the occurrence closed); an answer naming no occurrence
    ///    within `SharedAlarmRules.unnamedAnswerRetryWindowMilliseconds` of the member's last answer to
    ///    this alarm is that answer's retry too (a double tap never answers the next occurrence);
    /// 2. no open occurrence, or `scheduled_at` names another one → `occurrenceClosed` with the alarm;
    /// 3. the member is not in the occurrence's required set → `permissionDenied`;
    ///    before the occurrence's `answerable_from` (lead window, pause) → `answerTooEarly`;
    /// 4. otherwise the answer is stored and counted; if it meets the rule the occurrence closes and the
    ///    alarm advances (`SharedAlarm.advanceAfterClose`). Event `shared_completion`: the completion
    ///    (`added`) and the alarm (`modified`).
    /// Safe as a `.concurrent` write: the alarm row is locked before anything is decided, so answers
    /// to one alarm run one after the other and close an occurrence exactly once; what else it reads
    /// (the membership, the group, its members) only `.immediate` writes change, and what it writes is
    /// the alarm, a new completion and a new outbox row keyed by that completion.
    public static func record(
        groupID: String, alarmID: String, userID: String, answer: Answer, at now: Int64, on db: any SQLConnection
    ) throws -> Recorded {
        let read = try SharedAlarmStore.writeAccess(groupID: groupID, alarmID: alarmID, userID: userID, on: db)
        guard var alarm = read.alarm else { throw DomainError.alarmNotFound }
        let member = read.member
        let target = answer.scheduledAt ?? alarm.openOccurrence?.scheduledAt.milliseconds
        // A retry (1.): both lookups in one round trip.
        let retries = try db.queryEach(
            [
                target.map { completionRead(alarmID: alarmID, userID: userID, scheduledAt: $0) },
                answer.scheduledAt != nil
                    ? nil
                    : latestCompletionRead(
                        alarmID: alarmID, userID: userID, since: now - SharedAlarmRules.unnamedAnswerRetryWindowMilliseconds),
            ].compactMap { $0 })
        if let row = retries.lazy.compactMap(\.first).first {
            let existing = try completionFromRow(row)
            return Recorded(
                completion: existing, alarm: alarm, created: false,
                completionAttachments: try AttachmentStore.live(
                    .sharedCompletion(groupID: groupID, completionID: existing.id), on: db),
                alarmAttachments: read.attachments)
        }
        guard var open = alarm.openOccurrence, target == open.scheduledAt.milliseconds else {
            throw DomainError.occurrenceClosed(current: DocumentCoding.encode(alarm))
        }
        guard open.requiredUIDs.contains(userID) else {
            throw DomainError.permissionDenied("only members this occurrence is assigned to can answer it")
        }
        if let from = alarm.answerableFrom, now < from {
            throw DomainError.answerTooEarly(
                answerableFrom: Timestamp(milliseconds: from), current: DocumentCoding.encode(alarm))
        }
        let completion = SharedCompletion(
            id: UUID().uuidString.lowercased(), groupID: groupID, alarmID: alarmID, userID: userID,
            userName: member.displayName, scheduledAt: open.scheduledAt, status: answer.status,
            completionMethod: answer.method, snoozeCount: answer.snoozeCount, note: answer.note,
            completedAt: Timestamp(milliseconds: now))
        try db.run(
            "INSERT INTO shared_completions (\(columns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, NULL)",
            [
                .text(completion.id), .text(groupID), .text(alarmID), .text(userID), .text(completion.userName),
                .integer(open.scheduledAt.milliseconds), .text(answer.status.rawValue), .text(answer.method.rawValue),
                .integer(answer.snoozeCount), SQLValue(answer.note), .integer(now),
            ])
        let closed = open.answer(
            userID: userID, status: answer.status, at: Timestamp(milliseconds: now), rule: alarm.settings.completionRule
        )
        alarm.occurrence = open
        if closed {
            alarm.advanceAfterClose(at: now, activeMembers: read.members)
        }
        let encoded = try SharedAlarmStore.save(&alarm, at: now, on: db)
        // A new completion has no attachments yet.
        try ChangeLog.append(
            [
                completionChange(completion, .added, attachments: []),
                SharedAlarmStore.alarmChange(alarm, .modified, attachments: read.attachments, encoded: encoded),
            ],
            event: .sharedCompletion, actor: .user(userID), at: now, on: db)
        try NotificationOutbox.sharedCompletion(completion, alarm: alarm, at: now, on: db)
        return Recorded(
            completion: completion, alarm: alarm, created: true, completionAttachments: [], alarmAttachments: read.attachments)
    }

    /// What `withdraw` did.
    public struct Withdrawn: Sendable {
        /// The completion, now carrying `withdrawn_at`.
        public var completion: SharedCompletion
        /// The alarm after it (its occurrence open again when the answer had closed it).
        public var alarm: SharedAlarm
        /// false: it was already withdrawn; nothing was written.
        public var changed: Bool
    }

    /// Takes back `completionID`, an answer of `userID`'s to the alarm (docs/design.md#answers-retries-and-undo).
    /// In order: an unknown completion, or another alarm's → `notFound("completion")`; someone else's →
    /// `permissionDenied`; already withdrawn → it, `changed: false`; older than
    /// `SharedAlarmRules.answerWithdrawalWindowMilliseconds` → `answerWithdrawalClosed`; then the domain
    /// rule (`SharedAlarm.withdraw`) reopens or keeps the occurrence, or refuses. Event
    /// `shared_completion_withdrawn`: the completion and the alarm (`modified`). A frozen group refuses
    /// at the alarm's write (its trigger). No notification: nobody is told twice about a tap.
    ///
    /// A `.concurrent` write, as `record`: the alarm's row is locked before anything is read
    /// (`SharedAlarmStore.writeAccess`), so a withdrawal and the answers to the same alarm run one
    /// after the other on every instance.
    public static func withdraw(
        groupID: String, alarmID: String, completionID: String, userID: String, at now: Int64, on db: any SQLConnection
    ) throws -> Withdrawn {
        let read = try SharedAlarmStore.writeAccess(groupID: groupID, alarmID: alarmID, userID: userID, on: db)
        guard var alarm = read.alarm else { throw DomainError.alarmNotFound }
        guard var completion = try completion(id: completionID, groupID: groupID, on: db), completion.alarmID == alarmID
        else { throw DomainError.notFound("completion") }
        guard completion.userID == userID else {
            throw DomainError.permissionDenied("only its author can take an answer back")
        }
        if completion.withdrawnAt != nil { return Withdrawn(completion: completion, alarm: alarm, changed: false) }
        guard now - completion.completedAt.milliseconds <= SharedAlarmRules.answerWithdrawalWindowMilliseconds else {
            throw DomainError.answerWithdrawalClosed(
                reason: "answers can be taken back for \(SharedAlarmRules.answerWithdrawalWindowMilliseconds / 60_000) minutes")
        }
        let scheduled = completion.scheduledAt.milliseconds
        let others = try db.query(
            """
            SELECT \(columns) FROM shared_completions
            WHERE alarm_id = ?1 AND scheduled_ms = ?2 AND withdrawn_ms IS NULL AND id <> ?3
            ORDER BY completed_ms, id
            """, [.text(alarmID), .integer(scheduled), .text(completionID)]
        ).map(completionFromRow).compactMap { other in
            other.userID.map { Occurrence.Answer(userID: $0, status: other.status, at: other.completedAt) }
        }
        let previous = try db.scalar(
            """
            SELECT MAX(completed_ms) FROM shared_completions
            WHERE alarm_id = ?1 AND withdrawn_ms IS NULL AND status = 'completed' AND scheduled_ms = (
                SELECT MAX(scheduled_ms) FROM shared_completions
                WHERE alarm_id = ?1 AND withdrawn_ms IS NULL AND status = 'completed' AND scheduled_ms < ?2)
            """, [.text(alarmID), .integer(scheduled)])
        var previousCompletedAt: Timestamp?
        if case .integer(let ms) = previous { previousCompletedAt = Timestamp(milliseconds: ms) }
        try alarm.withdraw(
            completion, otherAnswers: others, previousCompletedAt: previousCompletedAt,
            activeMembers: read.members, at: now)
        try db.run(
            "UPDATE shared_completions SET withdrawn_ms = ?2 WHERE id = ?1", [.text(completionID), .integer(now)])
        completion.withdrawnAt = Timestamp(milliseconds: now)
        let encoded = try SharedAlarmStore.save(&alarm, at: now, on: db)
        try ChangeLog.append(
            [
                try completionChange(completion, .modified, on: db),
                SharedAlarmStore.alarmChange(alarm, .modified, attachments: read.attachments, encoded: encoded),
            ],
            event: .sharedCompletionWithdrawn, actor: .user(userID), at: now, on: db)
        return Withdrawn(completion: completion, alarm: alarm, changed: true)
    }

    /// The member's standing (not withdrawn) answer to one occurrence, if any.
    public static func completion(
        alarmID: String, userID: String, scheduledAt: Int64, on db: any SQLConnection
    ) throws -> SharedCompletion? {
        let read = completionRead(alarmID: alarmID, userID: userID, scheduledAt: scheduledAt)
        return try db.queryOne(read.sql, read.bindings).map(completionFromRow)
    }

    /// The statement `completion(alarmID:userID:scheduledAt:)` runs.
    static func completionRead(alarmID: String, userID: String, scheduledAt: Int64) -> (sql: String, bindings: [SQLValue]) {
        (
            """
            SELECT \(columns) FROM shared_completions
            WHERE alarm_id = ?1 AND user_id = ?2 AND scheduled_ms = ?3 AND withdrawn_ms IS NULL
            """,
            [.text(alarmID), .text(userID), .integer(scheduledAt)]
        )
    }

    /// The statement that reads the member's latest standing answer to the alarm recorded after
    /// `since`, if any.
    static func latestCompletionRead(alarmID: String, userID: String, since: Int64) -> (sql: String, bindings: [SQLValue]) {
        (
            """
            SELECT \(columns) FROM shared_completions WHERE alarm_id = ?1 AND user_id = ?2 AND completed_ms > ?3 AND withdrawn_ms IS NULL
            ORDER BY completed_ms DESC, id DESC LIMIT 1
            """,
            [.text(alarmID), .text(userID), .integer(since)]
        )
    }

    /// The completion with this id in the group, if any (the owner of a completion's attachments).
    public static func completion(id: String, groupID: String, on db: any SQLConnection) throws -> SharedCompletion? {
        guard UUIDText.isCanonical(id) else { return nil }
        return try db.queryOne(
            "SELECT \(columns) FROM shared_completions WHERE id = ?1 AND group_id = ?2", [.text(id), .text(groupID)]
        ).map(completionFromRow)
    }

    /// Filters of the completion lists: `user_id`, `status`, and `completed_at` in `[from, to)`.
    public struct Filter: Sendable, Equatable {
        public var userID: String?
        public var status: CompletionStatus?
        public var from: Int64?
        public var to: Int64?
        public init(userID: String? = nil, status: CompletionStatus? = nil, from: Int64? = nil, to: Int64? = nil) {
            self.userID = userID
            self.status = status
            self.from = from
            self.to = to
        }
    }

    /// Completions of one alarm (`alarmID`) or of the whole group (nil; deleted alarms' included),
    /// newest first, `limit` at a time strictly after `after`. The caller must be an active member;
    /// a named alarm may be deleted (its history stays readable until it is purged).
    public static func completions(
        groupID: String, alarmID: String?, userID: String, filter: Filter, after: GroupStore.PageKey? = nil,
        limit: Int = 100, on db: any SQLConnection
    ) throws -> GroupStore.Page<SharedCompletion> {
        _ = try GroupStore.access(groupID: groupID, userID: userID, on: db)
        if let alarmID, try SharedAlarmStore.alarm(id: alarmID, groupID: groupID, includeDeleted: true, on: db) == nil {
            throw DomainError.alarmNotFound
        }
        let rows = try db.query(
            """
            SELECT \(columns) FROM shared_completions
            WHERE group_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR alarm_id = ?2) AND (CAST(?3 AS TEXT) IS NULL OR user_id = ?3)
              AND (CAST(?4 AS TEXT) IS NULL OR status = ?4)
              AND (CAST(?5 AS BIGINT) IS NULL OR completed_ms >= ?5) AND (CAST(?6 AS BIGINT) IS NULL OR completed_ms < ?6)
              AND (CAST(?7 AS BIGINT) IS NULL OR completed_ms < ?7 OR (completed_ms = ?7 AND id < ?8))
            ORDER BY completed_ms DESC, id DESC
            LIMIT ?9
            """,
            [
                .text(groupID), SQLValue(alarmID), SQLValue(filter.userID), SQLValue(filter.status?.rawValue),
                SQLValue(filter.from), SQLValue(filter.to), SQLValue(after?.milliseconds), SQLValue(after?.id),
                .integer(Int64(limit) + 1),
            ]
        ).map(completionFromRow)
        return GroupStore.page(rows, limit: limit) {
            GroupStore.PageKey(milliseconds: $0.completedAt.milliseconds, id: $0.id)
        }
    }

    /// Account-deletion hook (docs/design.md#account-deletion): the account's completions keep their place in
    /// history as "Deleted User" with no user id. Returns the modified documents for the batch.
    static func anonymise(userID: String, on db: any SQLConnection) throws -> [Change] {
        let ids = try db.query("SELECT id FROM shared_completions WHERE user_id = ?1", [.text(userID)])
            .compactMap { $0.string("id") }
        guard !ids.isEmpty else { return [] }
        try db.run(
            "UPDATE shared_completions SET user_id = NULL, user_name = ?2 WHERE user_id = ?1",
            [.text(userID), .text(GroupStore.deletedUserName)])
        var changes: [Change] = []
        for id in ids {
            if let row = try db.queryOne("SELECT \(columns) FROM shared_completions WHERE id = ?1", [.text(id)]) {
                changes.append(try completionChange(try completionFromRow(row), .modified, on: db))
            }
        }
        return changes
    }

    /// How long completions are kept (docs/design.md#retention: 3 years).
    public static let retentionMilliseconds: Int64 = 3 * 365 * 86_400_000

    /// Retention sweeper: deletes completions recorded before `cutoff`. Returns how many went.
    @discardableResult
    public static func purge(completedBefore cutoff: Int64, on db: any SQLConnection) throws -> Int {
        try db.run("DELETE FROM shared_completions WHERE completed_ms < ?1", [.integer(cutoff)])
    }

    /// The completion document, with its live attachments, on its group's topic.
    static func completionChange(_ completion: SharedCompletion, _ op: Change.Op, on db: any SQLConnection) throws -> Change {
        completionChange(
            completion, op,
            attachments: try AttachmentStore.live(
                .sharedCompletion(groupID: completion.groupID, completionID: completion.id), on: db))
    }

    /// `completionChange` for a caller that knows the completion's live `attachments`.
    static func completionChange(_ completion: SharedCompletion, _ op: Change.Op, attachments: [Attachment]) -> Change {
        Change(
            topic: ChangeLog.groupTopic(completion.groupID), kind: .sharedCompletion, op: op,
            entityID: completion.id, document: DocumentCoding.encode(WithAttachments(completion, attachments: attachments)))
    }

    static func completionFromRow(_ row: Row) throws -> SharedCompletion {
        guard let id = row.string("id"), let groupID = row.string("group_id"), let alarmID = row.string("alarm_id"),
            let name = row.string("user_name"), let scheduled = row.int("scheduled_ms"),
            let status = row.string("status").flatMap(CompletionStatus.init(rawValue:)),
            let method = row.string("completion_method").flatMap(CompletionMethod.init(rawValue:)),
            let snoozes = row.int("snooze_count"), let completed = row.int("completed_ms")
        else { throw StoreError.corruptRow(table: "shared_completions") }
        return SharedCompletion(
            id: id, groupID: groupID, alarmID: alarmID, userID: row.string("user_id"), userName: name,
            scheduledAt: Timestamp(milliseconds: scheduled), status: status, completionMethod: method,
            snoozeCount: snoozes, note: row.string("note"), completedAt: Timestamp(milliseconds: completed),
            withdrawnAt: row.int("withdrawn_ms").map(Timestamp.init(milliseconds:)))
    }
}
