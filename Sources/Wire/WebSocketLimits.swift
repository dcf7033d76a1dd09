/// Size limits a `WebSocketProtocol` enforces on what the peer sends (docs/design.md#bad-input). Each is checked
/// as soon as the length it bounds is known — a frame's length at its header, before its payload is
/// buffered; an inflated message while it is being inflated — and exceeding one closes with 1009
/// (Message Too Big), except where the RFC itself sets the bound (control frames: 1002).
public struct WebSocketLimits: Sendable, Equatable {
    /// Largest payload of one frame, as sent on the wire. Our realtime messages are small JSON
    /// documents and snapshots; 1 MiB bounds what one connection can make us buffer. Larger → 1009.
    public var maxFrameSize = 1 << 20

    /// Largest message: the payloads of all its frames together, as sent (compressed bytes for a
    /// compressed message). Fragmentation must not bypass `maxFrameSize`. Larger → 1009.
    public var maxMessageSize = 1 << 20

    /// Largest payload of a control frame. RFC 6455 §5.5 fixes 125; larger values are treated as
    /// 125. Larger payloads → 1002 (the RFC's bound) or 1009 (a lower limit set here).
    public var maxControlPayload = 125

    /// Largest message after permessage-deflate inflation. Checked while inflating in bounded
    /// chunks, so a decompression bomb never allocates more than this. Larger → 1009.
    public var maxInflatedMessageSize = 1 << 20

    /// The defaults above.
    public init() {}

    /// Limits with the given values; `maxInflatedMessageSize` defaults to `maxMessageSize`.
    public init(
        maxFrameSize: Int = 1 << 20,
        maxMessageSize: Int = 1 << 20,
        maxControlPayload: Int = 125,
        maxInflatedMessageSize: Int? = nil
    ) {
        self.maxFrameSize = maxFrameSize
        self.maxMessageSize = maxMessageSize
        self.maxControlPayload = maxControlPayload
        self.maxInflatedMessageSize = maxInflatedMessageSize ?? maxMessageSize
    }
}
