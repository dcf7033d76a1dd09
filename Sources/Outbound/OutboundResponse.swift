/// The answer to an `OutboundRequest`: whatever status the server sent (a 4xx or 5xx is a response,
/// not an error — the sender decides what it means).
public struct OutboundResponse: Sendable {
    /// The status code of the final response (1xx interim responses are skipped).
    public var status: Int
    /// The final response's header fields, in the order received.
    public var headers: [HTTPField]
    /// The body, at most `OutboundLimits.maxResponseBodyBytes`.
    public var body: [UInt8]
    /// The protocol the response came over.
    public var httpVersion: Version
    /// How many new connections this transfer opened (0 when it reused a pooled one or was
    /// multiplexed onto an open HTTP/2 connection) — curl's `CURLINFO_NUM_CONNECTS`.
    public var newConnections: Int

    /// The HTTP version of a response.
    public enum Version: Sendable, Equatable {
        case http1_0, http1_1, http2, http3
    }
}
