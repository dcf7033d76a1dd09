public import Domain
import Foundation
public import Storage

/// SQL for personal completions (docs/personal-sync.md#completions): record one per occurrence, list,
/// purge, erase. Completions are immutable — inserted, listed, and deleted only by retention or account
/// deletion. Each record appends its change (kind `personal_completion`, op `added`, topic
/// `user:<id>`) in the same transaction, so the user's other devices receive it live.
///
/// Unlike a shared completion, recording one does not change the alarm: the device is the source of
/// truth for ringing and pushes its alarm (the next fire it computed) as an ordinary alarm write.
public enum PersonalCompletionStore {
    /// What `record` did.
    public struct Recorded: Sendable, Equatable {
        public var completion: PersonalCompletion
        /// false: the occurrence already had a completion (a retry); nothing was written.
        public var created: Bool
    }

    /// The device's answer, validated by the caller (`PersonalCompletionRules`, the shared rules).
    public struct Answer: Sendable, Equatable {
        /// The device's own id for the record; nil: the server picks one.
        public var id: String?
        public var scheduledAt: Timestamp
        public var status: CompletionStatus
        public var method: CompletionMethod
        public var snoozeCount: Int64
        public var totalSnoozeMinutes: Int64
        public var note: String?
        public var completedAt: Timestamp

        public init(
            id: String?, scheduledAt: Timestamp, status: CompletionStatus, method: CompletionMethod, snoozeCount: Int64,
            totalSnoozeMinutes: Int64, note: String?, completedAt: Timestamp
        ) {
            self.id = id
            self.scheduledAt = scheduledAt
            self.status = status
            self.method = method
            self.snoozeCount = snoozeCount
            self.totalSnoozeMinutes = totalSnoozeMinutes
            self.note = note
            self.completedAt = completedAt
        }
    }

    /// Records `answer` for alarm `alarmID` of `userID`. In order:
    /// 1. the alarm is unknown or a tombstone → `alarmNotFound`;
    /// 2. the occurrence (`scheduled_at`) already has a completion → that record, `created: false`
    ///    (whatever id and fields the retry carries: the first answer stands, as for shared ones);
    /// 3. `answer.id` already names another of the user's completions → 422 naming `id`;
    /// 4. otherwise stored, with event `personal_completion` on `user:<id>`.
    /// The single writer serialises records, and the unique occurrence index backs rule 2.
    public static func record(
        userID: String, alarmID: String, answer: Answer, at now: Int64, on db: any SQLConnection
    ) throws -> Recorded {
        // May be `.concurrent`: the account's row is locked first (`PersonalAlarmStore.findLocked`).
        guard let alarm = try PersonalAlarmStore.findLocked(userID: userID, alarmID: alarmID, on: db), alarm.deletedAt == nil else {
            throw DomainError.alarmNotFound
        }
        if let existing = try db.queryOne(
            "SELECT document FROM personal_completions WHERE user_id = ?1 AND alarm_id = ?2 AND scheduled_ms = ?3",
            [.text(userID), .text(alarmID), .integer(answer.scheduledAt.milliseconds)])
        {
            return Recorded(completion: try completionFromRow(existing), created: false)
        }
        let id = answer.id ?? UUID().uuidString.lowercased()
        if answer.id != nil,
            try db.queryOne("SELECT id FROM personal_completions WHERE user_id = ?1 AND id = ?2", [.text(userID), .text(id)]) != nil
        {
            throw DomainError.invalidField(field: "id", message: "id already names another completion")
        }
        let completion = PersonalCompletion(
            id: id, userID: userID, alarmID: alarmID, alarmTitle: alarm.settings.title, scheduledAt: answer.scheduledAt,
            status: answer.status, completionMethod: answer.method, snoozeCount: answer.snoozeCount,
            totalSnoozeMinutes: answer.totalSnoozeMinutes, note: answer.note, completedAt: answer.completedAt,
            createdAt: Timestamp(milliseconds: now))
        let document = DocumentCoding.encode(completion)
        try db.run(
            """
            INSERT INTO personal_completions (user_id, id, alarm_id, scheduled_ms, status, completed_ms, document)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            """,
            [
                .text(userID), .text(id), .text(alarmID), .integer(answer.scheduledAt.milliseconds), .text(answer.status.rawValue),
                .integer(answer.completedAt.milliseconds), .text(String(decoding: document, as: UTF8.self)),
            ])
        try ChangeLog.append(
            [
                Change(
                    topic: ChangeLog.userTopic(userID), kind: .personalCompletion, op: .added, entityID: id, document: document)
            ],
            event: .personalCompletion, actor: .user(userID), at: now, on: db)
        return Recorded(completion: completion, created: true)
    }

