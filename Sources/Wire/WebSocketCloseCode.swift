/// A Close frame's status code (RFC 6455 §7.4, IANA "WebSocket Close Code Number Registry").
/// Open set: applications use 3000–4999.
///
/// Validity on the wire (what a peer may send us), as the Autobahn suite expects:
/// ```
/// 0–999        invalid (never used)
/// 1000–1003    valid
/// 1004         invalid (reserved)
/// 1005, 1006   invalid (reserved for "no code" / "abnormal", never sent)
/// 1007–1011    valid
/// 1012–1014    valid (IANA: service restart, try again later, bad gateway)
/// 1015         invalid (TLS failure, never sent)
/// 1016–2999    invalid (reserved for future RFCs)
/// 3000–4999    valid (registered libraries / private use)
/// 5000–        invalid
/// ```
/// A Close frame carrying an invalid code fails the connection with 1002.
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The 16-bit status code.
    public let rawValue: UInt16
    /// The code with this value (any value; see `isValidOnWire`).
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// 1000: the purpose of the connection was fulfilled.
    public static let normalClosure = WebSocketCloseCode(rawValue: 1000)
    /// 1001: the endpoint is going away (server shutdown, page navigation).
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    /// 1002: protocol error.
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    /// 1003: a data type the endpoint cannot accept.
    public static let unsupportedData = WebSocketCloseCode(rawValue: 1003)
    /// 1004: reserved.
    public static let reserved = WebSocketCloseCode(rawValue: 1004)
    /// 1005: no status code was present (never sent on the wire).
    public static let noStatusReceived = WebSocketCloseCode(rawValue: 1005)
    /// 1006: closed without a Close frame (never sent on the wire).
    public static let abnormalClosure = WebSocketCloseCode(rawValue: 1006)
    /// 1007: message data inconsistent with its type (e.g. invalid UTF-8 in text).
    public static let invalidFramePayloadData = WebSocketCloseCode(rawValue: 1007)
    /// 1008: policy violation.
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    /// 1009: a message too big to process.
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    /// 1010: the client expected an extension the server did not negotiate.
    public static let mandatoryExtension = WebSocketCloseCode(rawValue: 1010)
    /// 1011: unexpected condition on the server.
    public static let internalError = WebSocketCloseCode(rawValue: 1011)
    /// 1012: the service is restarting.
    public static let serviceRestart = WebSocketCloseCode(rawValue: 1012)
    /// 1013: try again later.
    public static let tryAgainLater = WebSocketCloseCode(rawValue: 1013)
    /// 1014: bad gateway.
    public static let badGateway = WebSocketCloseCode(rawValue: 1014)
    /// 1015: TLS handshake failure (never sent on the wire).
    public static let tlsHandshake = WebSocketCloseCode(rawValue: 1015)

    /// Whether a peer may send this code in a Close frame (see the table above).
    public var isValidOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    /// The decimal code, e.g. "1000".
    public var description: String { String(rawValue) }
}
