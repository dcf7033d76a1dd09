/// A sans-I/O decoder for the frames a client sends a server (RFC 6455 §5): bytes in through
/// `append`, frames out of `next()`.
///
/// Everything a frame's header can tell is checked as soon as the header byte that carries it has
/// arrived — before the payload is buffered — so every split of an input yields the same frames
/// and the same error:
/// - MASK must be set (§5.1: a server MUST close on an unmasked frame) when `requireMasked`;
/// - RSV1 only with permessage-deflate, and then only on the first frame of a data message
///   (RFC 7692 §6.1); RSV2/RSV3 never;
/// - reserved opcodes; control frames fragmented or longer than 125 bytes (§5.5);
/// - a continuation with no message open, or a new text/binary frame while one is (§5.4);
/// - a 64-bit length with its most significant bit set; lengths need not be minimal;
/// - `maxFrameSize`, `maxControlPayload`, and `maxMessageSize` summed over a message's frames.
///
/// After a throw the decoder is dead: every later `next()` throws the same error and `append`
/// is ignored.
public struct WebSocketFrameDecoder: Sendable {
    /// The limits this decoder enforces (frame and message sizes as sent on the wire).
    public let limits: WebSocketLimits
    /// Whether frames must be masked (true for a server reading client frames).
    public let requireMasked: Bool
    /// Whether permessage-deflate was negotiated, which gives RSV1 its meaning.
    public let perMessageDeflate: Bool

    /// Bytes received and not yet consumed by a returned frame.
    public var bufferedByteCount: Int { buffer.count - start }
    /// Whether a fragmented data message is open (its last frame has not been returned yet).
    public var isInsideMessage: Bool { messageOpen }

    private struct Header: Sendable {
        var fin: Bool
        var rsv1: Bool
        var opcode: WebSocketOpcode
        var maskingKey: (UInt8, UInt8, UInt8, UInt8)?
        var length: Int
    }

    private enum Phase: Sendable {
        case header
        /// Reading the payload; the first `unmasked` bytes of it in the buffer are unmasked already.
        case payload(Header, unmasked: Int)
        case failed(WebSocketProtocolError)
    }

    private var buffer: [UInt8] = []
    private var start = 0
    private var phase = Phase.header
    private var messageOpen = false
    /// Payload bytes of the open message's frames so far, as sent.
    private var messageBytes = 0

    /// A decoder; a server passes `requireMasked: true` and whether permessage-deflate was agreed.
    public init(limits: WebSocketLimits = WebSocketLimits(), requireMasked: Bool = true, perMessageDeflate: Bool = false) {
        self.limits = limits
        self.requireMasked = requireMasked
        self.perMessageDeflate = perMessageDeflate
    }

