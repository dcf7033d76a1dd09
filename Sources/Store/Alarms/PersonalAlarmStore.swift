public import Domain
public import Storage

/// SQL for personal alarms (docs/personal-sync.md): create-or-replace by client id, patch, tombstone,
/// the conflict archive, and the sync read. Every write appends its change (kind `personal_alarm`,
/// topic `user:<id>`) in the same transaction, so the HTTP sync read and the realtime `user` topic
/// carry the same changes under the same seqs.
///
/// Conflicts (data-schema §7.2): a write naming `expectedVersion` must name the stored one, else
/// `versionConflict` with the stored document (409 CA010). A write naming none is last-write-wins
/// on the client's `updated_at`: the newer edit is kept, the other is archived for 30 days — the
/// stored one when the write wins (it replaced a version it did not name), the written one when it
/// loses (the answer is then the stored document, unchanged).
public enum PersonalAlarmStore {
    /// What a create-or-replace did.
    public enum PutOutcome: Sendable, Equatable {
        /// No alarm had that id: created (version 1). `document`: as the change log got it (with its
        /// live attachments), the bytes an answer shows.
        case created(PersonalAlarm, document: [UInt8])
        /// Replaced the stored version (`archived`: the replaced version went to the conflict archive);
        /// `document` as in `created`.
        case replaced(PersonalAlarm, archived: Bool, document: [UInt8])
        /// Last-write-wins kept the stored version; the written one is archived. `document`: the
        /// stored one with its live attachments, the bytes an answer shows.
        case lost(current: PersonalAlarm, document: [UInt8])
    }

    /// The client-settable part of a write.
    public struct Edit: Sendable, Equatable {
        public var settings: AlarmSettings
        public var isEnabled: Bool
        public var vibrationEnabled: Bool
        public var sortOrder: Int
        /// The client's time of the edit (`PersonalAlarmRules.editTime`).
        public var editedAt: Timestamp
        public init(settings: AlarmSettings, isEnabled: Bool, vibrationEnabled: Bool, sortOrder: Int, editedAt: Timestamp) {
            self.settings = settings
            self.isEnabled = isEnabled
            self.vibrationEnabled = vibrationEnabled
            self.sortOrder = sortOrder
            self.editedAt = editedAt
        }
    }

    /// Creates or replaces (`PUT`) alarm `alarmID` of `userID` with `edit` (already validated). A
    /// tombstone is replaced like a live alarm (the id comes back to life), which is what an offline
    /// device re-sending its edit of an alarm deleted elsewhere asks for when it wins.
    public static func put(
        userID: String, alarmID: String, edit: Edit, expectedVersion: Int64?, at now: Int64, on db: any SQLConnection
    ) throws -> PutOutcome {
        let read = try writeRead(userID: userID, alarmID: alarmID, on: db)
        guard let (stored, storedDocument) = read.stored else {
            try checkRoom(userID: userID, on: db)
            var alarm = PersonalAlarm(
                id: alarmID, userID: userID, settings: edit.settings, isEnabled: edit.isEnabled,
                vibrationEnabled: edit.vibrationEnabled, sortOrder: edit.sortOrder, version: 1,
                createdAt: Timestamp(milliseconds: now), updatedAt: edit.editedAt)
            alarm.reschedule(at: now)
            let encoded = try insert(alarm, on: db)
            let document = try append(
                alarm, encoded: encoded, attachments: read.attachments, op: .added, event: .personalAlarmCreated, at: now, on: db)
            return .created(alarm, document: document)
        }
        var archived = false
        if let expectedVersion {
            guard expectedVersion == stored.version else { throw DomainError.versionConflict(current: DocumentCoding.encode(stored)) }
        } else if edit.editedAt < stored.updatedAt {
            var loser = stored
            apply(edit, to: &loser)
            try archive(loser.userID, loser.id, DocumentCoding.encode(loser), at: now, on: db)
            return .lost(current: stored, document: DocumentCoding.encode(WithAttachments(stored, attachments: read.attachments)))
        } else {
            try archive(stored.userID, stored.id, storedDocument, at: now, on: db)
            archived = true
        }
        if stored.deletedAt != nil { try checkRoom(userID: userID, on: db) }
        var alarm = stored
        apply(edit, to: &alarm)
        alarm.deletedAt = nil
        alarm.version = stored.version + 1
        alarm.reschedule(at: now)
        let encoded = try update(alarm, on: db)
        let document = try append(
            alarm, encoded: encoded, attachments: read.attachments, op: stored.deletedAt == nil ? .modified : .added,
            event: .personalAlarmUpdated, at: now, on: db)
        return .replaced(alarm, archived: archived, document: document)
    }

