/// Every limit of the realtime core, with its default and the reason for it (STYLE habit 3).
public struct RealtimeLimits: Sendable, Equatable {
    /// Largest client message (bytes of JSON text). Client messages are one op, a topic, a seq or a
    /// token — well under 1 KiB — so 4 KiB is generous; more is abuse → close 1009 before parsing.
    public var maxInboundMessageBytes = 4096
    /// Subscriptions per connection: each costs a snapshot read and per-topic state. 50 covers a user
    /// in many groups (groups hold ≤ 10 members each, a user rarely joins dozens). The 51st → error.
    public var maxTopicsPerConnection = 50
    /// Sockets per user (phones, tablets, browser tabs): bounds what one account can hold open.
    public var maxConnectionsPerUser = 20
    /// Invalid client messages tolerated per connection (each answered with an `error`); past this the
    /// client is broken or hostile → close 4000.
    public var maxProtocolErrors = 20
    /// Outbound bytes queued for a connection past which no change or snapshot is queued for it:
    /// its topics conflate into one fresh snapshot each, sent when the socket drains.
    public var softOutboundBytes = 256 * 1024
    /// Outbound bytes past which the connection is closed (4008). Must exceed `softOutboundBytes` plus
    /// the largest snapshot, since one message may be queued while under the soft limit.
    public var hardOutboundBytes = 1024 * 1024
    /// A conflated topic's fresh snapshot is requested once the buffer reported by the shell is at or
    /// below this (hysteresis, so a socket hovering at the soft limit does not re-snapshot per write).
    public var resumeOutboundBytes = 64 * 1024
    /// Changes held per subscription while its snapshot or replay is being read. Past this (or
    /// `maxHeldBytes`) the held changes are dropped and a newer snapshot is read instead, so a slow
    /// read cannot grow memory without bound.
    public var maxHeldChanges = 256
    /// Bytes of held changes per subscription (see `maxHeldChanges`).
    public var maxHeldBytes = 256 * 1024
    /// Rows a resume may replay for one topic; more → a fresh snapshot with `reset: true` (cheaper to
    /// read and send than thousands of stale documents).
    public var maxReplayRows = 1000
    /// Suspended/deleted accounts remembered (user id + seq, ~100 bytes each) to close a socket whose
    /// token was checked just before the suspension but reported to the hub just after it.
    public var maxRememberedAccountClosures = 4096
    /// Revoked sessions remembered (public id + seq, ~100 bytes each), for the same race: a socket
    /// whose token was checked just before its session was revoked but reported just after.
    public var maxRememberedSessionClosures = 4096
    /// How often the shell calls `RealtimeHub.flushPresence` (the presence debounce): joins and
    /// leaves within one interval are announced together, a flapping connection not at all.
    public var presenceIntervalMilliseconds = 2000
    /// Commands (subscribe/unsubscribe) queued while an `auth` message is being checked.
    public var maxCommandsWhileAuthenticating = 64

    /// The defaults above.
    public init() {}
}
