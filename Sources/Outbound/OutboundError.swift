/// Why `OutboundClient.send` produced no response. A response with any status is not an error.
public enum OutboundError: Error, Equatable, Sendable {
    /// The request cannot be sent as given: an unparsable URL or a header field that is not a valid
    /// name and value (the text says which).
    case invalidRequest(String)
    /// The destination policy refused it before any byte was sent.
    case destinationRefused(Refusal)
    /// `OutboundLimits.maxQueuedTransfers` transfers were already waiting.
    case tooManyQueued
    /// The connect timeout or the total timeout passed.
    case timeout
    /// DNS resolution or every TCP connection attempt failed (curl's message).
    case connectFailed(String)
    /// The TLS handshake failed or the peer's certificate did not verify (curl's message).
    case tls(String)
    /// The response's head or body exceeded its limit (`OutboundLimits`), given in bytes.
    case responseTooLarge(limitBytes: Int)
    /// The calling task was cancelled.
    case cancelled
    /// The client was closed before the transfer finished.
    case closed
    /// The SMTP server refused the mail with a 4xx (transient) or 5xx (permanent) reply to AUTH,
    /// MAIL, RCPT or DATA (RFC 5321 §4.2.1); curl's message.
    case mailRefused(replyCode: Int, message: String)
    /// Any other libcurl failure (protocol error, connection reset, …): its `CURLcode` and message.
    case other(code: Int, message: String)

    /// What the destination policy refused.
    public enum Refusal: Equatable, Sendable {
        /// The URL's scheme (only `https`, and `http` when the policy allows plain http; `smtp` and
        /// `smtps` for mail).
        case scheme(String)
        /// The address a socket was about to connect to, and its class.
        case address(IPAddress, AddressClass)
    }
}
