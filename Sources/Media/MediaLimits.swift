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
    /// Most bytes a PDF's content may inflate to (`PDFContentBound`): every Flate stream that is not an
    /// image or a font file — page contents, forms, object streams — decompressed and summed, before
    /// anything is rendered. 4 MiB holds the content of any page a person prints (a dense text page
    /// is 5–50 KB, a detailed vector drawing a few MB); past it the render alone could take minutes (issue
    /// 37: a 602-byte PDF whose one stream repeats a fill 1,000 times inflates to 22 KB and rendered 12 s
    /// at 72 dpi; 10 MiB at Flate's ≈ 1,000 : 1 inflates to 10 GB). More → `MediaError.tooCostly`.
    public var maxPDFContentBytes = 4 << 20
    /// How long one decode may render, in milliseconds; past it libvips is told to stop
    /// (`vips_image_set_kill` at its next progress report) → `MediaError.tooCostly`. 10 s is far above
    /// what an accepted photo or PDF takes here (≈ 0.1–1 s) and keeps a decode slot from being held for
    /// minutes. Checked between the tiles libvips computes: one poppler render call is not cut short
    /// (docs/attachments.md#limits).
    public var renderDeadlineMilliseconds = 10_000

    /// The defaults above.
    public init() {}

    /// Limits with the given values; omitted ones keep their defaults.
    public init(
        maxPixels: Int = 64_000_000, thumbnailSide: Int = 256, maxPDFContentBytes: Int = 4 << 20,
        renderDeadlineMilliseconds: Int = 10_000
    ) {
        self.maxPixels = maxPixels
        self.thumbnailSide = thumbnailSide
        self.maxPDFContentBytes = maxPDFContentBytes
        self.renderDeadlineMilliseconds = renderDeadlineMilliseconds
    }
}
