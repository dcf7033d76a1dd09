// libFuzzer harness for the server side of `WebSocketProtocol` (frames, message assembly,
// UTF-8, close handshake, permessage-deflate). Built by `Tests/Fuzz/fuzz.sh ws` with swiftc
// together with Sources/Wire/*.swift (so no `import Wire`: one module; zlib via -I Sources/CZlib).
//
// The first input byte picks the configuration:
//   bit 0  permessage-deflate negotiated
//   bit 1  small limits (so the limit paths are reached by short inputs)
//   bit 2  client_no_context_takeover / server_no_context_takeover
//   bit 3  structured: the rest is a list of frame descriptions, built into masked client frames
//          (payloads compressed by a real client compressor when RSV1 is asked for), so valid
//          deflate streams and deep fragmentation are reached; otherwise the rest is raw bytes.
// The stream is fed four ways — whole, one byte at a time, in halves, in input-derived chunks —
// then ended (EOF). Invariants, any breach of which traps:
// - every split yields the same actions;
// - nothing follows `.closeConnection`, which comes exactly once (EOF guarantees a close), right
//   after the single `.closed` event; the state is `.closed` at the end;
// - delivered messages respect the limits (inflated size ≤ maxInflatedMessageSize, plain ≤
//   maxMessageSize); text is valid UTF-8; control payloads ≤ 125 bytes;
// - every `.send` is a well-formed unmasked server frame (pong or close) that our own decoder
//   accepts; a close carries a code valid on the wire, or none;
// - after the end, sending is `.doNothing` and more input yields nothing.

let smallLimits = WebSocketLimits(maxFrameSize: 64, maxMessageSize: 96, maxControlPayload: 125, maxInflatedMessageSize: 128)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 1 else { return 0 }
    let mode = data[0]
    let rest = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let noContext = mode & 4 != 0
    let deflate: PerMessageDeflateParameters? =
        mode & 1 != 0
        ? PerMessageDeflateParameters(
            serverNoContextTakeover: noContext, clientNoContextTakeover: noContext, serverMaxWindowBits: noContext ? 9 : 15)
        : nil
    let limits = mode & 2 != 0 ? smallLimits : WebSocketLimits()
    let stream = mode & 8 != 0 ? buildFrames(rest, clientNoContextTakeover: noContext) : rest

    let whole = transcript(stream, chunkSizes: [stream.count], limits: limits, deflate: deflate)
    let patterns: [(String, [Int])] = [
        ("one byte at a time", Array(repeating: 1, count: stream.count)),
        ("halves", [stream.count / 2, stream.count - stream.count / 2]),
        ("derived", derivedChunkSizes(stream)),
    ]
    for (name, sizes) in patterns {
        let other = transcript(stream, chunkSizes: sizes, limits: limits, deflate: deflate)
        if other != whole {
            fatalError("split '\(name)' disagrees:\n  whole: \(whole)\n  \(name): \(other)")
        }
    }
    return 0
}

/// Frames described by the input: per frame a flags byte (bits 0–3 opcode, 4 FIN, 5 RSV1,
/// 6 mask bit clear — unmasked, 7 extended 16-bit length), a length byte (or two), then payload.
func buildFrames(_ input: [UInt8], clientNoContextTakeover: Bool) -> [UInt8] {
    let compressor = PerMessageDeflateCompressor(windowBits: 15, noContextTakeover: clientNoContextTakeover)
    var out: [UInt8] = []
    var i = 0
    while i + 2 <= input.count {
        let flags = input[i]
        var length = Int(input[i + 1])
        i += 2
        if flags & 0x80 != 0, i < input.count {
            length = length << 8 | Int(input[i])
            i += 1
        }
        let payload = Array(input[i..<min(i + length, input.count)])
        i += payload.count
        let rsv1 = flags & 0x20 != 0
        let frame = WebSocketFrame(
            fin: flags & 0x10 != 0, rsv1: rsv1, opcode: WebSocketOpcode(rawValue: flags & 0x0F),
            maskingKey: flags & 0x40 != 0 ? nil : (payload.first ?? 1, 0x5A, 0xA5, 0x3C),
            payload: rsv1 ? compressor.compress(payload) : payload)
        WebSocketFrameEncoder.encode(frame, into: &out)
    }
    return out
}

