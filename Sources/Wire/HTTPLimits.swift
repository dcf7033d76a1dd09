/// Size limits the request parser enforces (docs/design.md#bad-input). Each is checked as soon as the length it
/// bounds is known — before more bytes are buffered for it — and each maps to one status code.
public struct HTTPLimits: Sendable {
    /// Longest request line, in bytes without its CRLF. 8 KiB is what browsers and proxies accept
    /// for URLs in practice, and our API's targets are short. Longer → 414 URI Too Long, raised as
    /// soon as that many bytes arrived, even before the line's CRLF.
    public var maxRequestLineBytes = 8 * 1024

    /// Longest header block: every field line with its CRLF, excluding the request line and the
    /// empty line that ends the block. Bearer tokens and cookies fit well within 16 KiB; more is a
    /// memory-exhaustion attempt. Larger → 431. The same bound applies to a chunked body's trailers.
    public var maxHeaderBlockBytes = 16 * 1024

    /// Most header field lines in one block (and most trailer fields). Real clients send ~10–20;
    /// each field costs two `String`s. More → 431.
    public var maxHeaderFields = 100

    /// Largest request body: the `Content-Length`, or the de-chunked total. The API takes small JSON
    /// documents; 1 MiB leaves ample headroom. Larger → 413, at head time for `Content-Length`,
    /// and as soon as a chunk-size line pushes the total over for chunked bodies.
    public var maxBodyBytes = 1 << 20

    /// Largest body of an upload (`isUpload`): the one per-route exception to `maxBodyBytes`, for raw file
    /// bodies (attachments, docs/attachments.md). Same rules and timing as `maxBodyBytes`, but the 413 is
    /// `HTTPRequestParser.uploadBodyTooLarge`, so the application can name it (PHOTO_TOO_LARGE). The body
    /// is streamed (`HTTPRequestHead.streamsBody`), never buffered whole by the parser.
    public var maxUploadBodyBytes = 1 << 20

    /// What makes a request an upload (its body streamed, its limit `maxUploadBodyBytes`): a POST whose
    /// path (before `?`) matches one of these patterns, segment by segment, where a `*` segment matches any one non-empty segment
    /// (`/v1/groups/*/alarms/*/attachments`). Empty (the default): no request is. Data, not a callback,
    /// so the parser stays a value the fuzzers build without the application.
    public var uploadPaths: [String] = []

    /// Whether `head` is an upload (see `uploadPaths`).
    public func isUpload(_ head: HTTPRequestHead) -> Bool {
        guard head.method == .post, !uploadPaths.isEmpty else { return false }
        let segments = head.path.split(separator: "/", omittingEmptySubsequences: false)
        return uploadPaths.contains { pattern in
            let expected = pattern.split(separator: "/", omittingEmptySubsequences: false)
            guard expected.count == segments.count else { return false }
            return zip(expected, segments).allSatisfy { want, got in want == "*" ? !got.isEmpty : want == got }
        }
    }

    /// The body limit for `head`: `maxUploadBodyBytes` for an upload, else `maxBodyBytes`.
    public func maxBodyBytes(for head: HTTPRequestHead) -> Int {
        isUpload(head) ? maxUploadBodyBytes : maxBodyBytes
    }

    /// Most bytes of chunk extensions (everything between a chunk size and its CRLF) summed over
    /// one chunked body. Extensions carry nothing we use and are ignored; the bound stops a body
    /// made of extensions alone. More → 400.
    public var maxChunkExtensionBytes = 4 * 1024

    /// Most empty lines (CRLF) tolerated before a request line (RFC 9112 §2.2 asks servers to
    /// ignore at least one, left behind by old clients after a POST body). More → 400.
    public var maxLeadingEmptyLines = 4

    /// The defaults above.
    public init() {}

    /// Limits with the given values; omitted ones keep their defaults.
    public init(
        maxRequestLineBytes: Int = 8 * 1024,
        maxHeaderBlockBytes: Int = 16 * 1024,
        maxHeaderFields: Int = 100,
        maxBodyBytes: Int = 1 << 20,
        maxChunkExtensionBytes: Int = 4 * 1024,
        maxLeadingEmptyLines: Int = 4
    ) {
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeaderBlockBytes = maxHeaderBlockBytes
        self.maxHeaderFields = maxHeaderFields
        self.maxBodyBytes = maxBodyBytes
        self.maxChunkExtensionBytes = maxChunkExtensionBytes
        self.maxLeadingEmptyLines = maxLeadingEmptyLines
    }
}
