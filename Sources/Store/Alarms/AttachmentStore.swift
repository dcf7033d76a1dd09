public import Domain
import Foundation
public import Storage

/// Refusals of an attachment write that are not the owner's access (those are `DomainError`).
public enum AttachmentStoreError: Error, Equatable, Sendable {
    /// The owner already holds `limit` live attachments.
    case limitReached(limit: Int)
    /// The uploader made `limit` uploads in the last minute; the oldest leaves the window in `retryAfterSeconds`.
    case uploadRateLimited(limit: Int, retryAfterSeconds: Int)
    /// Storing `incomingBytes` more would pass the `scope`'s quota of `limitBytes` (`usedBytes` live now).
    case quotaExceeded(scope: QuotaScope, limitBytes: Int64, usedBytes: Int64, incomingBytes: Int64)

    /// Whose bytes a quota counts.
    public enum QuotaScope: String, Sendable {
        /// Every live attachment the uploader uploaded, whatever it hangs on.
        case user
        /// Every live attachment in the owner's group, whoever uploaded it.
        case group
    }
}

/// SQL for `attachments` (migrations 0022, 0023, 0026; docs/attachments.md). One set of functions for the
/// three owners (`Owner`): only the access check differs. An upload and a deletion each append one
/// change (`attachment`, `added` with the document / `removed`) in the same transaction, to the group's
/// topic for a shared owner and to the user's for a personal alarm, so subscribers see them like every
/// other change.
///
/// Access: a shared owner's attachments are read by any active member of its group (non-members get
/// `notFound("group")`), a personal alarm's by its account only (another account's ids are its own
/// namespace: `alarmNotFound`). An unknown or deleted alarm is `alarmNotFound`, an unknown completion
/// `notFound("completion")`, an unknown or deleted attachment `notFound("attachment")`.
public enum AttachmentStore {
    /// Uploads one user may make per `uploadWindowMilliseconds` (API seed §13.3: photo upload 3/minute).
    public static let uploadWindowMilliseconds: Int64 = 60_000
    /// Owner ids per `IN (…)` list when documents gather their attachments.
    static let idsPerQuery = 400

    /// What an attachment hangs on, named as the request names it.
    public enum Owner: Sendable, Equatable {
        /// A shared alarm of a group.
        case sharedAlarm(groupID: String, alarmID: String)
        /// A personal alarm of `userID` (personal alarm ids are per account).
        case personalAlarm(userID: String, alarmID: String)
        /// A shared completion of a group.
        case sharedCompletion(groupID: String, completionID: String)

        public var kind: Attachment.OwnerKind {
            switch self {
            case .sharedAlarm: .sharedAlarm
            case .personalAlarm: .personalAlarm
            case .sharedCompletion: .sharedCompletion
            }
        }

        public var ownerID: String {
            switch self {
            case .sharedAlarm(_, let id), .personalAlarm(_, let id), .sharedCompletion(_, let id): id
            }
        }

        /// The group of a shared owner; nil for a personal alarm.
        public var groupID: String? {
            switch self {
            case .sharedAlarm(let groupID, _), .sharedCompletion(let groupID, _): groupID
            case .personalAlarm: nil
            }
        }

        /// What keeps owners of one kind apart besides their id: the group, or for a personal alarm its
        /// account (`COALESCE(group_id, uploaded_by)` of its rows).
        var scope: String {
            switch self {
            case .sharedAlarm(let groupID, _), .sharedCompletion(let groupID, _): groupID
            case .personalAlarm(let userID, _): userID
            }
        }

        /// The change-log topic its attachments' changes go to.
        var topic: String {
            switch self {
            case .sharedAlarm(let groupID, _), .sharedCompletion(let groupID, _): ChangeLog.groupTopic(groupID)
            case .personalAlarm(let userID, _): ChangeLog.userTopic(userID)
            }
        }
    }

    /// What the caller may do with an owner's attachments, once it may read them.
    struct Access {
        /// Why the caller may not upload here, or nil when it may.
        var uploadRefusal: String?
        /// The caller may delete anyone's attachment here (a group's owner or admin; a personal alarm's account).
        var managesAll: Bool
    }

