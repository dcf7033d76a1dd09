/// One HTTP request for `OutboundClient.send`: everything a push sender or webhook needs, nothing
/// else (no redirects are followed, no cookies kept, no compression asked for).
public struct OutboundRequest: Sendable {
    /// The request method (an open set: `Method("PROPFIND")` is valid).
    public struct Method: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }

        public static let get = Method("GET")
        public static let head = Method("HEAD")
        public static let post = Method("POST")
        public static let put = Method("PUT")
        public static let delete = Method("DELETE")
    }

    /// Which HTTP version to speak.
    public enum HTTPVersion: Sendable {
        /// HTTP/2 when TLS's ALPN agrees, else HTTP/1.1; plain http is HTTP/1.1 (the default).
        case http2WhereNegotiated
        /// HTTP/2 from the first byte, without negotiation (RFC 9113 §3.3 "prior knowledge"): for
        /// a peer known to speak it, over TLS or plain http.
        case http2PriorKnowledge
        /// HTTP/1.1 only (ALPN offers only `http/1.1`).
        case http1_1
    }

    /// The method.
    public var method: Method
    /// An absolute `https://` URL (`http://` only when `DestinationPolicy.allowPlainHTTP`).
    public var url: String
    /// Fields to send, in order. The client adds `Host`, `Content-Length` and nothing else: curl's
    /// default `Content-Type` for a body and its `Expect: 100-continue` are suppressed.
    public var headers: [HTTPField]
    /// The request body (sent with `Content-Length`; empty sends none, except for POST which sends
    /// `Content-Length: 0`).
    public var body: [UInt8]
    /// The whole exchange's deadline, from when the transfer starts (not while it waits in the
    /// client's queue); nil takes `OutboundLimits.totalTimeout`.
    public var timeout: Duration?
    /// The HTTP version preference.
    public var httpVersion: HTTPVersion
    /// How long DNS plus the TCP and TLS handshakes may take (curl's connect phase, which a peer that
    /// accepts and never finishes TLS holds); nil takes `OutboundLimits.connectTimeout`.
    public var connectTimeout: Duration?

    /// A request; see the properties for each argument.
    public init(
        method: Method = .get, url: String, headers: [HTTPField] = [], body: [UInt8] = [], timeout: Duration? = nil,
        httpVersion: HTTPVersion = .http2WhereNegotiated, connectTimeout: Duration? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.httpVersion = httpVersion
        self.connectTimeout = connectTimeout
    }
}