    /// Buffers received bytes; call `next()` until it returns nil afterwards.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        if case .failed = phase { return }
        compact()
        bytes.withMemoryRebound(to: UInt8.self) { buffer.append(contentsOf: $0) }
    }

    /// Buffers received bytes; call `next()` until it returns nil afterwards.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Largest buffer capacity kept once everything buffered is consumed. WebSocket connections
    /// are long-lived and mostly idle: an idle one keeps at most this much, not its largest frame.
    static let retainedCapacity = 16 * 1024

    /// Drops consumed bytes when that is cheap (see `dropConsumedBytes`).
    private mutating func compact() { dropConsumedBytes(&buffer, start: &start, retainedCapacity: Self.retainedCapacity) }

    /// The next complete frame, or nil when more bytes are needed. Throws on a protocol violation
    /// or an exceeded limit; the decoder is dead afterwards.
    public mutating func next() throws(WebSocketProtocolError) -> WebSocketFrame? {
        do throws(WebSocketProtocolError) {
            while true {
                switch phase {
                case .failed(let error):
                    throw error
                case .header:
                    guard let header = try parseHeader() else { return nil }
                    phase = .payload(header, unmasked: 0)
                case .payload(let header, let unmasked):
                    let available = min(bufferedByteCount, header.length)
                    if let key = header.maskingKey, available > unmasked {
                        buffer.withUnsafeMutableBytes { raw in
                            Self.applyMask(
                                key, to: UnsafeMutableRawBufferPointer(rebasing: raw[(start + unmasked)..<(start + available)]),
                                startingAt: unmasked)
                        }
                    }
                    guard available == header.length else {
                        phase = .payload(header, unmasked: available)
                        return nil
                    }
                    let payload = Array(buffer[start..<(start + header.length)])
                    start += header.length
                    if start == buffer.count, buffer.capacity > Self.retainedCapacity {
                        buffer = []  // don't keep a large frame's worth of memory while idle
                        start = 0
                    }
                    phase = .header
                    return WebSocketFrame(
                        fin: header.fin, rsv1: header.rsv1, opcode: header.opcode, maskingKey: header.maskingKey,
                        payload: payload)
                }
            }
        } catch {
            phase = .failed(error)
            buffer = []
            start = 0
            throw error
        }
    }

    /// Parses and consumes a whole header, or returns nil (consuming nothing) when more bytes are
    /// needed. Checks each field as soon as its bytes are buffered.
    private mutating func parseHeader() throws(WebSocketProtocolError) -> Header? {
        let available = bufferedByteCount
        guard available >= 1 else { return nil }
        let b0 = buffer[start]
        let fin = b0 & 0x80 != 0
        let rsv1 = b0 & 0x40 != 0
        let opcode = WebSocketOpcode(rawValue: b0)
        guard opcode.isDefined else { throw .reservedOpcode(opcode.rawValue) }
        if b0 & 0x30 != 0 { throw .reservedBitsSet }
        if opcode.isControl {
            if rsv1 { throw .reservedBitsSet }
            // RFC 6455 §5.5: all control frames MUST NOT be fragmented.
            if !fin { throw .fragmentedControlFrame }
        } else if opcode == .continuation {
            if !messageOpen { throw .unexpectedContinuation }
            // RFC 7692 §6.1: RSV1 is set on the first frame of a message only.
            if rsv1 { throw .reservedBitsSet }
        } else {
            if messageOpen { throw .expectedContinuation }
            if rsv1 && !perMessageDeflate { throw .reservedBitsSet }
        }

        guard available >= 2 else { return nil }
        let b1 = buffer[start + 1]
        let masked = b1 & 0x80 != 0
        if requireMasked && !masked { throw .unmaskedFrame }
        let length7 = Int(b1 & 0x7F)
        var length: Int
        var headerLength: Int
        switch length7 {
        case 126:
            headerLength = 4
            guard available >= 4 else { return nil }
            length = Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
        case 127:
            headerLength = 10
            guard available >= 3 else { return nil }
            // RFC 6455 §5.2: the most significant bit MUST be 0.
            if buffer[start + 2] & 0x80 != 0 { throw .invalidPayloadLength }
            guard available >= 10 else { return nil }
            var value: UInt64 = 0
            for i in 2..<10 { value = value << 8 | UInt64(buffer[start + i]) }
            length = value > UInt64(Int.max) ? Int.max : Int(value)
        default:
            headerLength = 2
            length = length7
        }
        if opcode.isControl {
            // RFC 6455 §5.5: control frames MUST have a payload length of 125 bytes or less.
            if length > 125 { throw .controlFrameTooLong }
            if length > limits.maxControlPayload { throw .frameTooLarge }
        } else {
            if length > limits.maxFrameSize { throw .frameTooLarge }
            let before = opcode == .continuation ? messageBytes : 0
            if length > limits.maxMessageSize - before { throw .messageTooLarge }
        }

        if masked { headerLength += 4 }
        guard available >= headerLength else { return nil }
        var key: (UInt8, UInt8, UInt8, UInt8)?
        if masked {
            let k = start + headerLength - 4
            key = (buffer[k], buffer[k + 1], buffer[k + 2], buffer[k + 3])
        }
        start += headerLength
        if !opcode.isControl {
            messageBytes = (opcode == .continuation ? messageBytes : 0) + length
            messageOpen = !fin
        }
        return Header(fin: fin, rsv1: rsv1, opcode: opcode, maskingKey: key, length: length)
    }

    /// The data frame whose payload is arriving, when `next()` last returned nil inside one: its
    /// opcode, RSV1 and the payload bytes received so far, unmasked. Lets a text message's UTF-8
    /// be checked before its frame is complete (RFC 6455 §8.1 fail fast). Nil otherwise.
    public var partialDataFrame: (opcode: WebSocketOpcode, rsv1: Bool, payloadPrefix: ArraySlice<UInt8>)? {
        guard case .payload(let header, let unmasked) = phase, !header.opcode.isControl else { return nil }
        return (header.opcode, header.rsv1, buffer[start..<(start + unmasked)])
    }

    /// XORs `payload` with the masking key (RFC 6455 §5.3), eight bytes at a time.
    static func applyMask(_ key: (UInt8, UInt8, UInt8, UInt8), to payload: inout [UInt8]) {
        payload.withUnsafeMutableBytes { applyMask(key, to: $0, startingAt: 0) }
    }

    /// XORs `raw` with the masking key, `raw[0]` being byte `position` of the payload.
    static func applyMask(_ key: (UInt8, UInt8, UInt8, UInt8), to raw: UnsafeMutableRawBufferPointer, startingAt position: Int) {
        // Little-endian: byte j of `key32` is key[j]; rotating by the position aligns it.
        let key32 = UInt32(key.0) | UInt32(key.1) << 8 | UInt32(key.2) << 16 | UInt32(key.3) << 24
        let rotation = UInt32((position & 3) * 8)
        let rotated = rotation == 0 ? key32 : key32 >> rotation | key32 << (32 - rotation)
        var i = 0
        let count = raw.count
        #if _endian(little)
            if let base = raw.baseAddress {
                let key64 = UInt64(rotated) | UInt64(rotated) << 32
                while i &+ 8 <= count {
                    let word = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                    base.storeBytes(of: word ^ key64, toByteOffset: i, as: UInt64.self)
                    i &+= 8
                }
            }
        #endif
        while i < count {
            raw[i] ^= UInt8(truncatingIfNeeded: rotated >> UInt32((i & 3) * 8))
            i &+= 1
        }
    }
}
