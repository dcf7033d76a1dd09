public import Wire

/// What the application plugs into the HTTP server. Transport owns sockets and framing;
/// the responder owns meaning.
public protocol HTTPResponder: Sendable {
    /// Handles one complete request. Called on the connection's event loop; must not block.
    /// Must eventually call `sink.send(_:)` exactly once, from any thread (blocking work goes
    /// elsewhere and the sink hops back to the loop).
    func respond(to request: HTTPRequest, context: RequestContext, sink: ResponseSink)
}

/// Facts about the connection a request arrived on.
public struct RequestContext: Sendable {
    /// The peer's IP address as text (`127.0.0.1`, `::1`).
    public var remoteAddress: String
    /// A process-unique connection number, for logs.
    public var connectionID: UInt64
    public init(remoteAddress: String, connectionID: UInt64) {
        self.remoteAddress = remoteAddress
        self.connectionID = connectionID
    }
}

/// Delivers the response for one request back to its connection. Sendable: call it from any
/// thread; the connection hops to its own loop. Calling it more than once is a programming error.
public struct ResponseSink: Sendable {
    let deliver: @Sendable (HTTPResponse) -> Void
    public init(_ deliver: @escaping @Sendable (HTTPResponse) -> Void) { self.deliver = deliver }
    /// Sends `response` on the request's connection, in request order.
    public func send(_ response: HTTPResponse) { deliver(response) }
}