/// Checks that `bytes` are exactly one unmasked server control frame and returns it.
func serverFrame(_ bytes: [UInt8]) -> WebSocketFrame {
    var decoder = WebSocketFrameDecoder(requireMasked: false)
    decoder.append(bytes)
    do {
        guard let frame = try decoder.next() else { fatalError("incomplete server frame \(bytes)") }
        check(decoder.bufferedByteCount == 0, "trailing bytes after a server frame")
        check(!frame.masked && frame.fin && !frame.rsv1, "server frame flags")
        return frame
    } catch {
        fatalError("our own frame does not decode: \(error) \(bytes)")
    }
}

/// Feeds `input` in chunks of `chunkSizes` then EOF, draining actions after each, checking
/// invariants; returns the actions.
func transcript(
    _ input: [UInt8], chunkSizes: [Int], limits: WebSocketLimits, deflate: PerMessageDeflateParameters?
) -> [WebSocketAction] {
    var proto = WebSocketProtocol(limits: limits, deflate: deflate)
    var actions: [WebSocketAction] = []
    var closedEvents = 0
    var connectionClosed = false
    var offset = 0

    func drain() {
        while let action = proto.next() {
            check(!connectionClosed, "action after .closeConnection: \(action)")
            switch action {
            case .deliver(let event):
                check(closedEvents == 0, "event after .closed: \(event)")
                switch event {
                case .text(let text):
                    var validator = UTF8Validator()
                    check(validator.validate(Array(text.utf8)) && validator.isComplete, "invalid text delivered")
                    check(text.utf8.count <= limits.maxInflatedMessageSize, "text over the limit")
                    if deflate == nil { check(text.utf8.count <= limits.maxMessageSize, "text over the message limit") }
                case .binary(let bytes):
                    check(bytes.count <= limits.maxInflatedMessageSize, "binary over the limit")
                    if deflate == nil { check(bytes.count <= limits.maxMessageSize, "binary over the message limit") }
                case .ping(let payload), .pong(let payload):
                    check(payload.count <= 125, "control payload over 125")
                case .closed:
                    closedEvents += 1
                }
            case .send(let bytes):
                check(
                    closedEvents == 0 || actions.last.map { if case .deliver(.closed) = $0 { true } else { false } } == true,
                    "send after the close event")
                let frame = serverFrame(bytes)
                check(frame.opcode == .pong || frame.opcode == .close, "server sent \(frame.opcode) unasked")
                if frame.opcode == .close, frame.payload.count >= 2 {
                    let code = WebSocketCloseCode(rawValue: UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]))
                    check(code.isValidOnWire, "server sent close code \(code)")
                } else if frame.opcode == .close {
                    check(frame.payload.isEmpty, "one-byte close")
                }
            case .sendClose:
                fatalError(".sendClose without close()")
            case .closeConnection:
                check(closedEvents == 1, ".closeConnection without exactly one .closed")
                connectionClosed = true
            case .doNothing:
                fatalError(".doNothing from next()")
            }
            actions.append(action)
        }
    }

    for length in chunkSizes {
        let end = min(offset + length, input.count)
        input[offset..<end].withUnsafeBytes { proto.receive($0) }
        offset = end
        drain()
        if connectionClosed { break }
    }
    proto.receiveEndOfStream()
    drain()
    check(connectionClosed && proto.state == .closed, "not closed after EOF")
    check(proto.send(text: "x") == .doNothing && proto.ping() == .doNothing && proto.close() == .doNothing, "send after close")
    proto.receive([0x81, 0x80, 0, 0, 0, 0])
    check(proto.next() == nil, "input processed after close")
    return actions
}
