/// Replays an input the way a network may deliver it — split at every offset, and one byte at a
/// time — so a sans-I/O decoder can be shown to give the same output for every split (the
/// uWebSockets habit; STYLE.md habit 10). Decoder-agnostic: HTTP requests today, WebSocket frames
/// later.
///
/// ```swift
/// let runs = ChunkFeeder.replay(input, make: { HTTPRequestParser() }) { parser, chunk in
///     parser.append(chunk)
///     return drain(&parser)
/// }
/// for run in runs { #expect(run.outputs == expected, "\(run.split)") }
/// ```
public enum ChunkFeeder {
    /// One way of cutting an input into consecutive chunks.
    public struct Split: Sendable, CustomStringConvertible {
        /// The chunks, in order; their concatenation is the input. A chunk may be empty.
        public var chunks: [[UInt8]]
        /// E.g. "split at 17 of 40" or "one byte at a time (40 bytes)".
        public var description: String

        public init(chunks: [[UInt8]], description: String) {
            self.chunks = chunks
            self.description = description
        }
    }

    /// Every two-part split of `input` — at offsets 0 through `input.count`, so the first is an
    /// empty chunk then the whole input, and the last the whole input then an empty chunk — plus
    /// `input` delivered one byte at a time.
    public static func splits(of input: [UInt8]) -> [Split] {
        var result: [Split] = []
        result.reserveCapacity(input.count + 2)
        for offset in 0...input.count {
            result.append(
                Split(
                    chunks: [Array(input[..<offset]), Array(input[offset...])],
                    description: "split at \(offset) of \(input.count)"))
        }
        result.append(Split(chunks: input.map { [$0] }, description: "one byte at a time (\(input.count) bytes)"))
        return result
    }

    /// For every split of `input` (see `splits(of:)`), makes a fresh decoder with `make`, calls
    /// `feed` with each chunk in order, and concatenates what `feed` returns.
    public static func replay<Decoder, Output>(
        _ input: [UInt8],
        make: () -> Decoder,
        feed: (inout Decoder, [UInt8]) -> [Output]
    ) -> [(split: Split, outputs: [Output])] {
        splits(of: input).map { split in
            var decoder = make()
            var outputs: [Output] = []
            for chunk in split.chunks { outputs += feed(&decoder, chunk) }
            return (split, outputs)
        }
    }

    /// The first split whose outputs differ from `expected`, with what it produced; nil when every
    /// split agrees.
    public static func firstMismatch<Decoder, Output: Equatable>(
        _ input: [UInt8],
        expected: [Output],
        make: () -> Decoder,
        feed: (inout Decoder, [UInt8]) -> [Output]
    ) -> (split: Split, outputs: [Output])? {
        for split in splits(of: input) {
            var decoder = make()
            var outputs: [Output] = []
            for chunk in split.chunks { outputs += feed(&decoder, chunk) }
            if outputs != expected { return (split, outputs) }
        }
        return nil
    }
}
