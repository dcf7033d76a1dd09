import Hashing
import Synchronization
public import Transport
public import Wire

/// `GET /metrics`: the Prometheus text exposition of a `ChronirMetrics`, behind an optional bearer
/// token (compared in constant time). A missing or wrong token gets 401 AUTH_REQUIRED with
/// `WWW-Authenticate: Bearer`, and the same envelope as every other error.
struct MetricsEndpoint: Sendable {
    /// Where the exposition is served, on either port.
    static let path = "/metrics"
    /// Prometheus text format 0.0.4.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    let metrics: ChronirMetrics
    /// The expected token's bytes; nil: no token asked for.
    let token: [UInt8]?

    init(metrics: ChronirMetrics, token: String?) {
        self.metrics = metrics
        self.token = token.map { Array($0.utf8) }
    }

    /// The exposition, or 401 when a token is required and the request lacks it.
    func respond(_ request: Request) throws(APIError) -> HTTPResponse {
        if let token {
            guard let presented = request.bearerToken, ConstantTime.equals(Array(presented.utf8), token) else {
                throw APIError(
                    .authRequired, "metrics need the configured bearer token",
                    headers: ["WWW-Authenticate": #"Bearer realm="metrics""#])
            }
        }
        return HTTPResponse(status: .ok, headers: ["Content-Type": Self.contentType], body: metrics.exposition())
    }
}

/// The responder of the separate metrics listener (`--metrics-port`): `GET`/`HEAD /metrics` and
/// nothing else (404). Requests here are not counted in the HTTP series of the API.
public final class MetricsResponder: HTTPResponder {
    private let endpoint: MetricsEndpoint
    private let requestCounter = AtomicCounter()

    /// Serves `metrics`, asking for `token` when it is not nil.
    public init(metrics: ChronirMetrics, token: String?) {
        endpoint = MetricsEndpoint(metrics: metrics, token: token)
    }

    public func respond(to http: HTTPRequest, context: RequestContext, sink: ResponseSink) {
        let requestID = "metrics-\(requestCounter.next())"
        let request = Request(
            http: http, parameters: [:], context: context, requestID: requestID, route: MetricsEndpoint.path)
        let response: HTTPResponse
        switch router.match(http.head.method, path: http.head.path) {
        case .matched:
            do { response = try endpoint.respond(request) } catch {
                response = ErrorMapping.response(for: error, requestID: requestID)
            }
        case .methodNotAllowed(let allowed):
            let error = APIError(
                .methodNotAllowed, "\(http.head.method) is not allowed here",
                headers: ["Allow": allowed.map(\.rawValue).joined(separator: ", ")])
            response = ErrorMapping.response(for: error, requestID: requestID)
        case .notFound, .badPath:
            response = ErrorMapping.response(
                for: APIError(.notFound, "this port serves \(MetricsEndpoint.path) only"), requestID: requestID)
        }
        var stamped = response
        stamped.headers.add(name: "X-Request-Id", value: requestID)
        sink.send(stamped)
    }

    public func errorResponse(for error: HTTPParseError) -> HTTPResponse {
        ErrorMapping.response(for: ErrorMapping.apiError(for: error), requestID: "metrics-\(requestCounter.next())")
    }

    /// One route: GET (and so HEAD) `/metrics`.
    private let router: Router<Void> = {
        var router = Router<Void>()
        router.add(.get, MetricsEndpoint.path, ())
        return router
    }()
}
