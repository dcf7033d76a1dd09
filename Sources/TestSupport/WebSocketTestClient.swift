public import Wire

/// A blocking WebSocket client for tests against a server on 127.0.0.1 (RFC 6455 client side,
/// deliberately small): sends the opening handshake, masks every frame it sends (unless told not
/// to, to test the server's refusal), and reads frames one at a time. Every read has a timeout.
///
/// ```swift
/// let ws = try WebSocketTestClient(port: port)
/// try ws.send(text: "hi")
/// #expect(try ws.readFrame() == .init(opcode: .text, payload: Array("hi".utf8)))
/// ```
public final class WebSocketTestClient {
    /// One frame as received (unmasked; servers never mask).
    public struct Frame: Equatable, Sendable, CustomStringConvertible {
        public var fin: Bool
        public var rsv1: Bool
        public var opcode: WebSocketOpcode
        public var payload: [UInt8]

        public init(fin: Bool = true, rsv1: Bool = false, opcode: WebSocketOpcode, payload: [UInt8]) {
            self.fin = fin
            self.rsv1 = rsv1
            self.opcode = opcode
            self.payload = payload
        }

        /// The close code of a Close frame (nil without one).
        public var closeCode: UInt16? {
            payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil
        }

        /// The close reason of a Close frame.
        public var closeReason: String { String(decoding: payload.dropFirst(2), as: UTF8.self) }

        public var description: String {
            "Frame(\(opcode)\(fin ? "" : " !fin")\(rsv1 ? " rsv1" : "") \(payload.count) bytes)"
        }
    }

    /// The `Sec-WebSocket-Key` the client sends (RFC 6455 §1.3's sample).
    public static let key = "dGhlIHNhbXBsZSBub25jZQ=="
    /// The accept value a server must answer `key` with.
    public static let expectedAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

    /// The TCP connection.
    public let connection: LoopbackClient
    /// The server's answer to the handshake (101 when the upgrade was accepted).
    public let handshake: LoopbackClient.Response
    private var inbound: [UInt8] = []
    private var maskSeed: UInt8 = 0x5A

    /// Connects and sends an opening handshake for `path`, with `Sec-WebSocket-Extensions:
    /// extensions` when given and `extraHeaders` (which replace the standard ones by name, so a
    /// test can send a wrong version or key; an empty value drops the field). `earlyBytes` go out
    /// in the same write as the request (frames sent before the 101 arrived). Check
    /// `handshake.status` before sending frames.
    public init(
        port: Int, path: String = "/", extensions: String? = nil, extraHeaders: [(String, String)] = [],
        earlyBytes: [UInt8] = [], timeout: Duration = LoopbackClient.hangBound
    ) throws(LoopbackClient.Failure) {
        connection = try LoopbackClient(port: port, timeout: timeout)
        var headers: [(String, String)] = [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", Self.key),
            ("Sec-WebSocket-Version", "13"),
        ]
        if let extensions { headers.append(("Sec-WebSocket-Extensions", extensions)) }
        for (name, value) in extraHeaders {
            headers.removeAll { $0.0.lowercased() == name.lowercased() }
            if !value.isEmpty { headers.append((name, value)) }
        }
        try connection.send(LoopbackClient.requestBytes("GET", path, headers: headers) + earlyBytes)
        handshake = try connection.readResponse()
    }

    /// The response field `name` of the handshake.
    public func handshakeHeader(_ name: String) -> String? { LoopbackClient.value(of: name, in: handshake.headers) }

    // MARK: Sending

    /// The bytes of one client frame: masked with a varying key unless `masked` is false.
    public func frameBytes(
        opcode: WebSocketOpcode, payload: [UInt8], fin: Bool = true, rsv1: Bool = false, masked: Bool = true
    ) -> [UInt8] {
        maskSeed = maskSeed &* 31 &+ 7
        return Self.frameBytes(opcode: opcode, payload: payload, fin: fin, rsv1: rsv1, masked: masked, seed: maskSeed)
    }