    /// Changes a live alarm (`PATCH`): `change` edits a copy of the stored alarm, the result is
    /// validated by the caller's closure. `expectedVersion` as in `put`; without one the patch applies
    /// to whatever is stored (it names only the fields it changes). `alarmNotFound` for a missing or
    /// deleted alarm.
    public static func patch(
        userID: String, alarmID: String, expectedVersion: Int64?, editedAt: Timestamp, at now: Int64, on db: any SQLConnection,
        change: (inout PersonalAlarm) throws -> Void
    ) throws -> (alarm: PersonalAlarm, document: [UInt8]) {
        let read = try writeRead(userID: userID, alarmID: alarmID, on: db)
        guard let stored = read.stored?.alarm, stored.deletedAt == nil else { throw DomainError.alarmNotFound }
        if let expectedVersion, expectedVersion != stored.version {
            throw DomainError.versionConflict(current: DocumentCoding.encode(stored))
        }
        var alarm = stored
        try change(&alarm)
        alarm.version = stored.version + 1
        alarm.updatedAt = max(editedAt, stored.updatedAt)
        alarm.reschedule(at: now)
        let encoded = try update(alarm, on: db)
        let document = try append(
            alarm, encoded: encoded, attachments: read.attachments, op: .modified, event: .personalAlarmUpdated, at: now, on: db)
        return (alarm, document)
    }

    /// Deletes (`DELETE`): leaves a tombstone that syncs, purged after 30 days. Deleting a tombstone
    /// again changes nothing; `alarmNotFound` when the id never existed; `expectedVersion` as in `put`.
    public static func delete(
        userID: String, alarmID: String, expectedVersion: Int64?, at now: Int64, on db: any SQLConnection
    ) throws {
        guard var alarm = try findLocked(userID: userID, alarmID: alarmID, on: db) else { throw DomainError.alarmNotFound }
        if let expectedVersion, expectedVersion != alarm.version {
            throw DomainError.versionConflict(current: DocumentCoding.encode(alarm))
        }
        guard alarm.deletedAt == nil else { return }
        alarm.deletedAt = Timestamp(milliseconds: now)
        alarm.updatedAt = max(alarm.updatedAt, Timestamp(milliseconds: now))
        alarm.version += 1
        alarm.nextFireAt = nil
        try update(alarm, on: db)
        try appendRemoval(alarm, at: now, on: db)
    }

    /// `find` for a write, which may be `.concurrent` (`TransactionKind`): the account's row is locked
    /// first (`SQLConnection.forUpdate`), and the alarm read by a statement of its own after the lock
    /// (sent in the same round trip), so it sees what the write before it committed. Everything a
    /// personal write decides on hangs off the account — its alarms, their conflict archive, its
    /// completions and the count of live alarms — and the `.immediate` writes that change those
    /// otherwise (account deletion and merge, retention, attachments) never run beside it, so two
    /// personal writes of one account run one after the other, and those of two accounts together.
    static func findLocked(userID: String, alarmID: String, on db: any SQLConnection) throws -> PersonalAlarm? {
        try writeRead(userID: userID, alarmID: alarmID, attachments: false, on: db).stored?.alarm
    }

    /// What a write of one alarm reads, in one round trip after the account's lock (`findLocked`).
    struct WriteRead {
        /// The alarm, live or tombstone, and its document as the row holds it (the bytes
        /// `DocumentCoding.encode` wrote when it was stored: an answer encodes `alarm` again, in
        /// today's shape); nil when the id never existed (or was purged).
        var stored: (alarm: PersonalAlarm, document: [UInt8])?
        /// The alarm's live attachments, oldest first: what its change-log document carries (none
        /// when not asked for).
        var attachments: [Attachment]
    }

