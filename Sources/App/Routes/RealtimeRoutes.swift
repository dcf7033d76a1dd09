import Domain
import Hashing
import Realtime
import Transport
import Wire

/// `GET /v1/realtime`: the WebSocket upgrade into the realtime feed. The `Origin` must be allowed
/// (`AppConfiguration.allowedOrigins`, default same-origin; none at all is fine for non-browser clients),
/// else 403. An `Authorization: Bearer` token (or, with an `Origin`, the web client's session cookie,
/// `SessionCookie`) is checked before the 101; a bad one closes with 4001
/// right after it; when the check cannot read the database the upgrade is answered 503 CA027 with
/// `Retry-After` instead; without one the client has 5 s to send `{"op":"auth","token":…}`. A client
/// network holding `AppConfiguration.maxWebSocketsPerAddress` sockets already gets 429 RATE_LIMITED.
enum RealtimeRoutes {
    static let webSocket = WebSocketConfiguration()
    /// `Retry-After` of an upgrade refused past `maxWebSocketsPerAddress`: room opens only when one
    /// of the client's own sockets closes, so a short wait and a retry is all there is to do.
    static let webSocketsRetryAfterSeconds = 5

    static func register(in router: inout Router<Handler>, feed: RealtimeFeed) {
        router.add(
            .get, "/v1/realtime",
            .upgrade { request, sink in
                switch WebSocketUpgrade.evaluate(request.http, configuration: webSocket, sha1: { SHA1.hash($0) }) {
                case .reject(let rejected):
                    return .respond(rejected.response)
                case .accept(var accepted):
                    guard originAllowed(accepted.origin, config: feed.services.config) else {
                        throw APIError(.permissionDenied, "origin not allowed")
                    }
                    // The web client's session cookie counts only with an allowed Origin (checked above):
                    // a browser always sends one, so a cookie without it is not the web client's.
                    let cookie =
                        accepted.origin == nil
                        ? nil : try SessionCookie.token(in: request, secure: SessionCookie.secure(feed.services.config))
                    // Per client (behind a trusted proxy: the forwarded one), before anything is spent.
                    guard let slot = feed.webSockets.acquire(clientAddress: request.context.remoteAddress) else {
                        throw APIError(
                            .rateLimited, "too many WebSockets open from your address",
                            retryAfterSeconds: webSocketsRetryAfterSeconds)
                    }
                    accepted.response.headers.add(name: "X-Request-Id", value: request.requestID)
                    let handshake = accepted
                    if let header = request.headers[first: "x-chronir-client"], let client = ClientIdentity(header: header),
                        let minimum = feed.services.apps.current.updateRequired(client)
                    {
                        // An outdated app: the socket opens and closes 4026 at once (docs/realtime-protocol.md#close-codes).
                        sink.upgradeToWebSocket(handshake, configuration: webSocket) {
                            UpdateRequiredSocket(minimum: minimum, slot: slot)
                        }
                        return .upgraded
                    }
                    guard let token = request.bearerToken ?? cookie else {
                        sink.upgradeToWebSocket(handshake, configuration: webSocket) {
                            RealtimeConnection(feed: feed, userID: nil, checkedAt: nil, tokenRejected: false, slot: slot)
                        }
                        return .upgraded
                    }
                    // Checked before the 101: a read that fails (storage unavailable) throws, answered
                    // 503 CA027 + Retry-After by `ErrorMapping` — never as a bad token (4001).
                    let services = feed.services
                    return .pending {
                        let found = try await RealtimeFeed.check(
                            token: token, database: services.database, now: services.clock.nowMilliseconds())
                        sink.upgradeToWebSocket(handshake, configuration: webSocket) {
                            RealtimeConnection(
                                feed: feed, userID: found?.userID, checkedAt: found?.seq,
                                session: found.map {
                                    .init(tokenHash: $0.tokenHash, sessionID: $0.sessionID, expiresAt: $0.expiresAt)
                                },
                                tokenRejected: found == nil, slot: slot)
                        }
                        return nil
                    }
                }
            })
    }

    /// `scheme://host[:port]` of a URL (lowercased scheme and host, default ports dropped).
    static func origin(of url: String) -> String? {
        guard let range = url.firstRange(of: "://") else { return nil }
        let scheme = url[..<range.lowerBound].lowercased()
        let rest = url[range.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !scheme.isEmpty, !authority.isEmpty else { return nil }
        var host = authority.lowercased()
        if scheme == "http", host.hasSuffix(":80") { host.removeLast(3) }
        if scheme == "https", host.hasSuffix(":443") { host.removeLast(4) }
        return "\(scheme)://\(host)"
    }

    /// No `Origin` (not a browser), or one on the allow-list (default: `public_base_url`'s origin).
    static func originAllowed(_ origin: String?, config: AppConfiguration) -> Bool {
        guard let origin else { return true }
        guard let given = Self.origin(of: origin) else { return false }
        let allowed = config.allowedOrigins.isEmpty ? [config.publicBaseURL] : config.allowedOrigins
        return allowed.contains { Self.origin(of: $0) == given }
    }
}

/// The socket of an app older than its platform's minimum: closed 4026 as soon as it opens, its
/// address slot given back when it closes.
final class UpdateRequiredSocket: WebSocketDelegate, Sendable {
    let minimum: AppVersion
    let slot: AddressQuota.Slot?

    init(minimum: AppVersion, slot: AddressQuota.Slot?) {
        self.minimum = minimum
        self.slot = slot
    }

    func webSocketOpened(_ socket: WebSocket) {
        socket.close(
            code: WebSocketCloseCode(rawValue: CloseCode.appUpdateRequired.rawValue), reason: "update the app to \(minimum) or newer")
    }

    func webSocket(_ socket: WebSocket, received event: WebSocketEvent) {
        if case .closed = event { slot?.release() }
    }
}
