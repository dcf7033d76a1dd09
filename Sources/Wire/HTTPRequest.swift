/// The request line and header block of one request, as parsed (RFC 9112 §3, §5).
public struct HTTPRequestHead: Sendable {
    public var method: HTTPMethod
    /// The request-target exactly as sent (origin-form `/path?query` in practice).
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    /// Whether the connection stays open after this exchange: 1.1 unless `Connection: close`;
    /// 1.0 only with `Connection: keep-alive`.
    public var keepAlive: Bool
    /// Whether the client sent `Expect: 100-continue` and waits for an interim response. The parser
    /// sets it only for HTTP/1.1 requests that have a body (RFC 9110 §10.1.1).
    public var expectsContinue: Bool

    public init(
        method: HTTPMethod, target: String, version: HTTPVersion = .http1_1,
        headers: HTTPHeaders = HTTPHeaders(), keepAlive: Bool = true, expectsContinue: Bool = false
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.keepAlive = keepAlive
        self.expectsContinue = expectsContinue
    }

    /// The path part of the target (before `?`), still percent-encoded.
    public var path: Substring {
        if let q = queryMark { return target[..<q] }
        return target[...]
    }

    /// The query part of the target (after `?`), still percent-encoded; nil when absent.
    public var query: Substring? {
        guard let q = queryMark else { return nil }
        return target[target.utf8.index(after: q)...]
    }

    /// Where the first `?` is: searched byte by byte (a parsed target is visible ASCII only), not
    /// character by character — every request asks for its path more than once.
    private var queryMark: String.Index? { target.utf8.firstIndex(of: UInt8(ascii: "?")) }
}

/// A complete request: head plus the whole (de-chunked) body.
public struct HTTPRequest: Sendable {
    public var head: HTTPRequestHead
    public var body: [UInt8]

    public init(head: HTTPRequestHead, body: [UInt8] = []) {
        self.head = head
        self.body = body
    }
}
