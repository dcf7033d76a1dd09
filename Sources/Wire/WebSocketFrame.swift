/// One frame (RFC 6455 §5.2), payload unmasked.
///
/// ```
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-------+-+-------------+-------------------------------+
/// |F|R|R|R| opcode|M| Payload len |    Extended payload length    |
/// |I|S|S|S|  (4)  |A|     (7)     |             (16/64)           |
/// |N|V|V|V|       |S|             |   (if payload len==126/127)   |
/// | |1|2|3|       |K|             |                               |
/// +-+-+-+-+-------+-+-------------+ - - - - - - - - - - - - - - - +
/// |     Extended payload length continued, if payload len == 127  |
/// + - - - - - - - - - - - - - - - +-------------------------------+
/// |                               |Masking-key, if MASK set to 1  |
/// +-------------------------------+-------------------------------+
/// | Masking-key (continued)       |          Payload Data         |
/// +-------------------------------- - - - - - - - - - - - - - - - +
/// ```
public struct WebSocketFrame: Sendable, Equatable {
    /// Last frame of its message.
    public var fin: Bool
    /// RSV1: set on the first frame of a compressed message under permessage-deflate (RFC 7692 §6).
    public var rsv1: Bool
    /// RSV2, RSV3: no extension we negotiate uses them.
    public var rsv2: Bool
    public var rsv3: Bool
    /// What the payload is (data, continuation or control).
    public var opcode: WebSocketOpcode
    /// The masking key the frame was (or is to be) sent with; nil when unmasked. Clients MUST mask
    /// (RFC 6455 §5.3); servers MUST NOT.
    public var maskingKey: (UInt8, UInt8, UInt8, UInt8)?
    /// The application data, unmasked.
    public var payload: [UInt8]

    /// Whether the MASK bit is set.
    public var masked: Bool { maskingKey != nil }

    /// A frame; by default a final, unmasked one without RSV bits.
    public init(
        fin: Bool = true, rsv1: Bool = false, rsv2: Bool = false, rsv3: Bool = false,
        opcode: WebSocketOpcode, maskingKey: (UInt8, UInt8, UInt8, UInt8)? = nil, payload: [UInt8] = []
    ) {
        self.fin = fin
        self.rsv1 = rsv1
        self.rsv2 = rsv2
        self.rsv3 = rsv3
        self.opcode = opcode
        self.maskingKey = maskingKey
        self.payload = payload
    }

    /// Field-wise equality (the masking key compared by value).
    public static func == (a: WebSocketFrame, b: WebSocketFrame) -> Bool {
        a.fin == b.fin && a.rsv1 == b.rsv1 && a.rsv2 == b.rsv2 && a.rsv3 == b.rsv3 && a.opcode == b.opcode
            && a.maskingKey.map { [$0.0, $0.1, $0.2, $0.3] } == b.maskingKey.map { [$0.0, $0.1, $0.2, $0.3] }
            && a.payload == b.payload
    }
}