    /// Filters of the lists: `status` and `completed_at` in `[from, to)` (`CompletionStore.Filter`'s
    /// fields, minus the user: every personal completion is the caller's).
    public struct Filter: Sendable, Equatable {
        public var status: CompletionStatus?
        public var from: Int64?
        public var to: Int64?
        public init(status: CompletionStatus? = nil, from: Int64? = nil, to: Int64? = nil) {
            self.status = status
            self.from = from
            self.to = to
        }
    }

    /// Completions of one alarm (`alarmID`: live or a tombstone — its history stays readable until
    /// the tombstone is purged; unknown → `alarmNotFound`) or of all the user's alarms (nil), newest
    /// `completed_at` first, `limit` at a time strictly after `after`.
    public static func completions(
        userID: String, alarmID: String?, filter: Filter, after: GroupStore.PageKey? = nil, limit: Int = 100,
        on db: any SQLConnection
    ) throws -> GroupStore.Page<PersonalCompletion> {
        if let alarmID, try PersonalAlarmStore.find(userID: userID, alarmID: alarmID, on: db) == nil {
            throw DomainError.alarmNotFound
        }
        let rows = try db.query(
            """
            SELECT document FROM personal_completions
            WHERE user_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR alarm_id = ?2) AND (CAST(?3 AS TEXT) IS NULL OR status = ?3)
              AND (CAST(?4 AS BIGINT) IS NULL OR completed_ms >= ?4) AND (CAST(?5 AS BIGINT) IS NULL OR completed_ms < ?5)
              AND (CAST(?6 AS BIGINT) IS NULL OR completed_ms < ?6 OR (completed_ms = ?6 AND id < ?7))
            ORDER BY completed_ms DESC, id DESC
            LIMIT ?8
            """,
            [
                .text(userID), SQLValue(alarmID), SQLValue(filter.status?.rawValue), SQLValue(filter.from), SQLValue(filter.to),
                SQLValue(after?.milliseconds), SQLValue(after?.id), .integer(Int64(limit) + 1),
            ]
        ).map(completionFromRow)
        return GroupStore.page(rows, limit: limit) { GroupStore.PageKey(milliseconds: $0.completedAt.milliseconds, id: $0.id) }
    }

    /// Retention: completions whose `completed_at` is before `cutoff` (3 years:
    /// `PersonalCompletionRules.retentionMilliseconds`). Returns how many went.
    @discardableResult
    public static func purge(completedBefore cutoff: Int64, on db: any SQLConnection) throws -> Int {
        try db.run("DELETE FROM personal_completions WHERE completed_ms < ?1", [.integer(cutoff)])
    }

    /// The completions of the tombstones deleted before `cutoff` (called by `PersonalAlarmStore.purge`
    /// before it removes those tombstones: a deleted alarm's history goes with it, as a shared one's).
    static func purgeWithTombstones(deletedBefore cutoff: Int64, on db: any SQLConnection) throws -> Int {
        try db.run(
            """
            DELETE FROM personal_completions WHERE EXISTS (
                SELECT 1 FROM personal_alarms a
                WHERE a.user_id = personal_completions.user_id AND a.id = personal_completions.alarm_id AND a.deleted_ms < ?1)
            """, [.integer(cutoff)])
    }

    /// Account deletion: every completion of the account (their change-log documents are nulled by
    /// `PersonalAlarmStore.eraseAll`, which calls this).
    static func eraseAll(userID: String, on db: any SQLConnection) throws {
        try db.run("DELETE FROM personal_completions WHERE user_id = ?1", [.text(userID)])
    }

    static func completionFromRow(_ row: Row) throws -> PersonalCompletion {
        try DocumentCoding.decode(PersonalCompletion.self, from: Array((row.string("document") ?? "").utf8))
    }
}
