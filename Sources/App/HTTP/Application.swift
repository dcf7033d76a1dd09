import Domain
import Hashing
import Logging
import Storage
import Store
public import Transport
public import Wire

/// The HTTP application: routes a request, runs its handler (inline when synchronous, as a task when
/// asynchronous), maps any error to the envelope, stamps `X-Request-Id`, writes the access log line.
///
/// A request's task prefers its connection's event loop (`ResponseSink.taskExecutor`): between its
/// awaits a handler runs on the loop, so its code must stay short — hashing, media decoding and file
/// I/O go to the `WorkerPool`s, the database to its own queues, a body over `maxBodyBytesOnLoop` is
/// decoded on the global pool — as a TLS handshake on the loop is.
public final class Application: HTTPResponder {
    public let services: Services
    let router: Router<Handler>
    /// The static file server, when the public directory exists.
    public let staticFiles: StaticFiles?
    let accessLog: AccessLog?
    /// The realtime feed behind `GET /v1/realtime`.
    public let realtime: RealtimeFeed
    /// `<8 hex digits>-`: this process's request ids are `<prefix><counter>`.
    private let requestIDPrefix: String
    /// `AppConfiguration.trustedProxies`, read once.
    private let trustedProxies: Set<String>
    /// Streamed-body routes' admissions by route template (`AttachmentRoutes.admissions`).
    private let bodyAdmissions: [String: @Sendable (Request) async throws -> Void]
    private let requestCounter = AtomicCounter()

    /// What request durations are measured on: `RequestContext.arrivalNanoseconds`'s clock.
    private static let clock = SystemMonotonicClock()

    /// Longest `X-Request-Id` accepted from a client; longer or odd ones are replaced.
    public static let maxRequestIDLength = 128

    /// Largest request body whose handler task runs on its connection's loop. A larger one (up to
    /// `HTTPLimits.maxBodyBytes`, 1 MiB) runs on the global pool: decoding it takes milliseconds, and
    /// the loop's other connections must not wait for that.
    public static let maxBodyBytesOnLoop = 64 * 1024

    /// Where a request's task runs: its connection's loop (`ResponseSink.taskExecutor`), or the global
    /// pool (nil) for a body over `maxBodyBytesOnLoop`.
    static func taskExecutor(bodyBytes: Int, loop: (any TaskExecutor)?) -> (any TaskExecutor)? {
        bodyBytes <= maxBodyBytesOnLoop ? loop : nil
    }

    /// `accessLog` nil writes no access lines.
    public init(services: Services, accessLog: AccessLog?) {
        self.services = services
        self.accessLog = accessLog
        staticFiles = services.config.publicDirectory.flatMap(StaticFiles.init(directory:))
        requestIDPrefix = Hex.encode(SecureRandom.bytes(4)) + "-"
        trustedProxies = services.config.trustedProxies
        realtime = RealtimeFeed(services: services)
        services.metrics.observeEntitlements(database: services.database, clock: services.clock)
        // Route handlers write through `ClaimingDatabase`: a request's Idempotency-Key is claimed in its
        // first write transaction. The feed and the background loops keep the engine's database.
        var services = services
        services.database = ClaimingDatabase(base: services.database)
        bodyAdmissions = AttachmentRoutes.admissions(services: services)
        var router = Router<Handler>()
        HealthRoutes.register(in: &router, services: services, feed: realtime.health)
        ConfigRoutes.register(in: &router, services: services)
        DeepLinkRoutes.register(in: &router, services: services)
        AccountRoutes.register(in: &router, services: services)
        AnonymousRoutes.register(in: &router, services: services)
        EmailRoutes.register(in: &router, services: services)
        PasswordResetRoutes.register(in: &router, services: services)
        SessionRoutes.register(in: &router, services: services)
        IdentityRoutes.register(in: &router, services: services)
        SignInProviderRoutes.register(in: &router, services: services)
        GroupRoutes.register(in: &router, services: services)
        InviteCodeRoutes.register(in: &router, services: services)
        LandingPreviewRoutes.register(in: &router, services: services)
        GroupActivityRoutes.register(in: &router, services: services)
        GroupInvitationRoutes.register(in: &router, services: services)
        SharedAlarmRoutes.register(in: &router, services: services)
        AttachmentRoutes.register(in: &router, services: services)
        PersonalAlarmRoutes.register(in: &router, services: services)
        PersonalCompletionRoutes.register(in: &router, services: services)
        SettingsRoutes.register(in: &router, services: services)
        SubscriptionRoutes.register(in: &router, services: services)
        NotificationRoutes.register(in: &router, services: services)
        RealtimeRoutes.register(in: &router, feed: realtime)
        if services.config.metrics.onMainPort {
            let endpoint = MetricsEndpoint(metrics: services.metrics, token: services.config.metrics.token)
            router.add(.get, MetricsEndpoint.path, .sync { request in try endpoint.respond(request) })
        }
        self.router = router
    }

