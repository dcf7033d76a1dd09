public import Wire

/// An error ready for the wire: one code, a human message, and optional extras (the field that
/// failed, a retry delay, the current document on a version conflict).
public struct APIError: Error, Sendable {
    public var code: ErrorCode
    public var message: String
    /// The JSON field at fault, for validation errors.
    public var field: String?
    /// Seconds for `Retry-After` (429, 503).
    public var retryAfterSeconds: Int?
    /// The current document as JSON (409 SYNC_CONFLICT), sent as `error.current`.
    public var current: [UInt8]?
    /// Extra response headers (e.g. `Allow` on 405).
    public var headers: HTTPHeaders

    public init(
        _ code: ErrorCode, _ message: String, field: String? = nil, retryAfterSeconds: Int? = nil,
        current: [UInt8]? = nil, headers: HTTPHeaders = HTTPHeaders()
    ) {
        self.code = code
        self.message = message
        self.field = field
        self.retryAfterSeconds = retryAfterSeconds
        self.current = current
        self.headers = headers
    }
}
