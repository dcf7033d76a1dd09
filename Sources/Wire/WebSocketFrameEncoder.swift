/// Serialises frames (RFC 6455 §5.2). A server sends unmasked frames; a masking key is honoured
/// for tests and clients.
public enum WebSocketFrameEncoder {
    /// Appends `frame` (header, then the payload, masked when `frame.maskingKey` is set) to `buffer`.
    public static func encode(_ frame: WebSocketFrame, into buffer: inout [UInt8]) {
        appendHeader(
            fin: frame.fin, rsv1: frame.rsv1, rsv2: frame.rsv2, rsv3: frame.rsv3, opcode: frame.opcode,
            length: frame.payload.count, maskingKey: frame.maskingKey, into: &buffer)
        if let key = frame.maskingKey {
            var masked = frame.payload
            WebSocketFrameDecoder.applyMask(key, to: &masked)
            buffer.append(contentsOf: masked)
        } else {
            buffer.append(contentsOf: frame.payload)
        }
    }

    /// The bytes of `frame`.
    public static func encode(_ frame: WebSocketFrame) -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(frame.payload.count + 14)
        encode(frame, into: &buffer)
        return buffer
    }

    /// The bytes of a whole unfragmented, unmasked message: one frame with FIN set and `payload`
    /// (already compressed when `compressed`, which sets RSV1 — RFC 7692 §6).
    public static func encodeMessage<Payload: Collection<UInt8>>(
        opcode: WebSocketOpcode, payload: Payload, compressed: Bool = false
    ) -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(payload.count + 10)
        appendHeader(fin: true, rsv1: compressed, opcode: opcode, length: payload.count, maskingKey: nil, into: &buffer)
        buffer.append(contentsOf: payload)
        return buffer
    }

    /// The bytes of a Close frame (RFC 6455 §5.5.1): the code, big-endian, then the reason, cut
    /// to the 123 bytes that fit a control frame (at a character boundary). No code, no reason.
    public static func encodeClose(code: WebSocketCloseCode?, reason: String = "") -> [UInt8] {
        var payload: [UInt8] = []
        if let code {
            payload = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
            var reasonBytes = Array(reason.utf8)
            if reasonBytes.count > 123 {
                var end = 123
                while end > 0, reasonBytes[end] & 0xC0 == 0x80 { end -= 1 }
                reasonBytes.removeSubrange(end...)
            }
            payload += reasonBytes
        }
        return encodeMessage(opcode: .close, payload: payload)
    }

    /// Appends a frame header: FIN/RSV/opcode, the shortest length encoding, and the masking key.
    public static func appendHeader(
        fin: Bool, rsv1: Bool = false, rsv2: Bool = false, rsv3: Bool = false, opcode: WebSocketOpcode, length: Int,
        maskingKey: (UInt8, UInt8, UInt8, UInt8)?, into buffer: inout [UInt8]
    ) {
        var b0 = opcode.rawValue
        if fin { b0 |= 0x80 }
        if rsv1 { b0 |= 0x40 }
        if rsv2 { b0 |= 0x20 }
        if rsv3 { b0 |= 0x10 }
        buffer.append(b0)
        let mask: UInt8 = maskingKey == nil ? 0 : 0x80
        if length < 126 {
            buffer.append(mask | UInt8(length))
        } else if length <= 0xFFFF {
            buffer.append(mask | 126)
            buffer.append(UInt8(length >> 8))
            buffer.append(UInt8(length & 0xFF))
        } else {
            buffer.append(mask | 127)
            let value = UInt64(length)
            for shift in stride(from: 56, through: 0, by: -8) { buffer.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        if let key = maskingKey { buffer += [key.0, key.1, key.2, key.3] }
    }
}

/// A message encoded once for many connections (docs/design.md#realtime: a broadcast is encoded, and compressed
/// where possible, once per message, not once per subscriber). Pass it to
/// `WebSocketProtocol.send(_:)`, which picks the compressed frame for connections whose
/// permessage-deflate has `server_no_context_takeover` and a window at least as large, and the
/// plain frame otherwise (or compresses afresh under context takeover).
public struct WebSocketEncodedMessage: Sendable {
    /// `.text` or `.binary`.
    public let opcode: WebSocketOpcode
    /// The message payload, uncompressed.
    public let payload: [UInt8]
    /// The whole unmasked frame, uncompressed.
    public let plainFrame: [UInt8]
    /// The whole frame with RSV1 and the payload compressed on its own (no context); nil when
    /// not asked for, or when compressing does not make the payload smaller.
    public let deflatedFrame: [UInt8]?
    /// Log2 of the window `deflatedFrame` was compressed with.
    public let deflateWindowBits: Int

    /// Encodes a text message; with `deflateWindowBits`, also its compressed frame (made with a
    /// compressor created for the purpose; pass a shared one with `init(text:compressor:)`).
    public init(text: String, deflateWindowBits: Int? = 15, compressionLevel: Int = 6) {
        self.init(
            opcode: .text, payload: Array(text.utf8),
            compressor: deflateWindowBits.map {
                PerMessageDeflateCompressor(windowBits: $0, noContextTakeover: true, level: compressionLevel)
            })
    }

    /// Encodes a binary message; with `deflateWindowBits`, also its compressed frame.
    public init(binary: [UInt8], deflateWindowBits: Int? = 15, compressionLevel: Int = 6) {
        self.init(
            opcode: .binary, payload: binary,
            compressor: deflateWindowBits.map {
                PerMessageDeflateCompressor(windowBits: $0, noContextTakeover: true, level: compressionLevel)
            })
    }

    /// Encodes a text message, compressing it with `compressor` (which must be
    /// `noContextTakeover`; typically the event loop's shared one), or not when nil.
    public init(text: String, compressor: PerMessageDeflateCompressor?) {
        self.init(opcode: .text, payload: Array(text.utf8), compressor: compressor)
    }

    /// Encodes a binary message, compressing it with `compressor` (`noContextTakeover`), or not.
    public init(binary: [UInt8], compressor: PerMessageDeflateCompressor?) {
        self.init(opcode: .binary, payload: binary, compressor: compressor)
    }

    private init(opcode: WebSocketOpcode, payload: [UInt8], compressor: PerMessageDeflateCompressor?) {
        self.opcode = opcode
        self.payload = payload
        plainFrame = WebSocketFrameEncoder.encodeMessage(opcode: opcode, payload: payload)
        if let compressor {
            precondition(compressor.noContextTakeover, "a shared encoding needs a compressor without context takeover")
            let compressed = compressor.compress(payload)
            deflatedFrame =
                compressed.count < payload.count
                ? WebSocketFrameEncoder.encodeMessage(opcode: opcode, payload: compressed, compressed: true) : nil
            deflateWindowBits = compressor.windowBits
        } else {
            deflatedFrame = nil
            deflateWindowBits = 15
        }
    }
}