    /// The caller may read `owner`'s attachments (else the errors above); what else it may do.
    static func access(_ owner: Owner, userID: String, on db: any SQLConnection) throws -> Access {
        switch owner {
        case .sharedAlarm(let groupID, let alarmID):
            // Every active member uploads (docs/attachments.md#who-may-do-what).
            let (member, _) = try SharedAlarmStore.access(groupID: groupID, alarmID: alarmID, userID: userID, on: db)
            return Access(uploadRefusal: nil, managesAll: member.role.canManage)
        case .personalAlarm(let account, let alarmID):
            guard account == userID, let alarm = try PersonalAlarmStore.find(userID: userID, alarmID: alarmID, on: db),
                alarm.deletedAt == nil
            else { throw DomainError.alarmNotFound }
            return Access(uploadRefusal: nil, managesAll: true)
        case .sharedCompletion(let groupID, let completionID):
            let (_, member) = try GroupStore.access(groupID: groupID, userID: userID, on: db)
            guard let completion = try CompletionStore.completion(id: completionID, groupID: groupID, on: db) else {
                throw DomainError.notFound("completion")
            }
            let refusal = completion.userID == userID ? nil : "only the member who answered can attach files to a completion"
            return Access(uploadRefusal: refusal, managesAll: member.role.canManage)
        }
    }

    /// The limits an upload is checked against (`AttachmentConfiguration`'s).
    public struct Limits: Sendable, Equatable {
        public var maxPerOwner: Int
        public var uploadsPerMinute: Int
        public var userQuotaBytes: Int64
        public var groupQuotaBytes: Int64
        public init(maxPerOwner: Int, uploadsPerMinute: Int, userQuotaBytes: Int64, groupQuotaBytes: Int64) {
            self.maxPerOwner = maxPerOwner
            self.uploadsPerMinute = uploadsPerMinute
            self.userQuotaBytes = userQuotaBytes
            self.groupQuotaBytes = groupQuotaBytes
        }
    }

    /// The caller may upload `incomingBytes` to `owner` now: it may upload there (`access`), the owner
    /// has fewer than `maxPerOwner` live attachments, the caller made fewer than `uploadsPerMinute`
    /// uploads in the last minute, and neither the caller's nor the group's bytes (`quotaBytes`: live
    /// ones and deleted ones whose file is still on disk) would pass their quota. Read before the
    /// expensive decode (with the body's size: a re-encode is rarely larger), and
    /// again inside `insert`'s transaction with the stored size. All counted from the table, so every
    /// instance on one database shares them.
    public static func checkUpload(
        _ owner: Owner, userID: String, incomingBytes: Int64, limits: Limits, at now: Int64, on db: any SQLConnection
    ) throws {
        let access = try access(owner, userID: userID, on: db)
        if let refusal = access.uploadRefusal { throw DomainError.permissionDenied(refusal) }
        let live =
            try db.queryOne(
                """
                SELECT COUNT(*) AS n FROM attachments
                WHERE owner_kind = ?1 AND owner_id = ?2 AND COALESCE(group_id, uploaded_by) = ?3 AND deleted_ms IS NULL
                """, [.text(owner.kind.rawValue), .text(owner.ownerID), .text(owner.scope)])?.int("n") ?? 0
        if live >= Int64(limits.maxPerOwner) { throw AttachmentStoreError.limitReached(limit: limits.maxPerOwner) }
        let recent = try db.query(
            "SELECT created_ms FROM attachments WHERE uploaded_by = ?1 AND created_ms > ?2 ORDER BY created_ms LIMIT ?3",
            [.text(userID), .integer(now - uploadWindowMilliseconds), .integer(Int64(limits.uploadsPerMinute))]
        ).compactMap { $0.int("created_ms") }
        if recent.count >= limits.uploadsPerMinute, let oldest = recent.first {
            let wait = oldest + uploadWindowMilliseconds - now
            throw AttachmentStoreError.uploadRateLimited(
                limit: limits.uploadsPerMinute, retryAfterSeconds: Int(max(1, (wait + 999) / 1000)))
        }
        let incoming = max(1, incomingBytes)
        let userBytes = try quotaBytes(uploadedBy: userID, on: db)
        if userBytes + incoming > limits.userQuotaBytes {
            throw AttachmentStoreError.quotaExceeded(
                scope: .user, limitBytes: limits.userQuotaBytes, usedBytes: userBytes, incomingBytes: incoming)
        }
        if let groupID = owner.groupID {
            let groupBytes = try quotaBytes(groupID: groupID, on: db)
            if groupBytes + incoming > limits.groupQuotaBytes {
                throw AttachmentStoreError.quotaExceeded(
                    scope: .group, limitBytes: limits.groupQuotaBytes, usedBytes: groupBytes, incomingBytes: incoming)
            }
        }
    }

