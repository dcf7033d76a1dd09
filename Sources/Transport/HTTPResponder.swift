public import Wire

/// What the application plugs into the HTTP server. Transport owns sockets and framing;
/// the responder owns meaning.
public protocol HTTPResponder: Sendable {
    /// Handles one complete request. Called on the connection's event loop; must not block.
    /// Must eventually call `sink.send(_:)` exactly once, from any thread (blocking work goes
    /// elsewhere and the sink hops back to the loop).
    /// The request is the responder's (`consuming`): it may move it into its own values.
    func respond(to request: consuming HTTPRequest, context: RequestContext, sink: ResponseSink)

    /// The response for a request the transport refuses before it reaches `respond` (malformed or
    /// oversized input, a missed deadline). The connection closes after it. Called on the loop.
    func errorResponse(for error: HTTPParseError) -> HTTPResponse

    /// Decides from its head alone whether a streamed body (an upload, `HTTPRequestHead.streamsBody`)
    /// may be received. Called on the loop once the head is parsed, before a byte of the body is read
    /// from the socket into a file (unauthenticated uploads reached the disk). Must call
    /// `admission.admit()` or `admission.refuse(_:)` exactly once, from any thread; meanwhile the body
    /// waits in the kernel (reading pauses) and the body deadline runs. A refusal is the request's
    /// response and the connection closes after it, the body unread. Default: admits at once.
    func admitBody(of head: HTTPRequestHead, context: RequestContext, admission: BodyAdmission)
}

extension HTTPResponder {
    /// Default: every streamed body is received.
    public func admitBody(of head: HTTPRequestHead, context: RequestContext, admission: BodyAdmission) {
        admission.admit()
    }

    /// Default: a short plain-text body naming the status and reason.
    public func errorResponse(for error: HTTPParseError) -> HTTPResponse {
        HTTPResponse(
            status: error.status, headers: ["Content-Type": "text/plain; charset=utf-8"],
            body: Array("\(error.status.code) \(error.status.reasonPhrase): \(error.reason)\n".utf8))
    }
}

/// Facts about the connection a request arrived on.
public struct RequestContext: Sendable {
    /// The peer's IP address as text (`127.0.0.1`, `::1`).
    public var remoteAddress: String
    /// A process-unique connection number, for logs.
    public var connectionID: UInt64
    /// `CLOCK_MONOTONIC` (`SystemMonotonicClock`) in nanoseconds at the start of the loop turn that
    /// read the request's last bytes, when the server runs on that clock; nil otherwise (a test
    /// clock). A responder timing the request starts here instead of reading the clock again.
    public var arrivalNanoseconds: UInt64?
    public init(remoteAddress: String, connectionID: UInt64, arrivalNanoseconds: UInt64? = nil) {
        self.remoteAddress = remoteAddress
        self.connectionID = connectionID
        self.arrivalNanoseconds = arrivalNanoseconds
    }
}

/// Delivers the response for one request back to its connection. Sendable: call it from any
/// thread; the connection hops to its own loop. Calling it more than once is a programming error
/// (later calls are ignored), and so is never calling it (the connection waits for the answer
/// until the peer or a server shutdown closes it).
///
/// Called on the connection's loop while `respond` is still running, the response is written in
/// the same turn of the loop, together with the answers to any pipelined requests behind it.
public struct ResponseSink: Sendable {
    enum Target: Sendable {
        case closure(@Sendable (HTTPResponse) -> Void)
        case connection(HTTPConnectionHandler, request: UInt64, loop: EventLoop)
    }

    let target: Target

    /// A sink that hands the response to `deliver` (for unit tests of responders, and adapters).
    public init(_ deliver: @escaping @Sendable (HTTPResponse) -> Void) { target = .closure(deliver) }

    init(handler: HTTPConnectionHandler, request: UInt64, loop: EventLoop) {
        target = .connection(handler, request: request, loop: loop)
    }

