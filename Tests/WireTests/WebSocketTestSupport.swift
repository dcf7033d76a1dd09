import TestSupport
import Testing
import Wire

/// Helpers for the WebSocket suites: client-side frame builders and an action transcript.
enum WS {
    /// The masking key of RFC 6455 §5.7's masked examples.
    static let key: (UInt8, UInt8, UInt8, UInt8) = (0x37, 0xFA, 0x21, 0x3D)

    /// A masked client frame.
    static func frame(
        _ opcode: WebSocketOpcode, _ payload: [UInt8] = [], fin: Bool = true, rsv1: Bool = false,
        key: (UInt8, UInt8, UInt8, UInt8) = WS.key
    ) -> [UInt8] {
        WebSocketFrameEncoder.encode(WebSocketFrame(fin: fin, rsv1: rsv1, opcode: opcode, maskingKey: key, payload: payload))
    }

    static func text(_ s: String, fin: Bool = true) -> [UInt8] { frame(.text, Array(s.utf8), fin: fin) }

    /// A masked Close frame with `code` and raw reason bytes.
    static func close(_ code: UInt16?, _ reason: [UInt8] = []) -> [UInt8] {
        guard let code else { return frame(.close) }
        return frame(.close, [UInt8(code >> 8), UInt8(code & 0xFF)] + reason)
    }

    /// Feeds `bytes` and drains every action.
    static func drain(_ proto: inout WebSocketProtocol, _ bytes: [UInt8]) -> [WebSocketAction] {
        proto.receive(bytes)
        var actions: [WebSocketAction] = []
        while let action = proto.next() { actions.append(action) }
        return actions
    }

    /// The actions for `input`, checked to be identical at every split (ChunkFeeder).
    static func run(
        _ input: [UInt8], limits: WebSocketLimits = WebSocketLimits(), deflate: PerMessageDeflateParameters? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> [WebSocketAction] {
        var whole = WebSocketProtocol(limits: limits, deflate: deflate)
        let expected = drain(&whole, input)
        if let mismatch = ChunkFeeder.firstMismatch(
            input, expected: expected, make: { WebSocketProtocol(limits: limits, deflate: deflate) },
            feed: { proto, chunk in drain(&proto, chunk) })
        {
            Issue.record("\(mismatch.split): \(mismatch.outputs) != \(expected)", sourceLocation: sourceLocation)
        }
        return expected
    }

    /// The actions that fail a connection with `code`.
    static func failure(_ code: WebSocketCloseCode, _ reason: String) -> [WebSocketAction] {
        [
            .deliver(.closed(code, reason)), .send(WebSocketFrameEncoder.encodeClose(code: code, reason: reason)),
            .closeConnection,
        ]
    }

    /// Bytes from a hex string such as "81 05 48 65".
    static func hex(_ s: String) -> [UInt8] {
        s.split(separator: " ").map { UInt8($0, radix: 16)! }
    }
}

/// SHA-1 (FIPS 180-4) for the handshake tests: WireTests may not import Hashing.
func sha1(_ message: [UInt8]) -> [UInt8] {
    var h: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
    var data = message
    let bitLength = UInt64(message.count) * 8
    data.append(0x80)
    while data.count % 64 != 56 { data.append(0) }
    for shift in stride(from: 56, through: 0, by: -8) { data.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
    for chunk in stride(from: 0, to: data.count, by: 64) {
        var w = [UInt32](repeating: 0, count: 80)
        for i in 0..<16 {
            let j = chunk + i * 4
            w[i] = UInt32(data[j]) << 24 | UInt32(data[j + 1]) << 16 | UInt32(data[j + 2]) << 8 | UInt32(data[j + 3])
        }
        for i in 16..<80 {
            let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
            w[i] = x << 1 | x >> 31
        }
        var (a, b, c, d, e) = (h[0], h[1], h[2], h[3], h[4])
        for i in 0..<80 {
            let (f, k): (UInt32, UInt32) =
                switch i {
                case 0..<20: ((b & c) | (~b & d), 0x5A82_7999)
                case 20..<40: (b ^ c ^ d, 0x6ED9_EBA1)
                case 40..<60: ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                default: (b ^ c ^ d, 0xCA62_C1D6)
                }
            let temp = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[i]
            e = d
            d = c
            c = b << 30 | b >> 2
            b = a
            a = temp
        }
        h[0] &+= a
        h[1] &+= b
        h[2] &+= c
        h[3] &+= d
        h[4] &+= e
    }
    return h.flatMap { v in [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
}
