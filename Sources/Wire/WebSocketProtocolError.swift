/// Why the peer's input failed the connection (RFC 6455 §7.1.7). `closeCode` is the one place
/// these map to the wire; `reason` is short, fixed text that never echoes peer bytes.
public enum WebSocketProtocolError: Error, Hashable, Sendable {
    /// A client frame without the MASK bit (§5.1).
    case unmaskedFrame
    /// RSV1–3 set without a negotiated extension that defines them (§5.2), or RSV1 on a
    /// continuation or control frame under permessage-deflate (RFC 7692 §6.1).
    case reservedBitsSet
    /// An opcode RFC 6455 reserves (3–7, 0xB–0xF).
    case reservedOpcode(UInt8)
    /// A control frame with FIN clear (§5.5).
    case fragmentedControlFrame
    /// A control frame longer than 125 bytes (§5.5).
    case controlFrameTooLong
    /// A 64-bit payload length with the most significant bit set (§5.2).
    case invalidPayloadLength
    /// A frame longer than `WebSocketLimits.maxFrameSize` or `maxControlPayload` (when < 125).
    case frameTooLarge
    /// A message longer than `maxMessageSize`, or inflating to more than `maxInflatedMessageSize`.
    case messageTooLarge
    /// A continuation frame with no message open (§5.4).
    case unexpectedContinuation
    /// A new text or binary frame while a fragmented message is open (§5.4).
    case expectedContinuation
    /// A text message (or Close reason) that is not valid UTF-8 (§8.1).
    case invalidUTF8
    /// A Close payload of one byte (§5.5.1).
    case invalidClosePayload
    /// A Close frame whose code is not valid on the wire (§7.4).
    case invalidCloseCode(UInt16)
    /// A permessage-deflate message that does not inflate (RFC 7692 §8).
    case decompressionFailed

    /// The close code to send for this error.
    public var closeCode: WebSocketCloseCode {
        switch self {
        case .unmaskedFrame, .reservedBitsSet, .reservedOpcode, .fragmentedControlFrame, .controlFrameTooLong,
            .invalidPayloadLength, .unexpectedContinuation, .expectedContinuation, .invalidClosePayload,
            .invalidCloseCode, .decompressionFailed:
            .protocolError
        case .frameTooLarge, .messageTooLarge:
            .messageTooBig
        case .invalidUTF8:
            .invalidFramePayloadData
        }
    }

    /// Text for the Close frame's reason (ASCII, well under the 123 bytes a reason may take).
    public var reason: String {
        switch self {
        case .unmaskedFrame: "frame not masked"
        case .reservedBitsSet: "reserved bits set"
        case .reservedOpcode: "reserved opcode"
        case .fragmentedControlFrame: "fragmented control frame"
        case .controlFrameTooLong: "control frame too long"
        case .invalidPayloadLength: "invalid payload length"
        case .frameTooLarge: "frame too large"
        case .messageTooLarge: "message too large"
        case .unexpectedContinuation: "unexpected continuation frame"
        case .expectedContinuation: "expected continuation frame"
        case .invalidUTF8: "invalid UTF-8"
        case .invalidClosePayload: "invalid close payload"
        case .invalidCloseCode: "invalid close code"
        case .decompressionFailed: "decompression failed"
        }
    }
}
