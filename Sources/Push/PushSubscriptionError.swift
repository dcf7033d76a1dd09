/// Why a push subscription sent by a client was refused. Every case is the client's fault: a route
/// maps them all to 400, with `rawValue` as the error code.
public enum PushSubscriptionError: String, Error, Sendable, Equatable {
    /// The endpoint is longer than `PushEndpoint.maxByteCount`.
    case endpointTooLong = "endpoint_too_long"
    /// The endpoint is a URL of another scheme than `https` (RFC 8030 §8: push is over TLS).
    case endpointNotHTTPS = "endpoint_not_https"
    /// The endpoint is not a URL `PushEndpoint` accepts.
    case endpointMalformed = "endpoint_malformed"
    /// `p256dh` is not base64url of an uncompressed P-256 point on the curve (RFC 8291 §2).
    case invalidP256dh = "invalid_p256dh"
    /// `auth` is not base64url of exactly 16 bytes (RFC 8291 §3.2).
    case invalidAuth = "invalid_auth"
}
