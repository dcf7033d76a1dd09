/// The client's bounds. Every one protects the server from a slow, hostile or broken peer: push
/// endpoints and webhook URLs are chosen by users and operators.
public struct OutboundLimits: Sendable {
    /// Largest response body accepted; one byte more fails the request with `responseTooLarge`
    /// (checked against `Content-Length` before reading, and while reading). 64 KiB: push
    /// providers answer with a few hundred bytes of JSON; a webhook's answer is ignored.
    public var maxResponseBodyBytes = 64 * 1024
    /// Largest response head (all header lines of the final and interim responses); over it, the
    /// request fails with `responseTooLarge`. 16 KiB, far above any provider's.
    public var maxResponseHeaderBytes = 16 * 1024
    /// How long DNS resolution plus TCP and TLS handshakes may take.
    public var connectTimeout: Duration = .seconds(10)
    /// How long one exchange may take from when its transfer starts, unless the request sets its
    /// own `timeout`. APNs and FCM answer within a second or two; 30 s bounds a stuck peer.
    public var totalTimeout: Duration = .seconds(30)
    /// Transfers running at once; more wait in the client's queue (FIFO).
    public var maxConcurrentTransfers = 64
    /// Transfers waiting for a running slot; one more fails at once with `tooManyQueued`, so a
    /// stalled provider cannot make the queue grow without bound.
    public var maxQueuedTransfers = 1_024
    /// Connections open to one host at once (HTTP/2 multiplexes transfers onto one; HTTP/1.1
    /// transfers beyond it wait inside curl for a free connection).
    public var maxConnectionsPerHost = 8
    /// Idle connections kept for reuse (curl's connection cache, `CURLMOPT_MAXCONNECTS`).
    public var maxIdleConnections = 32
    /// A pooled connection idle longer than this is not reused (libcurl `CURLOPT_MAXAGE_CONN`) but
    /// replaced: servers close idle connections (60 s is common), and a send on one the peer already
    /// closed fails and waits a retry back-off (found by Reliability/notifications.sh: a Web Push after
    /// a quiet minute arrived 3–7 s late). Shorter than any push service's idle timeout.
    public var maxIdleConnectionAge: Duration = .seconds(25)

    /// The defaults above.
    public init() {}
}