    /// `findLocked` with the stored bytes and, with `attachments`, the alarm's live attachments in the
    /// same round trip. Only `.immediate` writes change a personal alarm's attachments, so they hold
    /// for the rest of the write.
    static func writeRead(userID: String, alarmID: String, attachments: Bool = true, on db: any SQLConnection) throws -> WriteRead {
        var statements = [
            AccountStore.accountLock(userID: userID, on: db),
            ("SELECT document FROM personal_alarms WHERE user_id = ?1 AND id = ?2", [.text(userID), .text(alarmID)]),
        ]
        if attachments { statements.append(AttachmentStore.liveRead(.personalAlarm(userID: userID, alarmID: alarmID))) }
        let rows = try db.queryEach(statements)
        let stored = try rows[1].first.map { row in
            let document = Array((row.string("document") ?? "").utf8)
            return (alarm: try DocumentCoding.decode(PersonalAlarm.self, from: document), document: document)
        }
        return WriteRead(stored: stored, attachments: attachments ? try rows[2].map(AttachmentStore.attachmentFromRow) : [])
    }

    /// One alarm, live or tombstone; nil when the id never existed (or was purged).
    public static func find(userID: String, alarmID: String, on db: any SQLConnection) throws -> PersonalAlarm? {
        try db.queryOne(
            "SELECT document FROM personal_alarms WHERE user_id = ?1 AND id = ?2", [.text(userID), .text(alarmID)]
        ).map(alarmFromRow)
    }

    /// The user's live alarms, by `sort_order` then id.
    public static func live(userID: String, on db: any SQLConnection) throws -> [PersonalAlarm] {
        try db.query(
            "SELECT document FROM personal_alarms WHERE user_id = ?1 AND deleted_ms IS NULL ORDER BY id", [.text(userID)]
        ).map(alarmFromRow).sorted { ($0.sortOrder, $0.id) < ($1.sortOrder, $1.id) }
    }

    /// One archived loser.
    public struct Conflict: Sendable, Equatable {
        public var alarm: PersonalAlarm
        public var archivedAt: Timestamp
    }

    /// The archived losers of an alarm, newest first.
    public static func conflicts(userID: String, alarmID: String, on db: any SQLConnection) throws -> [Conflict] {
        try db.query(
            """
            SELECT document, archived_ms FROM personal_alarm_conflicts
            WHERE user_id = ?1 AND alarm_id = ?2 ORDER BY archived_ms DESC, id DESC
            """, [.text(userID), .text(alarmID)]
        ).map { row in Conflict(alarm: try alarmFromRow(row), archivedAt: Timestamp(milliseconds: row.int("archived_ms") ?? 0)) }
    }

    /// What a sync read returns: the personal-alarm changes after `since`, or — when the log no
    /// longer holds every change after `since` — every live alarm, marked `reset`.
    public struct Sync: Sendable, Equatable {
        /// One change: op `removed` carries the tombstone's id only.
        public struct Entry: Sendable, Equatable {
            public var seq: Int64
            public var op: Change.Op
            /// `personalAlarm`, or `personalCompletion` (op `added`: completions are immutable).
            public var kind: ChangeKind
            /// The alarm's id, or the completion's.
            public var entityID: String
            public var document: [UInt8]?
        }
        /// Changes in seq order.
        public var changes: [Entry]
        /// True: `changes` is not a delta but every live alarm (op `added`); drop what is not in it.
        public var reset: Bool
        /// The seq to continue from.
        public var next: Int64
        /// More changes wait after `next` (read again at once).
        public var more: Bool
    }