    /// The bytes of one client frame, masked with a key derived from `seed` unless `masked` is false.
    public static func frameBytes(
        opcode: WebSocketOpcode, payload: [UInt8], fin: Bool = true, rsv1: Bool = false, masked: Bool = true,
        seed: UInt8 = 0x5A
    ) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode.rawValue]
        let maskBit: UInt8 = masked ? 0x80 : 0
        if payload.count < 126 {
            bytes.append(maskBit | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            bytes.append(maskBit | 126)
            bytes += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            bytes.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((payload.count >> shift) & 0xFF)) }
        }
        guard masked else { return bytes + payload }
        let mask: [UInt8] = [seed, seed ^ 0xA5, seed &+ 0x3C, ~seed]
        bytes += mask
        bytes.reserveCapacity(bytes.count + payload.count)
        for (i, byte) in payload.enumerated() { bytes.append(byte ^ mask[i & 3]) }
        return bytes
    }

    /// Sends one frame (see `frameBytes`).
    public func send(
        opcode: WebSocketOpcode, payload: [UInt8], fin: Bool = true, rsv1: Bool = false, masked: Bool = true
    ) throws(LoopbackClient.Failure) {
        try connection.send(frameBytes(opcode: opcode, payload: payload, fin: fin, rsv1: rsv1, masked: masked))
    }

    /// Sends a text message in one frame.
    public func send(text: String) throws(LoopbackClient.Failure) {
        try send(opcode: .text, payload: Array(text.utf8))
    }

    /// Sends a Close with `code` and `reason` (nil code: an empty Close).
    public func sendClose(code: UInt16? = 1000, reason: String = "") throws(LoopbackClient.Failure) {
        try send(opcode: .close, payload: Self.closePayload(code: code, reason: reason))
    }

    /// A Close frame's payload.
    public static func closePayload(code: UInt16?, reason: String = "") -> [UInt8] {
        guard let code else { return [] }
        return [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8)
    }

    // MARK: Receiving

    /// Reads the next frame; throws `.closed` if the server closes first, `.timedOut` if nothing
    /// complete arrives within `timeout`.
    public func readFrame(timeout: Duration? = nil) throws(LoopbackClient.Failure) -> Frame {
        while true {
            if let frame = try parseFrame() { return frame }
            let more = try connection.receive(timeout: timeout)
            if more.isEmpty { throw .closed(received: inbound) }
            inbound += more
        }
    }

    /// Reads frames until the server closes the TCP connection (or `timeout`); returns them.
    public func readUntilClose(timeout: Duration? = nil) throws(LoopbackClient.Failure) -> [Frame] {
        var frames: [Frame] = []
        while true {
            do {
                frames.append(try readFrame(timeout: timeout))
            } catch .closed {
                return frames
            } catch .system(call: _, errno: _) {
                return frames  // reset
            }
        }
    }

    private func parseFrame() throws(LoopbackClient.Failure) -> Frame? {
        guard inbound.count >= 2 else { return nil }
        let first = inbound[0]
        let second = inbound[1]
        if second & 0x80 != 0 { throw .malformed("server frame is masked") }
        var length = Int(second & 0x7F)
        var offset = 2
        if length == 126 {
            guard inbound.count >= 4 else { return nil }
            length = Int(inbound[2]) << 8 | Int(inbound[3])
            offset = 4
        } else if length == 127 {
            guard inbound.count >= 10 else { return nil }
            length = 0
            for i in 2..<10 { length = length << 8 | Int(inbound[i]) }
            offset = 10
        }
        guard inbound.count >= offset + length else { return nil }
        let payload = Array(inbound[offset..<(offset + length)])
        inbound.removeFirst(offset + length)
        return Frame(
            fin: first & 0x80 != 0, rsv1: first & 0x40 != 0, opcode: WebSocketOpcode(rawValue: first & 0x0F),
            payload: payload)
    }
}