    /// Bytes `userID`'s quota counts (the thumbnail is not counted): every row they uploaded, live or
    /// deleted. A deleted row stays until the orphan sweep has removed its file (`dropTombstones`), so
    /// bytes count until their file is gone and delete-then-upload cannot pass the quota.
    public static func quotaBytes(uploadedBy userID: String, on db: any SQLConnection) throws -> Int64 {
        try db.queryOne(
            "SELECT COALESCE(SUM(size_bytes), 0) AS n FROM attachments WHERE uploaded_by = ?1", [.text(userID)])?.int("n") ?? 0
    }

    /// Bytes `groupID`'s quota counts: every row in the group, live or deleted with its file still there.
    public static func quotaBytes(groupID: String, on db: any SQLConnection) throws -> Int64 {
        try db.queryOne(
            "SELECT COALESCE(SUM(size_bytes), 0) AS n FROM attachments WHERE group_id = ?1", [.text(groupID)])?.int("n") ?? 0
    }

    /// Inserts `attachment` (a new id, hanging on `owner`) after re-running `checkUpload` with its stored
    /// size in this transaction. The caller has already stored its file and thumbnail.
    public static func insert(_ attachment: Attachment, on owner: Owner, limits: Limits, on db: any SQLConnection) throws {
        precondition(
            attachment.ownerKind == owner.kind && attachment.ownerID == owner.ownerID && attachment.groupID == owner.groupID,
            "the attachment names another owner")
        try checkUpload(
            owner, userID: attachment.uploadedBy, incomingBytes: attachment.sizeBytes, limits: limits,
            at: attachment.createdAt.milliseconds, on: db)
        _ = try db.run(
            """
            INSERT INTO attachments (id, owner_kind, owner_id, group_id, uploaded_by, file_type, uploaded_type, size_bytes,
                width, height, sha256, thumbnail_sha256, thumbnail_width, thumbnail_height, created_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
            """,
            [
                .text(attachment.id), .text(attachment.ownerKind.rawValue), .text(attachment.ownerID),
                SQLValue(attachment.groupID), .text(attachment.uploadedBy), .text(attachment.fileType),
                .text(attachment.uploadedType), .integer(attachment.sizeBytes), .integer(Int64(attachment.width)),
                .integer(Int64(attachment.height)), .text(attachment.sha256), .text(attachment.thumbnail.sha256),
                .integer(Int64(attachment.thumbnail.width)), .integer(Int64(attachment.thumbnail.height)),
                .integer(attachment.createdAt.milliseconds),
            ])
        try ChangeLog.append(
            [
                Change(
                    topic: owner.topic, kind: .attachment, op: .added, entityID: attachment.id,
                    document: DocumentCoding.encode(attachment))
            ], event: .attachmentAdded, actor: .user(attachment.uploadedBy), at: attachment.createdAt.milliseconds, on: db)
    }

    /// A fresh attachment id.
    public static func newID() -> String { UUID().uuidString.lowercased() }

    /// The owner's live attachments, oldest first, for a caller who may read them.
    public static func list(_ owner: Owner, userID: String, on db: any SQLConnection) throws -> [Attachment] {
        _ = try access(owner, userID: userID, on: db)
        return try live(owner, on: db)
    }

    /// The owner's live attachments, oldest first, without an access check (the caller made it).
    static func live(_ owner: Owner, on db: any SQLConnection) throws -> [Attachment] {
        let read = liveRead(owner)
        return try db.query(read.sql, read.bindings).map(attachmentFromRow)
    }

    /// The statement `live(_:on:)` runs, for a caller that sends it with others (`attachmentFromRow`
    /// reads its rows).
    static func liveRead(_ owner: Owner) -> (sql: String, bindings: [SQLValue]) {
        (
            """
            SELECT \(columns) FROM attachments
            WHERE owner_kind = ?1 AND owner_id = ?2 AND COALESCE(group_id, uploaded_by) = ?3 AND deleted_ms IS NULL
            ORDER BY created_ms, id
            """, [.text(owner.kind.rawValue), .text(owner.ownerID), .text(owner.scope)]
        )
    }

