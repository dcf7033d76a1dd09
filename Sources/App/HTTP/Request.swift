public import Transport
public import Wire

/// One request as a handler sees it: the parsed HTTP request, route parameters, the connection
/// context and the request id that every log line and error envelope carries.
public struct Request: Sendable {
    public var http: HTTPRequest
    public var parameters: [String: String]
    public var context: RequestContext
    public var requestID: String
    /// The route template that matched (bounded cardinality, for logs and metrics).
    public var route: String
    /// The router's number for `route` (`Router.Match.routeIndex`); nil when no route matched.
    var routeIndex: Int? = nil

    public var method: HTTPMethod { http.head.method }
    public var headers: HTTPHeaders { http.head.headers }

    /// A required path parameter.
    public func parameter(_ name: String) throws(APIError) -> String {
        guard let value = parameters[name] else { throw APIError(.notFound, "not found") }
        return value
    }

    /// The bearer token from `Authorization: Bearer <token>`, if the header has that form.
    public var bearerToken: String? {
        guard let value = headers[first: "authorization"] else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, HTTPHeaders.namesEqual(String(parts[0]), "bearer") else { return nil }
        return String(parts[1].trimmingASCIIWhitespace())
    }
}

/// What a route runs. Synchronous handlers answer inline on the event loop (no hop, no task);
/// asynchronous ones run as a task and may await the database or the worker pool.
public enum Handler: Sendable {
    case sync(@Sendable (Request) throws -> HTTPResponse)
    case async(@Sendable (Request) async throws -> HTTPResponse)
    /// Gets the raw sink (WebSocket upgrade) on the event loop and decides there, or hands back the
    /// part that must read the database (`UpgradeOutcome.pending`, run as a task): an upgrade that
    /// needs no read never waits for a task. What it throws is answered through `ErrorMapping`.
    case upgrade(@Sendable (Request, ResponseSink) throws -> UpgradeOutcome)
}

/// What an upgrade handler decided.
public enum UpgradeOutcome: Sendable {
    /// Answer with this response; the connection stays HTTP.
    case respond(HTTPResponse)
    /// The handler took the connection over (access-logged as 101).
    case upgraded
    /// The decision needs a database read: run as a task, it returns the response to send, or nil
    /// once it took the connection over; what it throws is answered through `ErrorMapping`.
    case pending(@Sendable () async throws -> HTTPResponse?)
}
