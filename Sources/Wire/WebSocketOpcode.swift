/// A frame's opcode (RFC 6455 §5.2, §11.8): four bits. Open set; the defined ones are static members.
/// 3–7 and 0xB–0xF are reserved: receiving one fails the connection with 1002.
public struct WebSocketOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The four-bit value, 0…15.
    public let rawValue: UInt8
    /// The opcode with this value; only the low four bits are kept.
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0x0F }

    /// %x0: continues a fragmented message.
    public static let continuation = WebSocketOpcode(rawValue: 0x0)
    /// %x1: a text message (UTF-8).
    public static let text = WebSocketOpcode(rawValue: 0x1)
    /// %x2: a binary message.
    public static let binary = WebSocketOpcode(rawValue: 0x2)
    /// %x8: connection close.
    public static let close = WebSocketOpcode(rawValue: 0x8)
    /// %x9: ping.
    public static let ping = WebSocketOpcode(rawValue: 0x9)
    /// %xA: pong.
    public static let pong = WebSocketOpcode(rawValue: 0xA)

    /// Control opcodes have the high bit of the nibble set (RFC 6455 §5.5).
    public var isControl: Bool { rawValue & 0x8 != 0 }
    /// Whether RFC 6455 defines this opcode (0, 1, 2, 8, 9, 10).
    public var isDefined: Bool { rawValue <= 0x2 || (rawValue >= 0x8 && rawValue <= 0xA) }

    /// The opcode's name, e.g. "text", or "reserved(3)".
    public var description: String {
        switch rawValue {
        case 0x0: "continuation"
        case 0x1: "text"
        case 0x2: "binary"
        case 0x8: "close"
        case 0x9: "ping"
        case 0xA: "pong"
        default: "reserved(\(rawValue))"
        }
    }
}