    /// The live attachments of several owners of one kind in one group (or, for personal alarms, one
    /// account: `scope`), by owner id, each oldest first: what documents carry under `attachments`.
    /// Owners without any are absent. No access check: the caller read the owners themselves.
    public static func live(
        _ kind: Attachment.OwnerKind, scope: String, ownerIDs: [String], on db: any SQLConnection
    ) throws -> [String: [Attachment]] {
        var found: [String: [Attachment]] = [:]
        var start = 0
        let ids = Array(Set(ownerIDs)).sorted()
        while start < ids.count {
            let chunk = ids[start..<min(start + idsPerQuery, ids.count)]
            start += chunk.count
            let placeholders = SQLText.parameters(count: chunk.count, from: 3)
            let rows = try db.query(
                """
                SELECT \(columns) FROM attachments
                WHERE owner_kind = ?1 AND COALESCE(group_id, uploaded_by) = ?2 AND deleted_ms IS NULL
                  AND owner_id IN (\(placeholders))
                ORDER BY created_ms, id
                """, [.text(kind.rawValue), .text(scope)] + chunk.map { SQLValue.text($0) })
            for row in rows {
                let attachment = try attachmentFromRow(row)
                found[attachment.ownerID, default: []].append(attachment)
            }
        }
        return found
    }

    /// `documents` each with its live attachments (`WithAttachments`), in the same order.
    public static func attaching<Document: Encodable & Sendable>(
        _ documents: [Document], kind: Attachment.OwnerKind, scope: String, id: (Document) -> String,
        on db: any SQLConnection
    ) throws -> [WithAttachments<Document>] {
        let byOwner = try live(kind, scope: scope, ownerIDs: documents.map(id), on: db)
        return documents.map { WithAttachments($0, attachments: byOwner[id($0)] ?? []) }
    }

    /// One document with its live attachments.
    public static func attaching<Document: Encodable & Sendable>(
        _ document: Document, to owner: Owner, on db: any SQLConnection
    ) throws -> WithAttachments<Document> {
        WithAttachments(document, attachments: try live(owner, on: db))
    }

    /// One live attachment of the owner, for a caller who may read it (checked on every download: a
    /// removed member gets 404).
    public static func attachment(
        _ owner: Owner, attachmentID: String, userID: String, on db: any SQLConnection
    ) throws -> Attachment {
        _ = try access(owner, userID: userID, on: db)
        return try liveAttachment(owner, attachmentID: attachmentID, on: db)
    }

    static func liveAttachment(_ owner: Owner, attachmentID: String, on db: any SQLConnection) throws -> Attachment {
        guard UUIDText.isCanonical(attachmentID),
            let row = try db.queryOne(
                """
                SELECT \(columns) FROM attachments
                WHERE id = ?1 AND owner_kind = ?2 AND owner_id = ?3 AND COALESCE(group_id, uploaded_by) = ?4
                  AND deleted_ms IS NULL
                """, [.text(attachmentID), .text(owner.kind.rawValue), .text(owner.ownerID), .text(owner.scope)])
        else { throw DomainError.notFound("attachment") }
        return try attachmentFromRow(row)
    }

    /// Marks the attachment deleted. Its uploader, or whoever manages all of the owner's attachments (a
    /// group's owner or admin, a personal alarm's account) may; other readers get `permissionDenied`.
    /// The file stays until the orphan sweep finds no live row naming it.
    public static func delete(
        _ owner: Owner, attachmentID: String, actorID: String, at now: Int64, on db: any SQLConnection
    ) throws {
        let access = try access(owner, userID: actorID, on: db)
        let attachment = try liveAttachment(owner, attachmentID: attachmentID, on: db)
        guard attachment.uploadedBy == actorID || access.managesAll else {
            throw DomainError.permissionDenied("only the uploader, the owner or an admin can delete an attachment")
        }
        _ = try db.run("UPDATE attachments SET deleted_ms = ?2 WHERE id = ?1", [.text(attachmentID), .integer(now)])
        try ChangeLog.append(
            [Change(topic: owner.topic, kind: .attachment, op: .removed, entityID: attachmentID, document: nil)],
            event: .attachmentDeleted, actor: .user(actorID), at: now, on: db)
    }

    /// Account deletion (`GroupStore.deleteAccount`): marks deleted every live attachment `userID`
    /// uploaded, on any owner; returns the `removed` changes of the shared ones for the deletion's
    /// batch (a personal alarm's go with the account's topic). The files go with the orphan sweep once
    /// no live row names them (docs/attachments.md#account-deletion).
    static func eraseUploads(userID: String, at now: Int64, on db: any SQLConnection) throws -> [Change] {
        let rows = try db.query(
            "SELECT id, group_id FROM attachments WHERE uploaded_by = ?1 AND deleted_ms IS NULL ORDER BY created_ms, id",
            [.text(userID)])
        try db.run(
            "UPDATE attachments SET deleted_ms = ?2 WHERE uploaded_by = ?1 AND deleted_ms IS NULL", [.text(userID), .integer(now)])
        return rows.compactMap { row in
            guard let id = row.string("id"), let groupID = row.string("group_id") else { return nil }
            return Change(topic: ChangeLog.groupTopic(groupID), kind: .attachment, op: .removed, entityID: id, document: nil)
        }
    }