    /// The sync read for `userID` after `since` (0: from the start), at most about `limit` changes:
    /// the user's personal alarms and personal completions, in seq order. A reset carries every live
    /// alarm and no completion (they are a history, up to 3 years: the device lists
    /// `GET /v1/me/completions` back to the newest it has). Run inside one read transaction.
    public static func sync(userID: String, since: Int64, limit: Int, on db: any SQLConnection) throws -> Sync {
        let latest = try ChangeLog.latestSeq(on: db)
        let bounds = ChangeFeed.Replay(
            oldestRetainedSeq: try ChangeFeed.oldestRetainedSeq(on: db), latestSeq: latest, batches: [], truncated: false)
        // The realtime resume's rule: compaction dropped rows after `since`, or `since` is ahead of
        // the log (another server's, a restored backup's) — the delta cannot be trusted: the whole set.
        guard bounds.reachesBack(to: since) else {
            let all = try live(userID: userID, on: db)
            return Sync(
                changes: all.map {
                    Sync.Entry(seq: latest, op: .added, kind: .personalAlarm, entityID: $0.id, document: DocumentCoding.encode($0))
                }, reset: true,
                next: latest, more: false)
        }
        let rows = try db.query(
            """
            SELECT seq, op, kind, entity_id, document FROM change_log
            WHERE topic = ?1 AND seq > ?2 AND kind IN (?3, ?4) ORDER BY seq LIMIT ?5
            """,
            [
                .text(ChangeLog.userTopic(userID)), .integer(since), .text(ChangeKind.personalAlarm.rawValue),
                .text(ChangeKind.personalCompletion.rawValue), .integer(Int64(limit) + 1),
            ])
        let more = rows.count > limit
        let changes = rows.prefix(limit).map { row in
            Sync.Entry(
                seq: row.int("seq") ?? 0, op: Change.Op(rawValue: row.string("op") ?? "") ?? .modified,
                kind: ChangeKind(rawValue: row.string("kind") ?? ""), entityID: row.string("entity_id") ?? "",
                document: row.string("document").map { Array($0.utf8) })
        }
        // Without more, continue from the log's end (the user's other topics' rows are no news here).
        return Sync(changes: Array(changes), reset: false, next: more ? (changes.last?.seq ?? since) : latest, more: more)
    }

    /// Retention: tombstones (with their completions) and archived losers older than `cutoff`.
    /// Returns rows deleted.
    @discardableResult
    public static func purge(before cutoff: Int64, on db: any SQLConnection) throws -> Int {
        try PersonalCompletionStore.purgeWithTombstones(deletedBefore: cutoff, on: db)
            + db.run("DELETE FROM personal_alarms WHERE deleted_ms < ?1", [.integer(cutoff)])
            + db.run("DELETE FROM personal_alarm_conflicts WHERE archived_ms < ?1", [.integer(cutoff)])
    }

    /// Account deletion (docs/design.md#account-deletion): the account's personal alarms, their
    /// conflict archive and completions, and its synced settings go entirely, and so do their documents
    /// (its personal alarms' attachment documents too) in the change log (set to null with
    /// `redacted_ms`; the rows still chain). In the caller's transaction.
    public static func eraseAll(userID: String, at now: Int64, on db: any SQLConnection) throws {
        try PersonalCompletionStore.eraseAll(userID: userID, on: db)
        try db.run("DELETE FROM personal_alarm_conflicts WHERE user_id = ?1", [.text(userID)])
        try db.run("DELETE FROM personal_alarms WHERE user_id = ?1", [.text(userID)])
        try db.run("DELETE FROM user_settings WHERE user_id = ?1", [.text(userID)])
        try db.run(
            """
            UPDATE change_log SET document = NULL, redacted_ms = ?2
            WHERE topic = ?1 AND kind IN (?3, ?4, ?5, ?6) AND document IS NOT NULL AND redacted_ms IS NULL
            """,
            [
                .text(ChangeLog.userTopic(userID)), .integer(now), .text(ChangeKind.personalAlarm.rawValue),
                .text(ChangeKind.settings.rawValue), .text(ChangeKind.personalCompletion.rawValue),
                .text(ChangeKind.attachment.rawValue),
            ])
    }

    // MARK: - Rows

