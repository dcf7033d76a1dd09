/// Why a request was rejected: the status to answer with (then `Connection: close`) and a short
/// reason that is safe to send to the peer — it never echoes request bytes.
public struct HTTPParseError: Error, Equatable, Sendable {
    /// 400, 413, 414, 417, 431, 501 (unknown transfer coding) or 505 (unsupported version).
    public var status: HTTPStatus
    /// Short human text, e.g. "invalid header field name".
    public var reason: String

    public init(status: HTTPStatus, reason: String) {
        self.status = status
        self.reason = reason
    }

    static func badRequest(_ reason: String) -> HTTPParseError {
        HTTPParseError(status: .badRequest, reason: reason)
    }
}