    /// Marks deleted the live attachments whose owner is gone: a deleted or purged shared alarm, a
    /// purged completion, a personal alarm that is a tombstone or purged; returns how many. A group's
    /// deletion removes its rows outright (foreign key cascade).
    public static func retireOrphanedRows(at now: Int64, on db: any SQLConnection) throws -> Int {
        try db.run(
            """
            UPDATE attachments SET deleted_ms = ?1
            WHERE deleted_ms IS NULL AND (
                (owner_kind = 'shared_alarm' AND NOT EXISTS (
                    SELECT 1 FROM shared_alarms s WHERE s.id = attachments.owner_id AND s.deleted_ms IS NULL))
                OR (owner_kind = 'shared_completion' AND NOT EXISTS (
                    SELECT 1 FROM shared_completions c WHERE c.id = attachments.owner_id))
                OR (owner_kind = 'personal_alarm' AND NOT EXISTS (
                    SELECT 1 FROM personal_alarms p
                    WHERE p.user_id = attachments.uploaded_by AND p.id = attachments.owner_id AND p.deleted_ms IS NULL)))
            """, [.integer(now)])
    }

    /// Deletes the deleted rows (tombstones) whose file is gone — `fileExists(sha256)` false — so their
    /// bytes stop counting against the quotas; returns how many. The orphan sweep calls it after it
    /// removed files, in a write transaction, which also retires tombstones whose file went earlier.
    public static func dropTombstones(fileExists: (String) -> Bool, on db: any SQLConnection) throws -> Int {
        let names = try db.query("SELECT DISTINCT sha256 FROM attachments WHERE deleted_ms IS NOT NULL", []).compactMap {
            $0.string("sha256")
        }
        var dropped = 0
        for name in names where !fileExists(name) {
            dropped += try db.run("DELETE FROM attachments WHERE deleted_ms IS NOT NULL AND sha256 = ?1", [.text(name)])
        }
        return dropped
    }

    /// Whether a live row names `sha256` as its file or its thumbnail: such a file must stay.
    public static func isReferenced(sha256: String, on db: any SQLConnection) throws -> Bool {
        try db.queryOne(
            """
            SELECT 1 AS hit FROM attachments WHERE deleted_ms IS NULL AND sha256 = ?1
            UNION ALL SELECT 1 AS hit FROM attachments WHERE deleted_ms IS NULL AND thumbnail_sha256 = ?1
            LIMIT 1
            """, [.text(sha256)]) != nil
    }

    static let columns = """
        id, owner_kind, owner_id, group_id, uploaded_by, file_type, uploaded_type, size_bytes, width, height, sha256,
        thumbnail_sha256, thumbnail_width, thumbnail_height, created_ms, deleted_ms
        """

    static func attachmentFromRow(_ row: Row) throws -> Attachment {
        guard let id = row.string("id"), let kind = row.string("owner_kind").flatMap(Attachment.OwnerKind.init(rawValue:)),
            let ownerID = row.string("owner_id"), let uploadedBy = row.string("uploaded_by"),
            let fileType = row.string("file_type"), let uploadedType = row.string("uploaded_type"),
            let size = row.int("size_bytes"), let width = row.int("width"), let height = row.int("height"),
            let sha256 = row.string("sha256"), let thumbnailSHA = row.string("thumbnail_sha256"),
            let thumbnailWidth = row.int("thumbnail_width"), let thumbnailHeight = row.int("thumbnail_height"),
            let created = row.int("created_ms")
        else { throw StoreError.corruptRow(table: "attachments") }
        return Attachment(
            id: id, ownerKind: kind, ownerID: ownerID, groupID: row.string("group_id"), uploadedBy: uploadedBy,
            fileType: fileType, uploadedType: uploadedType, sizeBytes: size, width: Int(width), height: Int(height),
            sha256: sha256,
            thumbnail: Attachment.Thumbnail(sha256: thumbnailSHA, width: Int(thumbnailWidth), height: Int(thumbnailHeight)),
            createdAt: Timestamp(milliseconds: created), deletedAt: row.int("deleted_ms").map(Timestamp.init(milliseconds:)))
    }
}
