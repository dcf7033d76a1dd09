/// What the application receives from a WebSocket connection.
public enum WebSocketEvent: Sendable, Equatable {
    /// A complete text message (validated UTF-8).
    case text(String)
    /// A complete binary message.
    case binary([UInt8])
    /// A Ping arrived with this payload (the Pong is already among the actions).
    case ping([UInt8])
    /// A Pong arrived with this payload (an answer to `ping(_:)`, or unsolicited).
    case pong([UInt8])
    /// The connection is closed: the peer's code and reason after a close handshake (1005 when its
    /// Close had no code), the code we sent when its input failed the connection (1002, 1007,
    /// 1009), or 1006 when the TCP stream ended or the close timeout fired without a Close.
    /// Always the last event.
    case closed(WebSocketCloseCode, String)
}

/// What the I/O shell must do; it switches over these without `default:`.
public enum WebSocketAction: Sendable, Equatable {
    /// Hand this event to the application.
    case deliver(WebSocketEvent)
    /// Write these bytes (after whatever earlier actions wrote).
    case send([UInt8])
    /// Write this Close frame, then keep reading until the peer's Close arrives: arm the close
    /// timeout, and call `closeTimedOut()` if it fires first.
    case sendClose([UInt8])
    /// Flush what earlier actions wrote, then close the TCP connection (the server closes first,
    /// RFC 6455 §7.1.1). Nothing follows.
    case closeConnection
    /// Nothing to do (e.g. sending on a connection that is closing).
    case doNothing
}

/// The server side of a WebSocket connection after the handshake (RFC 6455 §5–§8, RFC 7692), as
/// a sans-I/O state machine: bytes in through `receive`, actions out of `next()`; commands from
/// the application (`send`, `ping`, `close`) return the action that carries them out.
///
/// ```
///            close() ──▶ closing ── peer Close / EOF / closeTimedOut() ──▶ closed
///   open ──┤
///            peer Close, protocol error, EOF ─────────────────────────────▶ closed
/// ```
///
/// The shell calls `next()` until it returns nil after every `receive`, `receiveEndOfStream()`
/// and `closeTimedOut()`. Pings are answered automatically (the Pong echoes the payload); a peer
/// Close is answered with a Close echoing its code. A protocol error or exceeded limit sends a
/// Close with the matching code (`WebSocketProtocolError.closeCode`) and closes the connection.
/// While closing, messages are still delivered but nothing is sent; once closed nothing more
/// is processed.
///
/// Copies share the permessage-deflate zlib streams: keep one owner (the connection's queue).
public struct WebSocketProtocol: Sendable {
    /// Where the close handshake stands.
    public enum State: Sendable, Equatable {
        /// Messages flow both ways.
        case open
        /// We sent a Close and wait for the peer's (the shell's close timeout is armed).
        case closing
        /// Done; the last action was `.closeConnection`.
        case closed
    }

    /// Where the close handshake stands.
    public private(set) var state = State.open
    /// The limits enforced on what the peer sends.
    public let limits: WebSocketLimits
    /// The permessage-deflate parameters in force, if negotiated.
    public let deflate: PerMessageDeflateParameters?
    /// The error that failed the connection, if one did.
    public private(set) var failure: WebSocketProtocolError?
    /// Bytes held for the peer: received and not yet decoded, plus the message being assembled.
    /// Bounded by the limits (about `maxFrameSize` + `maxInflatedMessageSize` + one read).
    public var bufferedByteCount: Int { decoder.bufferedByteCount + (assembly?.bytes.count ?? 0) }

    private var decoder: WebSocketFrameDecoder
    /// Created on first use: a connection that only receives shared broadcast encodings never
    /// allocates a compressor (zlib's deflate state is ~256 KiB at window 15, memLevel 8).
    private var compressor: PerMessageDeflateCompressor?
    private var decompressor: PerMessageDeflateDecompressor?

