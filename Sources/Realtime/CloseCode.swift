/// WebSocket close codes the realtime feed uses (RFC 6455 §7.4.2: 4000–4999 are the application's).
///
/// | code | name                | when                                                                 |
/// |------|---------------------|----------------------------------------------------------------------|
/// | 1009 | messageTooBig       | a client message over `RealtimeLimits.maxInboundMessageBytes`        |
/// | 1013 | tryAgainLater       | the session check could not read the database (an outage): the token |
/// |      |                     | was not judged — keep it, reconnect with back-off                    |
/// | 4000 | protocolError       | more than `RealtimeLimits.maxProtocolErrors` invalid client messages |
/// | 4001 | authenticationFailed| no valid `auth` before the deadline, a bad token, or the session's   |
/// |      |                     | idle expiry passed while the socket was open ("session expired")     |
/// | 4003 | sessionRevoked      | the account was suspended or deleted, or the session logged out      |
/// | 4008 | slowConsumer        | the outbound buffer passed `RealtimeLimits.hardOutboundBytes`        |
/// | 4009 | tooManyConnections  | the user already has `RealtimeLimits.maxConnectionsPerUser` sockets  |
/// | 4026 | appUpdateRequired   | `X-Chronir-Client` names an app older than its platform's minimum     |
/// |      |                     | (`min_app_version`, docs/apps.md): update before reconnecting        |
public struct CloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// RFC 6455 1009: a message too big to process.
    public static let messageTooBig = CloseCode(rawValue: 1009)
    /// RFC 6455 §7.4.1 registry, 1013 "Try Again Later": the server could not check the session
    /// (its storage is unavailable). Not an authentication failure: the client keeps its token.
    public static let tryAgainLater = CloseCode(rawValue: 1013)
    /// Repeated malformed or invalid client messages.
    public static let protocolError = CloseCode(rawValue: 4000)
    /// Authentication timed out or failed.
    public static let authenticationFailed = CloseCode(rawValue: 4001)
    /// The session or account is no longer valid (logout, suspension, deletion).
    public static let sessionRevoked = CloseCode(rawValue: 4003)
    /// The client does not read fast enough: outbound bytes past the hard limit.
    public static let slowConsumer = CloseCode(rawValue: 4008)
    /// Too many sockets for one user.
    public static let tooManyConnections = CloseCode(rawValue: 4009)
    /// The app is older than its platform's minimum version (HTTP's 426 APP_UPDATE_REQUIRED): do not
    /// reconnect until updated.
    public static let appUpdateRequired = CloseCode(rawValue: 4026)

    public var description: String { String(rawValue) }
}
