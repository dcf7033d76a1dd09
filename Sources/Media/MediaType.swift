/// A file type the server accepts as an attachment, decided by the content's magic bytes (never by a
/// name or a header). docs/attachments.md#types.
public struct MediaType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The stored `file_type`: the MIME type the file is served as.
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// JPEG (JFIF/EXIF), `FF D8 FF`.
    public static let jpeg = MediaType(rawValue: "image/jpeg")
    /// PNG, the 8-byte signature (RFC 2083 §3.1).
    public static let png = MediaType(rawValue: "image/png")
    /// HEIC/HEIF: an ISO-BMFF `ftyp` box with a HEIF brand (ISO/IEC 23008-12). Stored re-encoded as JPEG.
    public static let heic = MediaType(rawValue: "image/heic")
    /// PDF, `%PDF-` at offset 0 (ISO 32000-1 §7.5.2). Stored as uploaded, always served as a download.
    public static let pdf = MediaType(rawValue: "application/pdf")

    /// Every accepted type.
    public static let all: [MediaType] = [.jpeg, .png, .heic, .pdf]

    /// Whether the type is a raster image (decoded, re-encoded without metadata).
    public var isImage: Bool { self != .pdf }

    public var description: String { rawValue }

    /// The declared `Content-Type` values that name this type (parameters and case ignored by the caller).
    public var declaredNames: [String] {
        switch self {
        case .jpeg: ["image/jpeg", "image/jpg", "image/pjpeg"]
        case .png: ["image/png"]
        case .heic: ["image/heic", "image/heif", "image/heic-sequence", "image/heif-sequence"]
        default: ["application/pdf"]
        }
    }
}
