public import Domain
import Foundation
public import Storage

/// Refusals of an attachment write that are not the group's or the alarm's (those are `DomainError`).
public enum AttachmentStoreError: Error, Equatable, Sendable {
    /// The alarm already holds `limit` live attachments.
    case limitReached(limit: Int)
    /// The uploader made `limit` uploads in the last minute; the oldest leaves the window in `retryAfterSeconds`.
    case uploadRateLimited(limit: Int, retryAfterSeconds: Int)
}

/// SQL for `attachments` (migration 0022; docs/attachments.md). An upload and a deletion each append one
/// change (`attachment`, `added` with the document / `removed`) to the group's topic in the same
/// transaction, so subscribers see them like every other change. Only shared-alarm attachments have
/// routes today. Access follows the alarm's: any active member of the group reads; an unknown
/// group or non-member gets `notFound("group")`, an unknown or deleted alarm `alarmNotFound`, an
/// unknown or deleted attachment `notFound("attachment")`.
public enum AttachmentStore {
    /// Uploads one user may make per `uploadWindowMilliseconds` (API seed §13.3: photo upload 3/minute).
    public static let uploadWindowMilliseconds: Int64 = 60_000

    /// The caller may upload to the alarm now: a member, the alarm live, fewer than `maxPerAlarm` live
    /// attachments, fewer than `uploadsPerMinute` uploads by the caller in the last minute. Read before
    /// the expensive decode, and again inside `insert`'s transaction.
    public static func checkUpload(
        groupID: String, alarmID: String, userID: String, maxPerAlarm: Int, uploadsPerMinute: Int, at now: Int64,
        on db: any SQLConnection
    ) throws {
        _ = try SharedAlarmStore.access(groupID: groupID, alarmID: alarmID, userID: userID, on: db)
        let live =
            try db.queryOne(
                "SELECT COUNT(*) AS n FROM attachments WHERE owner_kind = 'shared_alarm' AND owner_id = ?1 AND deleted_ms IS NULL",
                [.text(alarmID)])?.int("n") ?? 0
        if live >= Int64(maxPerAlarm) { throw AttachmentStoreError.limitReached(limit: maxPerAlarm) }
        let recent = try db.query(
            "SELECT created_ms FROM attachments WHERE uploaded_by = ?1 AND created_ms > ?2 ORDER BY created_ms LIMIT ?3",
            [.text(userID), .integer(now - uploadWindowMilliseconds), .integer(Int64(uploadsPerMinute))]
        ).compactMap { $0.int("created_ms") }
        if recent.count >= uploadsPerMinute, let oldest = recent.first {
            let wait = oldest + uploadWindowMilliseconds - now
            throw AttachmentStoreError.uploadRateLimited(
                limit: uploadsPerMinute, retryAfterSeconds: Int(max(1, (wait + 999) / 1000)))
        }
    }

    /// Inserts `attachment` (a new id) after re-running `checkUpload` in this transaction. The caller
    /// has already stored its file and thumbnail.
    public static func insert(
        _ attachment: Attachment, maxPerAlarm: Int, uploadsPerMinute: Int, on db: any SQLConnection
    ) throws {
        guard let groupID = attachment.groupID, attachment.ownerKind == .sharedAlarm else {
            preconditionFailure("only shared-alarm attachments are stored today")
        }
        try checkUpload(
            groupID: groupID, alarmID: attachment.ownerID, userID: attachment.uploadedBy, maxPerAlarm: maxPerAlarm,
            uploadsPerMinute: uploadsPerMinute, at: attachment.createdAt.milliseconds, on: db)
        _ = try db.run(
            """
            INSERT INTO attachments (id, owner_kind, owner_id, group_id, uploaded_by, file_type, uploaded_type, size_bytes,
                width, height, sha256, thumbnail_sha256, thumbnail_width, thumbnail_height, created_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
            """,
            [
                .text(attachment.id), .text(attachment.ownerKind.rawValue), .text(attachment.ownerID), .text(groupID),
                .text(attachment.uploadedBy), .text(attachment.fileType), .text(attachment.uploadedType),
                .integer(attachment.sizeBytes), .integer(Int64(attachment.width)), .integer(Int64(attachment.height)),
                .text(attachment.sha256), .text(attachment.thumbnail.sha256), .integer(Int64(attachment.thumbnail.width)),
                .integer(Int64(attachment.thumbnail.height)), .integer(attachment.createdAt.milliseconds),
            ])
        try ChangeLog.append(
            [
                Change(
                    topic: ChangeLog.groupTopic(groupID), kind: .attachment, op: .added, entityID: attachment.id,
                    document: DocumentCoding.encode(attachment))
            ], event: .attachmentAdded, actor: .user(attachment.uploadedBy), at: attachment.createdAt.milliseconds, on: db)
    }

