import CZlib

/// The raw-deflate half of permessage-deflate (RFC 7692 §7.2.1): compresses one message payload
/// at a time with `Z_SYNC_FLUSH` and strips the trailing `00 00 FF FF`.
///
/// A class because zlib's stream must not move in memory, hence `@unchecked Sendable`: use one
/// instance on one queue only. With `noContextTakeover` it keeps no state between messages, so
/// one instance can serve every connection of an event loop (`WebSocketProtocol`'s
/// `sharedCompressor`) and every broadcast encoding made there — zlib's deflate state is
/// ~256 KiB at window 15, memLevel 8, too much to keep per connection at 10k connections.
public final class PerMessageDeflateCompressor: @unchecked Sendable {
    private let stream: UnsafeMutablePointer<z_stream>
    /// Whether the LZ77 window is dropped after every message (`server_no_context_takeover`).
    public let noContextTakeover: Bool
    /// Log2 of the window actually used, 9…15.
    public let windowBits: Int

    /// A compressor with a `2^windowBits` window (8…15; 8 becomes 9, which zlib requires for raw
    /// deflate — still valid for a peer with a 256-byte window, because zlib never emits a
    /// distance beyond `window - 262` bytes) and the zlib compression `level` (0…9).
    public init(windowBits: Int, noContextTakeover: Bool, level: Int = 6, memLevel: Int = 8) {
        self.noContextTakeover = noContextTakeover
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let bits = Int32(min(max(windowBits, 9), 15))
        self.windowBits = Int(bits)
        let status = deflateInit2_(
            stream, Int32(level), Z_DEFLATED, -bits, Int32(min(max(memLevel, 1), 9)), Z_DEFAULT_STRATEGY,
            zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK, "deflateInit2 failed: \(status)")
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// The compressed payload of one message (RFC 7692 §7.2.1: flushed, `00 00 FF FF` removed).
    public func compress(_ payload: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(Int(deflateBound(stream, uLong(payload.count))) + 16)
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        payload.withUnsafeBufferPointer { input in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.pointee.avail_in = uInt(input.count)
            repeat {
                chunk.withUnsafeMutableBufferPointer { out in
                    stream.pointee.next_out = out.baseAddress
                    stream.pointee.avail_out = uInt(out.count)
                    let status = deflate(stream, Z_SYNC_FLUSH)
                    precondition(status == Z_OK || status == Z_BUF_ERROR, "deflate failed: \(status)")
                    output.append(contentsOf: out[..<(out.count - Int(stream.pointee.avail_out))])
                }
            } while stream.pointee.avail_out == 0
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
        }
        if output.count >= 4, output.suffix(4).elementsEqual([0x00, 0x00, 0xFF, 0xFF]) {
            output.removeLast(4)
        }
        if noContextTakeover { deflateReset(stream) }
        return output
    }
}

/// The inflating half of permessage-deflate (RFC 7692 §7.2.2): takes a message's compressed
/// payload frame by frame, appends `00 00 FF FF` at its end, and refuses to produce more than a
/// cap — checked while inflating in bounded chunks, so a decompression bomb never allocates past it.
///
/// A class because zlib's stream must not move; owned by one connection (`@unchecked Sendable`:
/// never share one between queues).
public final class PerMessageDeflateDecompressor: @unchecked Sendable {
    private let stream: UnsafeMutablePointer<z_stream>
    /// Whether the window is dropped after every message (`client_no_context_takeover`).
    public let noContextTakeover: Bool
    /// Output produced per zlib call at most.
    static let chunkSize = 16 * 1024

    /// An inflater for a peer compressing with a window of at most `2^windowBits` (8…15).
    public init(windowBits: Int, noContextTakeover: Bool) {
        self.noContextTakeover = noContextTakeover
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let bits = Int32(min(max(windowBits, 8), 15))
        let status = inflateInit2_(stream, -bits, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK, "inflateInit2 failed: \(status)")
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// The RFC 7692 §7.2.2 tail appended to every message before inflating its end.
    static let tail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]

    /// Inflates the next compressed bytes of a message onto `output`; with `final`, also the
    /// `00 00 FF FF` tail, ending the message (and resetting the window under
    /// `noContextTakeover`). Throws `.messageTooLarge` as soon as `output` would exceed
    /// `maxOutput` bytes, `.decompressionFailed` on invalid data.
    public func decompress(
        _ input: [UInt8], final: Bool, into output: inout [UInt8], maxOutput: Int
    ) throws(WebSocketProtocolError) {
        try feed(input, into: &output, maxOutput: maxOutput)
        if final {
            try feed(Self.tail, into: &output, maxOutput: maxOutput)
            if noContextTakeover { inflateReset(stream) }
        }
    }

    /// Drops the window and any partial message (after a failure).
    public func reset() { inflateReset(stream) }

    private func feed(_ input: [UInt8], into output: inout [UInt8], maxOutput: Int) throws(WebSocketProtocolError) {
        guard !input.isEmpty else { return }
        var failure: WebSocketProtocolError?
        input.withUnsafeBufferPointer { inBuffer in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: inBuffer.baseAddress)
            stream.pointee.avail_in = uInt(inBuffer.count)
            // Inflate into a stack scratch chunk, so no output memory is zero-filled or reserved
            // beyond what the message really inflates to.
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.chunkSize) { scratch in
                inflating: while true {
                    // One byte more than the cap allows, so overflowing is seen without a second call.
                    let room = max(1, min(Self.chunkSize, maxOutput - output.count + 1))
                    stream.pointee.next_out = scratch.baseAddress
                    stream.pointee.avail_out = uInt(room)
                    let status = inflate(stream, Z_SYNC_FLUSH)
                    let produced = room - Int(stream.pointee.avail_out)
                    output.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[..<produced]))
                    if output.count > maxOutput {
                        failure = .messageTooLarge
                        break inflating
                    }
                    switch status {
                    case Z_OK:
                        if stream.pointee.avail_in == 0 && stream.pointee.avail_out != 0 { break inflating }
                        continue
                    case Z_BUF_ERROR:
                        // No progress possible: all input is consumed (a full output chunk would
                        // have been reported as Z_OK).
                        if stream.pointee.avail_in == 0 { break inflating }
                        failure = .decompressionFailed
                    case Z_STREAM_END:
                        // A final block (BFINAL): what follows starts a new raw stream.
                        inflateReset(stream)
                        if stream.pointee.avail_in == 0 { break inflating }
                        continue
                    default:
                        failure = .decompressionFailed
                    }
                    break inflating
                }
            }
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
        }
        if let failure {
            inflateReset(stream)
            throw failure
        }
    }
}
