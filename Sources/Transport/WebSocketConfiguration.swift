public import Wire

/// How a `WebSocketConnectionHandler` treats its peer after the handshake: limits, the close
/// handshake's timeout and heartbeats. Every field has a default and the reason for it beside it.
public struct WebSocketConfiguration: Sendable {
    /// Frame, message and inflated-message size limits (1 MiB each by default → 1009 past them).
    public var limits: WebSocketLimits = WebSocketLimits()
    /// What the server agrees to for permessage-deflate (nil: never negotiate it). Used by
    /// `WebSocketUpgrade.evaluate`; the handler itself runs whatever the handshake agreed.
    public var deflate: PerMessageDeflateConfiguration? = PerMessageDeflateConfiguration()
    /// After we send a Close (ours, or a protocol error's), how long to wait for the peer's Close
    /// before dropping the TCP connection (RFC 6455 §7.1.1 lets the server close first; a peer
    /// that never answers must not hold the socket).
    public var closeTimeout: Duration = .seconds(5)
    /// Heartbeat: a Ping is sent every `pingInterval` (nil: no pings). Keeps NAT and proxy state
    /// alive and lets `idleTimeout` detect a peer that vanished without a FIN.
    public var pingInterval: Duration? = .seconds(30)
    /// A peer from which nothing at all (a Pong, a message, any byte) arrived for this long is
    /// closed with 1001 "no heartbeat" (then dropped after `closeTimeout`). With the defaults,
    /// a peer that misses two pings in a row. Nil: never (only sensible without pings too).
    public var idleTimeout: Duration? = .seconds(60)

    /// The defaults above.
    public init() {}

    /// A configuration with the given values; omitted ones keep their defaults.
    public init(
        limits: WebSocketLimits = WebSocketLimits(),
        deflate: PerMessageDeflateConfiguration? = PerMessageDeflateConfiguration(),
        closeTimeout: Duration = .seconds(5), pingInterval: Duration? = .seconds(30),
        idleTimeout: Duration? = .seconds(60)
    ) {
        self.limits = limits
        self.deflate = deflate
        self.closeTimeout = closeTimeout
        self.pingInterval = pingInterval
        self.idleTimeout = idleTimeout
    }
}
