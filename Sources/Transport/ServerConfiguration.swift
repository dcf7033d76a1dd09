public import TLS
public import Wire

/// How an `HTTPServer` listens, and the limits and timeouts that protect it. Every field has a
/// default suited to a small VM facing the internet, and the reason for it beside it.
public struct ServerConfiguration: Sendable {
    /// Address to bind, IPv4 or IPv6 literal (`"127.0.0.1"`, `"0.0.0.0"`, `"::1"`, `"::"`).
    /// Default loopback: exposing the server is an explicit decision (usually behind a proxy).
    public var host: String = "127.0.0.1"
    /// TCP port; 0 picks an ephemeral port (tests), reported by `HTTPServer.start()`.
    public var port: Int = 8080
    /// Number of event loops. One per core: a loop is serial, so more loops than cores only adds
    /// contention, fewer leaves cores idle.
    public var loopCount: Int = System.activeProcessorCount
    /// `listen(2)` backlog: connections the kernel queues before we accept them. Large enough to
    /// absorb a reconnect storm; the kernel caps it at `net.core.somaxconn`.
    public var backlog: Int = 1024
    /// Connections served at once. Past it the newest connection gets a canned `503` with
    /// `Connection: close` and is closed, so a flood degrades into refusals, not into running out
    /// of file descriptors or memory.
    public var maxConnections: Int = 10_000
    /// Connections one client network (`PeerNetwork`: an IPv4 address, an IPv6 /64) may hold at
    /// once; nil means half of `maxConnections` (at least 1), whatever that is set to. Past it the
    /// newest connection from that network gets a canned `429` with `Retry-After` and is closed,
    /// so one client cannot take every slot with idle keep-alive sockets or WebSockets while others
    /// (and `/healthz`) still get in.
    public var maxConnectionsPerAddress: Int?
    /// Peers exempt from `maxConnectionsPerAddress` (exact IP text, as `accept` reports it): the
    /// trusted reverse proxies, through which every client arrives from one address. Behind them
    /// the application limits per forwarded client where it can see one (WebSocket upgrades).
    public var perAddressLimitExempt: Set<String> = []
    /// A path answered `200 {"status":"ok"}` even by a connection refused for capacity (nil: none),
    /// so a liveness probe of a full server sees a live process. A refused connection then waits at
    /// most `lingerTimeout` for the start of its request line (`GET <path> HTTP/1.`, no more bytes
    /// than that are read) to find out; anything else gets the refusal.
    public var healthCheckPath: String?
    /// Deadline for the whole request head, from its first byte (or, on a new connection, from
    /// accept). Not reset by each byte arriving: a slowloris peer trickling a byte at a time is cut
    /// off at the deadline. Expiry answers `408` and closes (or just closes if nothing came).
    public var requestHeaderTimeout: Duration = .seconds(10)
    /// Deadline for the whole body once the head is complete (`408` and close when it passes):
    /// bodies are at most `limits.maxBodyBytes`, so an honest client needs far less.
    public var requestBodyTimeout: Duration = .seconds(30)
    /// How long a keep-alive connection may sit between requests before it is closed: idle
    /// sockets cost memory and file descriptors.
    public var idleTimeout: Duration = .seconds(60)
    /// Output queued per connection before the server stops reading from that peer (and stops
    /// answering its pipelined requests) until the peer catches up. Bounds memory per connection
    /// against a peer that sends requests but never reads responses.
    public var maxOutboundBytes: Int = 4 * 1024 * 1024
    /// How long queued output may make no progress before the connection is closed: a peer that
    /// stopped reading must not hold its buffer forever.
    public var writeTimeout: Duration = .seconds(30)
    /// After the last response on a closing connection, how long to keep discarding the peer's
    /// input while waiting for its close (closing with unread input sends RST, which can destroy
    /// the response the peer has not read yet).
    public var lingerTimeout: Duration = .seconds(2)
    /// The clock every deadline above is measured on (`MonotonicClock`), and the one the loops' timers
    /// (the deadline sweep) and the shutdown grace period run on. Tests inject a manual one to drive
    /// deadlines without sleeping; servers keep the default, `CLOCK_MONOTONIC`.
    public var clock: any MonotonicClock = SystemMonotonicClock()
    /// HTTP parser limits (request line 414, header block and field count 431, body 413).
    public var limits: HTTPLimits = HTTPLimits()
    /// Where streamed request bodies (uploads, `HTTPLimits.uploadPaths`) are written as they arrive, each
    /// to its own `.tmp-XXXXXX` file (0600; the directory is created 0700 if missing), handed to the
    /// responder as `HTTPRequest.bodyFile`. nil (the default): a streamed body is collected in memory
    /// and handed over as `HTTPRequest.body`, like any other.
    public var uploadDirectory: String?
    /// TLS: when set, the listener speaks only TLS (https, wss), each new connection starting from
    /// the slot's current context (swap it to reload the certificate; open connections keep theirs).
    /// A handshake is bounded by `requestHeaderTimeout` like a request head: it runs from accept.
    /// nil (the default): plain HTTP, and the plain path pays nothing for TLS.
    public var tls: CurrentTLSContext?
    /// With `tls`: `Strict-Transport-Security: max-age=<this>` on every response the application
    /// did not give one, so browsers use https only for that long (RFC 6797). One year, the
    /// minimum the browsers' preload lists accept; no `includeSubDomains` (other hosts of the
    /// domain may not speak TLS). nil sends none. Ignored without `tls`.
    public var strictTransportSecurityMaxAge: Int? = 31_536_000
    /// During graceful shutdown, how long in-flight requests may take before every connection
    /// still open is closed anyway: bounds how long a deploy or `systemctl stop` waits.
    public var shutdownGracePeriod: Duration = .seconds(10)

    /// The defaults, listening on `host:port`.
    public init(host: String = "127.0.0.1", port: Int = 8080) {
        self.host = host
        self.port = port
    }

    /// `maxConnectionsPerAddress`, or its default: half of `maxConnections`, at least 1.
    public var effectiveMaxConnectionsPerAddress: Int {
        maxConnectionsPerAddress ?? Self.defaultPerAddressLimit(maxConnections: maxConnections)
    }

    /// Half of `maxConnections` (at least 1): the default per-client share of the server.
    public static func defaultPerAddressLimit(maxConnections: Int) -> Int { max(1, maxConnections / 2) }

    /// Resolution of the per-loop deadline sweep: a tenth of the shortest timeout, between 10 ms
    /// and 250 ms. Timeouts fire within one tick after their deadline.
    var sweepTick: Duration {
        let shortest = [requestHeaderTimeout, requestBodyTimeout, idleTimeout, writeTimeout, lingerTimeout].min()!
        return min(max(shortest / 10, .milliseconds(10)), .milliseconds(250))
    }
}