    private static func apply(_ edit: Edit, to alarm: inout PersonalAlarm) {
        alarm.settings = edit.settings
        alarm.isEnabled = edit.isEnabled
        alarm.vibrationEnabled = edit.vibrationEnabled
        alarm.sortOrder = edit.sortOrder
        alarm.updatedAt = edit.editedAt
    }

    private static func checkRoom(userID: String, on db: any SQLConnection) throws {
        let count = try db.scalar(
            "SELECT COUNT(*) FROM personal_alarms WHERE user_id = ?1 AND deleted_ms IS NULL", [.text(userID)])
        if case .integer(let n) = count, n >= Int64(PersonalAlarmRules.maxAlarmsPerUser) {
            throw DomainError.alarmLimitReached
        }
    }

    /// Inserts the alarm's row; returns its document's bytes.
    private static func insert(_ alarm: PersonalAlarm, on db: any SQLConnection) throws -> [UInt8] {
        let encoded = DocumentCoding.encode(alarm)
        try db.run(
            """
            INSERT INTO personal_alarms (user_id, id, document, version, updated_ms, created_ms, deleted_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL)
            """,
            [
                .text(alarm.userID), .text(alarm.id), .text(String(decoding: encoded, as: UTF8.self)),
                .integer(alarm.version), .integer(alarm.updatedAt.milliseconds), .integer(alarm.createdAt.milliseconds),
            ])
        return encoded
    }

    /// Writes the alarm's row; returns its document's bytes.
    @discardableResult
    private static func update(_ alarm: PersonalAlarm, on db: any SQLConnection) throws -> [UInt8] {
        let encoded = DocumentCoding.encode(alarm)
        try db.run(
            "UPDATE personal_alarms SET document = ?3, version = ?4, updated_ms = ?5, deleted_ms = ?6 WHERE user_id = ?1 AND id = ?2",
            [
                .text(alarm.userID), .text(alarm.id), .text(String(decoding: encoded, as: UTF8.self)),
                .integer(alarm.version), .integer(alarm.updatedAt.milliseconds),
                alarm.deletedAt.map { .integer($0.milliseconds) } ?? .null,
            ])
        return encoded
    }

    /// Archives a version of `userID`'s alarm `alarmID`: `document`, its bytes as `DocumentCoding.encode` wrote them.
    private static func archive(_ userID: String, _ alarmID: String, _ document: [UInt8], at now: Int64, on db: any SQLConnection)
        throws
    {
        try db.run(
            "INSERT INTO personal_alarm_conflicts (user_id, alarm_id, document, archived_ms) VALUES (?1, ?2, ?3, ?4)",
            [.text(userID), .text(alarmID), .text(String(decoding: document, as: UTF8.self)), .integer(now)])
    }

    /// Appends the alarm's document with its live `attachments` to the user's topic; returns the
    /// document's bytes (the answer's body as is). `encoded`: the alarm alone as `update` or `insert`
    /// wrote it, so it is not encoded again.
    private static func append(
        _ alarm: PersonalAlarm, encoded: [UInt8], attachments: [Attachment], op: Change.Op, event: ChangeEvent, at now: Int64,
        on db: any SQLConnection
    ) throws -> [UInt8] {
        let document = WithAttachments(alarm, attachments: attachments).encoded(from: encoded)
        try ChangeLog.append(
            [Change(topic: ChangeLog.userTopic(alarm.userID), kind: .personalAlarm, op: op, entityID: alarm.id, document: document)],
            event: event, actor: .user(alarm.userID), at: now, on: db)
        return document
    }

    /// Appends the alarm's removal (no document) to the user's topic.
    private static func appendRemoval(_ alarm: PersonalAlarm, at now: Int64, on db: any SQLConnection) throws {
        try ChangeLog.append(
            [Change(topic: ChangeLog.userTopic(alarm.userID), kind: .personalAlarm, op: .removed, entityID: alarm.id, document: nil)],
            event: .personalAlarmDeleted, actor: .user(alarm.userID), at: now, on: db)
    }

    private static func alarmFromRow(_ row: Row) throws -> PersonalAlarm {
        try DocumentCoding.decode(PersonalAlarm.self, from: Array((row.string("document") ?? "").utf8))
    }
}
