/// Something the transport wants an operator to know about. The application wires
/// `HTTPServer(onEvent:)` to its logger; Transport itself never logs.
///
/// Per-connection events (`accepted`, `upgraded`, `closed`, `timedOut`) fire once per connection, never per
/// request, so a logger that drops them at its default level costs almost nothing.
public enum TransportEvent: Sendable {
    /// The server is listening on `port`.
    case listening(host: String, port: Int)
    /// A connection was accepted and handed to an event loop.
    case accepted(connectionID: UInt64, remoteAddress: String)
    /// A connection switched protocols after a `101` (`ResponseSink.upgrade`: WebSocket).
    case upgraded(connectionID: UInt64)
    /// A connection's socket was closed.
    case closed(connectionID: UInt64)
    /// A connection was closed because one of its deadlines passed.
    case timedOut(connectionID: UInt64, TimeoutKind)
    /// A request could not be parsed; the connection answered `status` and closed.
    case badRequest(connectionID: UInt64, status: Int, reason: String)
    /// A TLS connection failed (not TLS, a bad record, a handshake the policy refuses); it sent
    /// the alert libssl made and closed. `reason` is OpenSSL's (`"http request"`, `"wrong version number"`).
    /// Routine on a port facing the internet: log it at debug level.
    case tlsFailed(connectionID: UInt64, reason: String)
    /// An operating-system call failed. `connectionID` is nil for the listener.
    case error(connectionID: UInt64?, SocketError)
    /// `maxConnections` was reached: the newest connection got `503` and was closed.
    case connectionLimitReached(limit: Int)
    /// `network` (a `PeerNetwork` key) holds `limit` connections (`maxConnectionsPerAddress`): its
    /// newest connection got `429` and was closed.
    case addressConnectionLimitReached(limit: Int, network: String)
    /// Accepting paused briefly because the process or system ran out of file descriptors.
    case acceptPaused(SocketError)
    /// Graceful shutdown began (`openConnections` still open) or finished.
    case shutdownStarted(openConnections: Int)
    /// Every connection is closed after a shutdown; `forced` counts connections closed by the
    /// grace period rather than by finishing their request.
    case shutdownCompleted(forced: Int)

    /// Which deadline closed a connection.
    public enum TimeoutKind: String, Sendable {
        /// The request head did not arrive within `requestHeaderTimeout` of its first byte.
        case header
        /// The request body did not arrive within `requestBodyTimeout` of the head.
        case body
        /// A keep-alive connection sat idle for `idleTimeout`.
        case idle
        /// Queued output made no progress for `writeTimeout`: the peer stopped reading.
        case write
    }
}