    /// Every (method, template) the API serves.
    public var routes: [(method: HTTPMethod, template: String)] { router.routes }

    /// Takes the request over (`consuming`): it moves into the handler's `Request` instead of being
    /// copied field by field and released twice.
    public func respond(to http: consuming HTTPRequest, context: RequestContext, sink: ResponseSink) {
        let started = context.arrivalNanoseconds ?? Self.clock.nowNanoseconds()
        let requestID = Self.acceptableRequestID(http.head.headers[first: "x-request-id"]) ?? nextRequestID()
        let method = http.head.method
        let path = http.head.path
        var context = context
        context.remoteAddress = ClientAddress.resolve(
            peer: context.remoteAddress, headers: http.head.headers, trustedProxies: trustedProxies)
        var request = Request(http: consume http, parameters: [:], context: context, requestID: requestID, route: "")

        switch router.match(method, path: path) {
        case .matched(let match):
            request.parameters = match.parameters
            request.route = match.template
            request.routeIndex = match.routeIndex
            if let refusal = updateRequired(request, match.handler) {
                finish(ErrorMapping.response(for: refusal, requestID: requestID), request, started, sink)
                return
            }
            switch match.handler {
            case .sync(let handler):
                let response: HTTPResponse
                do { response = try handler(request) } catch { response = failure(error, request) }
                finish(response, request, started, sink)
            case .async(let handler):
                let keyed = method == .post && request.headers[first: "idempotency-key"] != nil
                startTask(for: request, sink) { [request] in
                    let response: HTTPResponse
                    if keyed {
                        response = await self.respondOnce(request, handler)
                    } else {
                        do { response = try await handler(request) } catch { response = self.failure(error, request) }
                    }
                    self.finish(response, request, started, sink)
                }
            case .upgrade(let handler):
                let outcome: UpgradeOutcome
                do { outcome = try handler(request, sink) } catch { outcome = .respond(failure(error, request)) }
                switch outcome {
                case .respond(let response):
                    finish(response, request, started, sink)
                case .upgraded:
                    completed(status: 101, bytes: 0, request, started)
                case .pending(let decide):
                    startTask(for: request, sink) { [request] in
                        let response: HTTPResponse?
                        do { response = try await decide() } catch { response = self.failure(error, request) }
                        if let response {
                            self.finish(response, request, started, sink)
                        } else {
                            self.completed(status: 101, bytes: 0, request, started)
                        }
                    }
                }
            }
        case .methodNotAllowed(let allowed):
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            let error = APIError(
                .methodNotAllowed, "\(method) is not allowed here", headers: ["Allow": allow])
            finish(ErrorMapping.response(for: error, requestID: requestID), request, started, sink)
        case .badPath:
            let error = APIError(.invalidRequest, "the path has an invalid percent-encoding")
            finish(ErrorMapping.response(for: error, requestID: requestID), request, started, sink)
        case .notFound:
            guard let staticFiles, method == .get || method == .head, !path.hasPrefix("/v1/")
            else {
                let error = APIError(.notFound, "no such resource")
                finish(ErrorMapping.response(for: error, requestID: requestID), request, started, sink)
                return
            }
            request.route = "static"
            let headers = request.headers
            startTask(for: request, sink) { [request] in
                let response =
                    (try? await self.services.workers.run { staticFiles.response(path: path, headers: headers) })
                    ?? nil
                self.finish(
                    response ?? ErrorMapping.response(for: APIError(.notFound, "no such resource"), requestID: requestID),
                    request, started, sink)
            }
        }
    }

    /// Runs `work` as the request's task, where `taskExecutor` places it, and cancels it when the
    /// client goes away (the work stops at its next await).
    private func startTask(for request: Request, _ sink: ResponseSink, _ work: @escaping @Sendable () async -> Void) {
        let task = Task(executorPreference: Self.taskExecutor(bodyBytes: request.http.body.count, loop: sink.taskExecutor), operation: work)
        sink.onCancel { task.cancel() }
    }

    /// A streamed body (an upload) is received only when its route's admission passes from the head
    /// alone (bodies reached the disk before authentication). A refusal is the request's error
    /// envelope, counted and logged like any response; the transport then closes without reading the body.
    public func admitBody(of head: HTTPRequestHead, context: RequestContext, admission: BodyAdmission) {
        guard case .matched(let match) = router.match(head.method, path: head.path), let check = bodyAdmissions[match.template]
        else { return admission.admit() }
        let started = context.arrivalNanoseconds ?? Self.clock.nowNanoseconds()
        var context = context
        context.remoteAddress = ClientAddress.resolve(
            peer: context.remoteAddress, headers: head.headers, trustedProxies: trustedProxies)
        let requestID = Self.acceptableRequestID(head.headers[first: "x-request-id"]) ?? nextRequestID()
        var request = Request(
            http: HTTPRequest(head: head), parameters: match.parameters, context: context, requestID: requestID,
            route: match.template)
        request.routeIndex = match.routeIndex
        Task {
            do {
                try await check(request)
                admission.admit()
            } catch {
                var response = self.failure(error, request)
                response.headers.add(name: "X-Request-Id", value: request.requestID)
                self.completed(status: response.status.code, bytes: response.bodyCount, request, started)
                admission.refuse(response)
            }
        }
    }