    /// The data message being assembled.
    private struct Assembly: Sendable {
        var isText: Bool
        var compressed: Bool
        var bytes: [UInt8] = []
        var utf8 = UTF8Validator()
    }
    private var assembly: Assembly?
    /// UTF-8 state over the prefix of a text frame still arriving, and how many bytes it covers.
    private var partialText: (validator: UTF8Validator, count: Int)?
    private var queue = ActionQueue<WebSocketAction>()
    private var endOfStream = false

    /// A protocol for a connection whose handshake agreed `deflate` (nil: no extension).
    ///
    /// `sharedCompressor`: a `noContextTakeover` compressor shared by the connections of one
    /// event loop (all on its queue), used instead of a compressor of this connection's own when
    /// the agreement has `server_no_context_takeover` and a window at least as large (a window of
    /// 8 counts as 9). Saves zlib's ~256 KiB of deflate state per connection.
    public init(
        limits: WebSocketLimits = WebSocketLimits(), deflate: PerMessageDeflateParameters? = nil,
        sharedCompressor: PerMessageDeflateCompressor? = nil
    ) {
        self.limits = limits
        self.deflate = deflate
        decoder = WebSocketFrameDecoder(limits: limits, requireMasked: true, perMessageDeflate: deflate != nil)
        if let deflate, let sharedCompressor, deflate.serverNoContextTakeover, sharedCompressor.noContextTakeover,
            sharedCompressor.windowBits <= max(deflate.serverMaxWindowBits, 9)
        {
            compressor = sharedCompressor
        }
    }

    // MARK: Input

    /// Buffers bytes read from the peer; drain `next()` afterwards. Ignored once closed.
    public mutating func receive(_ bytes: UnsafeRawBufferPointer) {
        guard state != .closed, !endOfStream else { return }
        decoder.append(bytes)
    }

    /// Buffers bytes read from the peer; drain `next()` afterwards. Ignored once closed.
    public mutating func receive(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { receive($0) }
    }

    /// The peer ended its stream (read returned 0); drain `next()` afterwards. Without a Close
    /// first this is an abnormal closure (1006).
    public mutating func receiveEndOfStream() {
        endOfStream = true
    }

    /// The close timeout armed after `.sendClose` fired before the peer's Close came; drain
    /// `next()` afterwards (`.closed(1006)`, then `.closeConnection`).
    public mutating func closeTimedOut() {
        guard state == .closing else { return }
        finish(event: .closed(.abnormalClosure, ""), sending: nil)
    }

    /// The next action, or nil when more input is needed (or everything is done).
    public mutating func next() -> WebSocketAction? {
        while true {
            if let action = queue.popFirst() { return action }
            guard state != .closed else { return nil }
            let frame: WebSocketFrame?
            do {
                frame = try decoder.next()
            } catch {
                fail(error)
                continue
            }
            guard let frame else {
                if !checkPartialText() { continue }
                if endOfStream {
                    finish(event: .closed(.abnormalClosure, ""), sending: nil)
                    continue
                }
                return nil
            }
            do {
                try handle(frame)
            } catch {
                fail(error)
            }
        }
    }

    /// Validates the UTF-8 of an uncompressed text frame whose payload is still arriving, so
    /// invalid text fails before its frame completes (RFC 6455 §8.1; Autobahn 6.4). False when it
    /// failed the connection.
    private mutating func checkPartialText() -> Bool {
        guard let partial = decoder.partialDataFrame, !partial.payloadPrefix.isEmpty else { return true }
        var state: (validator: UTF8Validator, count: Int)
        if let partialText {
            state = partialText
        } else if partial.opcode == .text, !partial.rsv1 {
            state = (UTF8Validator(), 0)
        } else if partial.opcode == .continuation, let assembly, assembly.isText, !assembly.compressed {
            state = (assembly.utf8, 0)
        } else {
            return true
        }
        let prefix = partial.payloadPrefix
        guard state.count < prefix.count else { return true }
        let valid = prefix.withUnsafeBufferPointer {
            state.validator.validate(UnsafeBufferPointer(rebasing: $0[state.count...]))
        }
        guard valid else {
            fail(.invalidUTF8)
            return false
        }
        state.count = prefix.count
        partialText = state
        return true
    }