    /// A fresh attachment id.
    public static func newID() -> String { UUID().uuidString.lowercased() }

    /// The alarm's live attachments, oldest first. The caller must be an active member.
    public static func list(groupID: String, alarmID: String, userID: String, on db: any SQLConnection) throws -> [Attachment] {
        _ = try SharedAlarmStore.access(groupID: groupID, alarmID: alarmID, userID: userID, on: db)
        return try db.query(
            """
            SELECT \(columns) FROM attachments
            WHERE owner_kind = 'shared_alarm' AND owner_id = ?1 AND group_id = ?2 AND deleted_ms IS NULL
            ORDER BY created_ms, id
            """, [.text(alarmID), .text(groupID)]
        ).map(attachmentFromRow)
    }

    /// One live attachment of the alarm, for a member (checked on every download: a removed member gets 404).
    public static func attachment(
        groupID: String, alarmID: String, attachmentID: String, userID: String, on db: any SQLConnection
    ) throws -> Attachment {
        _ = try SharedAlarmStore.access(groupID: groupID, alarmID: alarmID, userID: userID, on: db)
        guard UUIDText.isCanonical(attachmentID),
            let row = try db.queryOne(
                """
                SELECT \(columns) FROM attachments
                WHERE id = ?1 AND owner_kind = 'shared_alarm' AND owner_id = ?2 AND group_id = ?3 AND deleted_ms IS NULL
                """, [.text(attachmentID), .text(alarmID), .text(groupID)])
        else { throw DomainError.notFound("attachment") }
        return try attachmentFromRow(row)
    }

    /// Marks the attachment deleted. Its uploader, or the group's owner or an admin, may; other members
    /// get `permissionDenied`. The file stays until the orphan sweep finds no live row naming it.
    public static func delete(
        groupID: String, alarmID: String, attachmentID: String, actorID: String, at now: Int64, on db: any SQLConnection
    ) throws {
        let (member, _) = try SharedAlarmStore.access(groupID: groupID, alarmID: alarmID, userID: actorID, on: db)
        let attachment = try attachment(
            groupID: groupID, alarmID: alarmID, attachmentID: attachmentID, userID: actorID, on: db)
        guard attachment.uploadedBy == actorID || member.role.canManage else {
            throw DomainError.permissionDenied("only the uploader, the owner or an admin can delete an attachment")
        }
        _ = try db.run("UPDATE attachments SET deleted_ms = ?2 WHERE id = ?1", [.text(attachmentID), .integer(now)])
        try ChangeLog.append(
            [
                Change(
                    topic: ChangeLog.groupTopic(groupID), kind: .attachment, op: .removed, entityID: attachmentID, document: nil)
            ], event: .attachmentDeleted, actor: .user(actorID), at: now, on: db)
    }

    /// Marks deleted the live attachments of shared alarms that are deleted or gone (purged by retention);
    /// returns how many. A group's deletion removes its rows outright (foreign key cascade).
    public static func retireOrphanedRows(at now: Int64, on db: any SQLConnection) throws -> Int {
        try db.run(
            """
            UPDATE attachments SET deleted_ms = ?1
            WHERE deleted_ms IS NULL AND owner_kind = 'shared_alarm' AND NOT EXISTS (
                SELECT 1 FROM shared_alarms s WHERE s.id = attachments.owner_id AND s.deleted_ms IS NULL)
            """, [.integer(now)])
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
