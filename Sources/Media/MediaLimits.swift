/// Limits on what the decoder is asked to do (docs/attachments.md#limits). Each bounds memory or CPU
/// per upload and is checked from the header, before any pixel is decoded.
public struct MediaLimits: Sendable {
    /// Most pixels (width × height) an image or a PDF's first page may have. 64 MP covers today's
    /// phone cameras (12–50 MP); more is a decompression bomb (a 1 KB PNG may claim 100,000 × 100,000).
    /// More → `MediaError.tooManyPixels`.
    public var maxPixels = 64_000_000
    /// Longest side of a thumbnail, in pixels; a smaller image keeps its size.
    public var thumbnailSide = 256
    /// JPEG quality of re-encoded images (HEIC and JPEG uploads are stored as JPEG).
    public var jpegQuality = 85
    /// JPEG quality of thumbnails.
    public var thumbnailQuality = 80

    /// The defaults above.
    public init() {}

    /// Limits with the given values; omitted ones keep their defaults.
    public init(maxPixels: Int = 64_000_000, thumbnailSide: Int = 256) {
        self.maxPixels = maxPixels
        self.thumbnailSide = thumbnailSide
    }
}