    private mutating func enqueue(_ action: WebSocketAction) {
        queue.append(action)
    }

    /// Delivers the final event, sends `closeFrame` when still open, and closes.
    private mutating func finish(event: WebSocketEvent, sending closeFrame: [UInt8]?) {
        enqueue(.deliver(event))
        if state == .open, let closeFrame { enqueue(.send(closeFrame)) }
        enqueue(.closeConnection)
        state = .closed
        assembly = nil
        partialText = nil
        decompressor?.reset()
    }

    /// _Fail the WebSocket Connection_ (RFC 6455 §7.1.7).
    private mutating func fail(_ error: WebSocketProtocolError) {
        failure = error
        finish(
            event: .closed(error.closeCode, error.reason),
            sending: WebSocketFrameEncoder.encodeClose(code: error.closeCode, reason: error.reason))
    }

    private mutating func handle(_ frame: WebSocketFrame) throws(WebSocketProtocolError) {
        switch frame.opcode {
        case .ping:
            if state == .open { enqueue(.send(WebSocketFrameEncoder.encodeMessage(opcode: .pong, payload: frame.payload))) }
            enqueue(.deliver(.ping(frame.payload)))
        case .pong:
            enqueue(.deliver(.pong(frame.payload)))
        case .close:
            try handleClose(frame.payload)
        case .text, .binary:
            // The decoder has checked the sequencing: no message is open here.
            assembly = Assembly(isText: frame.opcode == .text, compressed: frame.rsv1)
            try append(frame)
        default:  // .continuation: the decoder guarantees an open message
            try append(frame)
        }
    }

    private mutating func handleClose(_ payload: [UInt8]) throws(WebSocketProtocolError) {
        var code: WebSocketCloseCode?
        var reason = ""
        if payload.count == 1 { throw .invalidClosePayload }
        if payload.count >= 2 {
            let value = UInt16(payload[0]) << 8 | UInt16(payload[1])
            let candidate = WebSocketCloseCode(rawValue: value)
            guard candidate.isValidOnWire else { throw .invalidCloseCode(value) }
            var validator = UTF8Validator()
            let reasonBytes = Array(payload[2...])
            guard validator.validate(reasonBytes), validator.isComplete else { throw .invalidUTF8 }
            code = candidate
            reason = String(decoding: reasonBytes, as: UTF8.self)
        }
        // RFC 6455 §5.5.1: reply with a Close, typically echoing the status code received.
        finish(event: .closed(code ?? .noStatusReceived, reason), sending: WebSocketFrameEncoder.encodeClose(code: code))
    }

    private mutating func append(_ frame: WebSocketFrame) throws(WebSocketProtocolError) {
        guard var message = assembly else { return }
        assembly = nil  // keep the buffer uniquely referenced while appending
        var before = message.bytes.count
        if let partialText {
            // This frame's prefix was validated while it arrived.
            message.utf8 = partialText.validator
            before += partialText.count
            self.partialText = nil
        }
        if message.compressed, let deflate {
            let decompressor =
                self.decompressor
                ?? PerMessageDeflateDecompressor(
                    windowBits: deflate.clientMaxWindowBits, noContextTakeover: deflate.clientNoContextTakeover)
            self.decompressor = decompressor
            try decompressor.decompress(
                frame.payload, final: frame.fin, into: &message.bytes, maxOutput: limits.maxInflatedMessageSize)
        } else if message.bytes.isEmpty {
            message.bytes = frame.payload  // an unfragmented message: no copy
        } else {
            message.bytes.append(contentsOf: frame.payload)
        }
        if message.isText {
            // Validate only the new bytes: fail fast at the first bad sequence (RFC 6455 §8.1).
            let valid = message.bytes.withUnsafeBufferPointer {
                message.utf8.validate(UnsafeBufferPointer(rebasing: $0[before...]))
            }
            guard valid else { throw .invalidUTF8 }
        }
        guard frame.fin else {
            assembly = message
            return
        }
        if message.isText {
            guard message.utf8.isComplete else { throw .invalidUTF8 }
            enqueue(.deliver(.text(String(decoding: message.bytes, as: UTF8.self))))
        } else {
            enqueue(.deliver(.binary(message.bytes)))
        }
    }

