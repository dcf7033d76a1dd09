/// An accepted upload, ready to store: the bytes to keep (images re-encoded without metadata, PDFs as
/// uploaded), their type and size in pixels, and a JPEG thumbnail.
public struct ProcessedMedia: Sendable {
    /// The type the stored bytes are (HEIC uploads become `.jpeg`).
    public var type: MediaType
    /// The type the upload was.
    public var uploadedType: MediaType
    /// What to store and serve; empty for a PDF processed from a file (the file is what is stored).
    public var bytes: [UInt8]
    /// Pixels, upright (EXIF orientation applied); a PDF's first page at 72 dpi.
    public var width: Int
    public var height: Int
    /// A JPEG no larger than `MediaLimits.thumbnailSide` on either side.
    public var thumbnail: [UInt8]
    public var thumbnailWidth: Int
    public var thumbnailHeight: Int
}
