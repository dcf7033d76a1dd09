public import Media

/// Attachment limits (docs/attachments.md#limits). The seeds differ — API seed §8.1 "5 MB, JPEG, PNG, HEIC,
/// one photo per alarm"; data-schema §3.2 "up to 5 attachments of 10 MB including PDF" — and are settled
/// here: up to 5 attachments of at most 10 MiB each per alarm, images and PDF.
public struct AttachmentConfiguration: Sendable {
    /// Largest upload body, in bytes (`--max-attachment-bytes`). Checked from `Content-Length` before the
    /// body is read (the transport's per-route limit, `HTTPLimits.maxUploadBodyBytes`), and again by the
    /// handler → 413 PHOTO_TOO_LARGE. 10 MiB holds any phone photo and most scanned PDFs.
    public var maxFileBytes = 10 * 1024 * 1024
    /// Live attachments per owner (an alarm, shared or personal, or a completion). More → 409
    /// ATTACHMENT_LIMIT_REACHED.
    public var maxPerAlarm = 5
    /// Bytes of live attachments one user may have uploaded, everywhere (`--attachment-quota-user`):
    /// 1 GiB, about a hundred 10 MiB PDFs or a few hundred phone photos. Counted from the live rows
    /// (so every instance on one database shares it); an upload that would pass it → 409
    /// ATTACHMENT_QUOTA_EXCEEDED. 0: no upload.
    public var userQuotaBytes: Int64 = 1 << 30
    /// Bytes of live attachments in one group, whoever uploaded them (`--attachment-quota-group`):
    /// 2 GiB, so one household's shared photos stay bounded whatever its size. Past it → 409
    /// ATTACHMENT_QUOTA_EXCEEDED.
    public var groupQuotaBytes: Int64 = 2 << 30
    /// Uploads per user per minute (API seed §13.3). More → 429 RATE_LIMITED with `Retry-After`.
    /// Counted from the table, so every instance on one database shares the count.
    public var uploadsPerMinute = 3
    /// How long a file no live row names is kept before the orphan sweep removes it: 7 days.
    /// It covers an upload whose row is still being written, and leaves an operator a window to undo a
    /// mistaken deletion from a backup of the database alone.
    public var orphanGraceMilliseconds: Int64 = 7 * 24 * 3_600_000
    /// Decoder limits (pixels, thumbnail size, JPEG quality, the PDF content bound, the render deadline).
    public var media = MediaLimits()
    /// Threads that decode uploads (`Services.decoding`), a pool of their own: a decode never runs on
    /// the pool that serves static files and answers health checks (two PDF render bombs on
    /// that pool held `GET /index.html` 31–66 s). 1: one core of a small server stays with everything
    /// else, however many uploads arrive.
    public var decodeThreads = 1
    /// Uploads that may wait for a decode thread; past it an upload is refused at once with 503 and
    /// `Retry-After: 1` (`WorkerPool.Saturated`) instead of queueing for minutes. 4: with the 3 uploads
    /// a minute per user and decodes of ≈ 0.1–1 s, a few users uploading at once still queue.
    public var maxQueuedDecodes = 4

    public init() {}
}