    // MARK: Commands

    /// Sends a text message (compressed when permessage-deflate was agreed); `.doNothing` unless open.
    public mutating func send(text: String) -> WebSocketAction {
        guard state == .open else { return .doNothing }
        if deflate == nil { return .send(WebSocketFrameEncoder.encodeMessage(opcode: .text, payload: text.utf8)) }
        return sendMessage(opcode: .text, payload: Array(text.utf8))
    }

    /// Sends a binary message (compressed when permessage-deflate was agreed); `.doNothing` unless open.
    public mutating func send(binary: [UInt8]) -> WebSocketAction {
        sendMessage(opcode: .binary, payload: binary)
    }

    /// Sends a message encoded once for many connections, reusing its bytes where this
    /// connection's agreement allows (see `WebSocketEncodedMessage`); `.doNothing` unless open.
    public mutating func send(_ message: WebSocketEncodedMessage) -> WebSocketAction {
        guard state == .open else { return .doNothing }
        guard let deflate else { return .send(message.plainFrame) }
        if deflate.serverNoContextTakeover {
            if message.deflatedFrame == nil { return .send(message.plainFrame) }  // incompressible
            if let deflated = message.deflatedFrame, message.deflateWindowBits <= max(deflate.serverMaxWindowBits, 9) {
                return .send(deflated)
            }
        }
        return sendMessage(opcode: message.opcode, payload: message.payload)
    }

    private mutating func sendMessage(opcode: WebSocketOpcode, payload: [UInt8]) -> WebSocketAction {
        guard state == .open else { return .doNothing }
        if let deflate {
            let compressor =
                self.compressor
                ?? PerMessageDeflateCompressor(
                    windowBits: deflate.serverMaxWindowBits, noContextTakeover: deflate.serverNoContextTakeover,
                    level: deflate.compressionLevel)
            self.compressor = compressor
            let compressed = compressor.compress(payload)
            // Without context takeover an uncompressed message leaves both sides' state alone, so
            // a payload that does not shrink goes out as is (RFC 7692 §6: RSV1 is per message).
            // With takeover the compressor's window already holds it: it must go compressed.
            if deflate.serverNoContextTakeover, compressed.count >= payload.count {
                return .send(WebSocketFrameEncoder.encodeMessage(opcode: opcode, payload: payload))
            }
            return .send(WebSocketFrameEncoder.encodeMessage(opcode: opcode, payload: compressed, compressed: true))
        }
        return .send(WebSocketFrameEncoder.encodeMessage(opcode: opcode, payload: payload))
    }

    /// Sends a Ping (payload cut to 125 bytes); `.doNothing` unless open. The answer arrives as
    /// `.pong`; heartbeat deadlines are the shell's.
    public mutating func ping(_ payload: [UInt8] = []) -> WebSocketAction {
        guard state == .open else { return .doNothing }
        return .send(WebSocketFrameEncoder.encodeMessage(opcode: .ping, payload: Array(payload.prefix(125))))
    }

    /// Starts the close handshake (RFC 6455 §7.1.2): `.sendClose(frame)` and state `.closing`;
    /// `.doNothing` unless open. `code` should be valid on the wire (e.g. 1000, 1001, 1008, 1011,
    /// 4000); one that is not (1005, 1006, 1015…) sends a Close without code or reason, which
    /// the peer reads as 1005. `reason` is cut to 123 bytes.
    public mutating func close(code: WebSocketCloseCode = .normalClosure, reason: String = "") -> WebSocketAction {
        guard state == .open else { return .doNothing }
        state = .closing
        return .sendClose(WebSocketFrameEncoder.encodeClose(code: code.isValidOnWire ? code : nil, reason: reason))
    }
}