    /// The per-route body limits the transport must apply (`ServerConfiguration.limits`): attachment
    /// uploads get `AttachmentConfiguration.maxFileBytes`, checked from `Content-Length` before the body is read.
    public static func limits(_ base: HTTPLimits, config: AppConfiguration) -> HTTPLimits {
        var limits = base
        limits.maxUploadBodyBytes = config.attachments.maxFileBytes
        limits.uploadPaths = AttachmentRoutes.uploadPathPatterns
        return limits
    }

    /// Transport-level refusals get the same envelope as every other error.
    public func errorResponse(for error: HTTPParseError) -> HTTPResponse {
        ErrorMapping.response(for: ErrorMapping.apiError(for: error), requestID: nextRequestID())
    }

    /// Routes an outdated app may still call: the configuration that tells it to update, sign-out, and
    /// the association files (fetched by the OS, not the app).
    static let updateExemptRoutes: Set<String> = [
        ConfigRoutes.path, "/v1/auth/logout", DeepLinkRoutes.appleAssociationPath, DeepLinkRoutes.androidAssetLinksPath,
    ]

    /// 426 APP_UPDATE_REQUIRED when `X-Chronir-Client` names a version below its platform's minimum
    /// (`AppsConfiguration.minAppVersion`), except on `updateExemptRoutes`; nil otherwise. The realtime
    /// upgrade is not refused here: its socket opens and closes 4026 (`RealtimeRoutes`).
    private func updateRequired(_ request: Request, _ handler: Handler) -> APIError? {
        guard let header = request.headers[first: "x-chronir-client"], let client = ClientIdentity(header: header),
            !Self.updateExemptRoutes.contains(request.route)
        else { return nil }
        if case .upgrade = handler { return nil }
        guard let minimum = services.apps.current.updateRequired(client) else { return nil }
        return APIError(
            .appUpdateRequired,
            "this app version (\(client.platform.rawValue) \(client.version)) is no longer supported: update to \(minimum) or newer")
    }

    /// The next server-made request id: the process's prefix and a counter.
    private func nextRequestID() -> String { requestIDPrefix + String(requestCounter.next()) }

    func failure(_ error: any Error, _ request: Request) -> HTTPResponse {
        let apiError = ErrorMapping.apiError(for: error)
        if error is CancellationError {
            // `sink.onCancel`: the client went away before its answer; no one will read this response.
            services.logger.info(
                "request cancelled: the connection closed before the answer",
                metadata: ["request_id": "\(request.requestID)", "route": "\(request.route)"])
        } else if error is WorkerPool.Saturated {
            // A bounded pool refusing more work is load shedding, not a fault (a
            // flood wrote ~15,000 ERROR lines in 12 s): one notice, like a rate limit's.
            services.logger.notice(
                "request shed: a worker pool is full",
                metadata: ["request_id": "\(request.requestID)", "route": "\(request.route)"])
        } else if apiError.code.status.code >= 500 {
            services.logger.error(
                "request failed",
                metadata: [
                    "request_id": "\(request.requestID)", "route": "\(request.route)",
                    "error": "\(String(describing: error))",
                ])
        }
        return ErrorMapping.response(for: apiError, requestID: request.requestID)
    }

    private func finish(_ response: HTTPResponse, _ request: Request, _ started: UInt64, _ sink: ResponseSink) {
        // Counted before it is sent: a client that has the response finds it in the metrics.
        completed(status: response.status.code, bytes: response.bodyCount, request, started)
        // Written by the connection after the handler's fields, not appended to a copy of them.
        sink.send(response, adding: (name: "X-Request-Id", value: request.requestID))
    }

    /// Records a handled request: its metrics, and its access-log line.
    private func completed(status: Int, bytes: Int, _ request: Request, _ started: UInt64) {
        let nanoseconds = Self.clock.nowNanoseconds() &- started
        services.metrics.http.record(
            routeIndex: request.routeIndex, route: request.route, method: request.method, status: status,
            nanoseconds: nanoseconds)
        guard let accessLog, accessLog.isEnabled else { return }
        accessLog.record(
            method: request.method.rawValue, path: LoggedPath.masked(request.http.head.path), route: request.route,
            status: status, bytes: bytes, durationMicroseconds: nanoseconds / 1000,
            requestID: request.requestID, clientIP: request.context.remoteAddress)
    }

    /// A client-supplied request id is kept when it is 1…128 characters of `[A-Za-z0-9._-]`.
    static func acceptableRequestID(_ value: String?) -> String? {
        guard let value, !value.isEmpty, value.utf8.count <= maxRequestIDLength,
            value.utf8.allSatisfy({ b in
                (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 45 || b == 46 || b == 95
            })
        else { return nil }
        return value
    }
}