    /// The loop of the request's connection, for the responder's task to run on
    /// (`Task(executorPreference:)`: its response is then written without a hop); nil for a
    /// closure-backed sink (the global pool).
    public var taskExecutor: (any TaskExecutor)? {
        switch target {
        case .closure: nil
        case .connection(_, _, let loop): loop
        }
    }

    /// Sends `response` on the request's connection, in request order.
    public func send(_ response: HTTPResponse) { deliver(response, field: nil, upgrade: nil) }

    /// Sends `response` with `field` after its own fields, written by the connection straight into the
    /// response head: the response's field array is not copied to append it (a closure-backed sink
    /// gets a response with the field added).
    public func send(_ response: HTTPResponse, adding field: HTTPHeaders.Element) {
        deliver(response, field: field, upgrade: nil)
    }

    /// Sends `response` (normally `101 Switching Protocols`) and then hands the connection to the
    /// handler `makeHandler` creates on the connection's loop. Bytes the client sent after the
    /// upgrade request are passed to the new handler first. The response goes out with
    /// `keepAlive`, whatever the request said; the HTTP exchange on this connection is over.
    /// On a closure-backed sink only the response is delivered.
    public func upgrade(_ response: HTTPResponse, to makeHandler: @escaping @Sendable () -> any ConnectionHandler) {
        deliver(response, field: nil, upgrade: makeHandler)
    }

    /// Runs `handler` once, on the connection's loop, if the connection closes before this request's
    /// response is written: the client went away (a reset, a failed read or write) or the server's
    /// shutdown grace period ran out. An asynchronous responder cancels its work with it
    /// (`sink.onCancel { task.cancel() }`). It never runs once the response is written, nor for a
    /// half-close (a client done sending still reads its answer, RFC 9112 §9.6; such a client that then
    /// goes away is noticed when its response is written, as reading stopped at its FIN). Registered after the
    /// connection closed, it runs at once; a second registration replaces the first. A closure-backed
    /// sink never runs it.
    public func onCancel(_ handler: @escaping @Sendable () -> Void) {
        switch target {
        case .closure:
            return
        case .connection(let connectionHandler, let request, let loop):
            if loop.inEventLoop {
                connectionHandler.setCancellation(request: request, handler)
            } else {
                loop.execute { connectionHandler.setCancellation(request: request, handler) }
            }
        }
    }

    private func deliver(
        _ response: HTTPResponse, field: HTTPHeaders.Element?, upgrade: (@Sendable () -> any ConnectionHandler)?
    ) {
        switch target {
        case .closure(let deliver):
            guard let field else { return deliver(response) }
            var response = response
            response.headers.add(name: field.name, value: field.value)
            deliver(response)
        case .connection(let handler, let request, let loop):
            if loop.inEventLoop {
                handler.deliver(response, adding: field, request: request, upgrade: upgrade)
            } else {
                loop.execute { handler.deliver(response, adding: field, request: request, upgrade: upgrade) }
            }
        }
    }
}

/// The answer to `HTTPResponder.admitBody`: receive the body, or refuse the request from its head.
/// Like `ResponseSink`, it hops to the connection's loop; a second answer, or one for a connection that
/// has moved on or closed, is ignored.
public struct BodyAdmission: Sendable {
    let handler: HTTPConnectionHandler
    let admission: UInt64
    let loop: EventLoop

    /// Receive the body (into its file) and hand the request to `respond` at its end.
    public func admit() { hop { $0.admitted(admission) } }

    /// Answer `response` without reading the body; the connection closes after it.
    public func refuse(_ response: HTTPResponse) { hop { $0.refused(admission, with: response) } }

    private func hop(_ body: @escaping @Sendable (HTTPConnectionHandler) -> Void) {
        let handler = handler
        if loop.inEventLoop { body(handler) } else { loop.execute { body(handler) } }
    }
}
