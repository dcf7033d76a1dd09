/// A file attached to an alarm (docs/attachments.md): its metadata document. The bytes live in
/// the content-addressed file store under `sha256`; the document never carries them.
public struct Attachment: Sendable, Equatable, Codable {
    /// What an attachment hangs on: a shared alarm, a personal alarm (its owner only), or a shared
    /// completion (uploaded by the member who answered).
    public enum OwnerKind: String, Sendable, Codable, CaseIterable {
        case sharedAlarm = "shared_alarm"
        case personalAlarm = "personal_alarm"
        case sharedCompletion = "shared_completion"
    }

    /// The thumbnail: always a JPEG.
    public struct Thumbnail: Sendable, Equatable, Codable {
        public var sha256: String
        public var width: Int
        public var height: Int
        public init(sha256: String, width: Int, height: Int) {
            self.sha256 = sha256
            self.width = width
            self.height = height
        }
    }

    public var id: String
    public var ownerKind: OwnerKind
    public var ownerID: String
    /// The group of a shared owner; nil for a personal alarm.
    public var groupID: String?
    public var uploadedBy: String
    /// MIME type of the stored bytes (`image/jpeg`, `image/png`, `application/pdf`).
    public var fileType: String
    /// What the upload was (`image/heic` uploads are stored as `image/jpeg`).
    public var uploadedType: String
    public var sizeBytes: Int64
    public var width: Int
    public var height: Int
    /// Lowercase hex SHA-256 of the stored bytes: the file's name in the store and the download's `ETag`.
    public var sha256: String
    public var thumbnail: Thumbnail
    public var createdAt: Timestamp
    public var deletedAt: Timestamp?

    public init(
        id: String, ownerKind: OwnerKind, ownerID: String, groupID: String?, uploadedBy: String, fileType: String,
        uploadedType: String, sizeBytes: Int64, width: Int, height: Int, sha256: String, thumbnail: Thumbnail,
        createdAt: Timestamp, deletedAt: Timestamp? = nil
    ) {
        self.id = id
        self.ownerKind = ownerKind
        self.ownerID = ownerID
        self.groupID = groupID
        self.uploadedBy = uploadedBy
        self.fileType = fileType
        self.uploadedType = uploadedType
        self.sizeBytes = sizeBytes
        self.width = width
        self.height = height
        self.sha256 = sha256
        self.thumbnail = thumbnail
        self.createdAt = createdAt
        self.deletedAt = deletedAt
    }

    /// Where the file named `sha256` (64 lowercase hex digits) lives under the store's root:
    /// `ab/cd/<sha256>` (docs/attachments.md#storage) — the server's file store and the backup share it.
    public static func relativePath(of sha256: String) -> String {
        let b = Array(sha256.utf8)
        precondition(b.count == 64, "not a content address")
        return "\(String(decoding: b[0..<2], as: UTF8.self))/\(String(decoding: b[2..<4], as: UTF8.self))/\(sha256)"
    }

    enum CodingKeys: String, CodingKey {
        case id, width, height, sha256, thumbnail
        case ownerKind = "owner_kind"
        case ownerID = "owner_id"
        case groupID = "group_id"
        case uploadedBy = "uploaded_by"
        case fileType = "file_type"
        case uploadedType = "uploaded_type"
        case sizeBytes = "file_size_bytes"
        case createdAt = "created_at"
    }
}

/// A document with its live attachments under `attachments` (oldest first): how the shared alarm, the
/// personal alarm and the shared completion documents carry them (docs/attachments.md#in-the-documents).
/// The attachments live in their own table; the owner's stored document never holds them, so every
/// reader adds the current list when it answers or appends a change.
public struct WithAttachments<Document: Encodable & Sendable>: Encodable, Sendable {
    public var document: Document
    public var attachments: [Attachment]

    public init(_ document: Document, attachments: [Attachment]) {
        self.document = document
        self.attachments = attachments
    }

    enum CodingKeys: String, CodingKey {
        case attachments
    }

    /// The key the attachments take in the document (`DocumentMembers.inserting` puts them there).
    public static var attachmentsKey: String { CodingKeys.attachments.stringValue }

    /// The bytes `DocumentCoding.encode(self)` writes, made from `document` — the document alone as
    /// `DocumentCoding.encode` wrote it — with the attachments put in, not the document encoded again.
    public func encoded(from document: [UInt8]) -> [UInt8] {
        DocumentMembers.inserting(Self.attachmentsKey, DocumentCoding.encode(attachments), into: document)
            ?? DocumentCoding.encode(self)
    }

    /// The document's own keys, then `attachments` (the document must encode as a keyed container).
    public func encode(to encoder: any Encoder) throws {
        try document.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(attachments, forKey: .attachments)
    }
}
