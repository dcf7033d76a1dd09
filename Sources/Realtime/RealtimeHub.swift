public import Domain

/// Identifies one WebSocket connection; assigned by the I/O shell, unique for the process lifetime.
public struct ConnectionID: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (a: ConnectionID, b: ConnectionID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "#\(rawValue)" }
}

/// A read the hub asks the shell to do for one subscription. Hand it back unchanged with the result
/// (`snapshotReady`, `replayReady`, `accessDenied`, `readFailed`); a result for a request the hub no
/// longer waits for (unsubscribed, revoked, closed, superseded) is ignored.
public struct LoadRequest: Hashable, Sendable {
    public let connection: ConnectionID
    /// The connection's user: whose access to check, whose feed `.user` is.
    public let userID: String
    public let topic: Topic
    /// Distinguishes successive reads for the same (connection, topic).
    public let ticket: UInt64
    /// The client's `id` on the `subscribe` that caused the read (echoed in `error`), if any.
    public let requestID: RequestID?
}

/// What the shell must do after a hub call, in order. Switch over it with no `default:`.
public enum HubAction: Equatable, Sendable {
    /// Write `bytes` as one text message to one connection.
    case send(ConnectionID, [UInt8])
    /// Write the same text message to every listed connection, in list order: frame (and, without
    /// context takeover, compress) it ONCE (docs/design.md#realtime). Live changes fan out this way.
    case broadcast([ConnectionID], [UInt8])
    /// Check a bearer token from an `auth` message (session store, off the loop), then call
    /// `authenticated(_:userID:)`, `authenticationFailed(_:)` (no such live session), or
    /// `authenticationUnavailable(_:)` (the check itself failed: the database could not be read).
    case authenticate(ConnectionID, token: String)
    /// In ONE read transaction begun after this action was returned: for a `group:` topic check
    /// `request.userID`'s active membership (else call `accessDenied`), read the topic's snapshot data
    /// and the log's max seq S, then call `snapshotReady(request, seq: S, data:)`.
    case needSnapshot(LoadRequest)
    /// In ONE read transaction begun after this action was returned: the same access check, then
    /// `ChangeFeed.replay(topic: request.topic.logName, after:, maxRows: limits.maxReplayRows,
    /// member: request.userID)`, then call `replayReady(request, replay)`.
    case needReplay(LoadRequest, after: Int64)
    /// Send a close frame with `code` and `reason`, then call `disconnect` once the socket is gone.
    /// The hub sends nothing more to this connection.
    case close(ConnectionID, CloseCode, reason: String)
}

/// The realtime feed's state machine: connections, subscriptions, fan-out of change-log batches,
/// resume, revocation and per-connection outbound budgets. One per server process, owned by one
/// serial queue (the shell's); every method returns the actions to perform. No I/O, no clocks.
///
/// Per (connection, topic) a subscription is:
///
///     subscribe ──▶ loading ──snapshotReady/replayReady──▶ live(seq) ──over soft limit──▶ stale
///                      ▲  (changes held, capped)              │ changes with seq > position   │
///                      └──────────── buffer drained: fresh snapshot (reset) ◀─────────────────┘
///
/// Access: a subscription is *granted* once a read confirmed the user's access (its snapshot or replay
/// result made it live, or stale when the connection was over its soft limit). Only granted group
/// subscriptions count for presence, so a socket whose `group:` subscribe is still being checked —
/// possibly a non-member's — is never announced nor reported to other instances. A granted
/// subscription that re-reads (a `reset` after a gap, a conflated one's fresh snapshot after the drain)
/// stays granted while that read is pending: its user stays present, no leave/join pair. It stops
/// counting when it ends (unsubscribe, `revoked`, `not_found` or `unavailable` on the re-read, close).
///
/// Ordering guarantee: after a snapshot or replay at S, only changes with seq > S are sent, each
/// once and in order; a change that cannot be sent (budget, held overflow, a gap in the ingested
/// log) is never skipped silently — the client gets a newer snapshot marked `reset` instead.
///
/// Driving it (the I/O shell; every call on the hub's one serial queue, actions performed in order):
///
/// - start: `RealtimeHub(position: ChangeLog.latestSeq, epoch:)`, the seq read at startup.
/// - upgrade accepted: `connect(id, userID:checkedAt:)` (nil user → start the 5 s auth timer, then
///   `authDeadlinePassed`); text message: `receive(id, text:)`; socket gone: `disconnect(id)`.
/// - `.authenticate(id, token)`: check the session off the loop (with `latestSeq` in the same read) →
///   `authenticated(id, userID:checkedAt:)`, `authenticationFailed(id)` (no such session) or
///   `authenticationUnavailable(id)` (the read failed — never reported as a bad token).
/// - `.needSnapshot` / `.needReplay`: read on the reader pool in ONE transaction begun after the
///   action (access check, data or `ChangeFeed.replay`, max seq), hop back, call `snapshotReady` /
///   `replayReady` / `accessDenied` (no access) / `readFailed` (the database failed) with the
///   request unchanged.
/// - commits: after a local write, or when `PRAGMA data_version` changes (another process), read
///   `ChangeFeed.batches(after: position)` (all topics) and call `ingest`; loop while the read was full.
/// - write progress: `outboundBuffered(id, bytes:)` with the bytes still queued (0 when drained).
/// - revocation: sessions end only through the change log (`sessions_revoked` batches: logout,
///   sign-out elsewhere, a password change or reset, suspension, an operator) and close 4003 in
///   `ingest`, for the connections whose `connect`/`authenticated` named that `sessionID`.
/// - presence: `flushPresence()` every `limits.presenceIntervalMilliseconds` (one repeating timer),
///   then `takeLocalPresence()` for the other instances; their users: `setClusterPresence`.
/// - `.send` / `.broadcast`: frame (and compress) once per action, write to each connection's loop;
///   `.close`: close handshake with the code, then `disconnect` when the socket is gone.
public struct RealtimeHub: Sendable {
    /// The limits in force.
    public let limits: RealtimeLimits
    /// Recently suspended or deleted accounts → the seq of that batch, so a token checked before it
    /// but reported after it (`connect`/`authenticated` with `checkedAt`) still closes. Bounded by
    /// `limits.maxRememberedAccountClosures` (oldest forgotten first).
    var accountClosures: RecentClosures
    /// Recently revoked sessions (public id) → the seq of their `sessions_revoked` row, like
    /// `accountClosures`. Bounded by `limits.maxRememberedSessionClosures`.
    var sessionClosures: RecentClosures
    /// The seq of the last change-log row ingested: poll `ChangeFeed.batches(after: position)`.
    public private(set) var position: Int64
    /// Running totals for the shell's metrics (only ever grow).
    public private(set) var counters = Counters()
    /// Subscriptions in any phase, over all connections.
    public private(set) var subscriptionCount = 0

    /// What the hub has done since it started: cumulative counts the sans-I/O core keeps and the shell
    /// reports (`RealtimeMetrics.record` adds what grew since its last call).
    public struct Counters: Sendable, Equatable {
        /// A subscription went stale (over the soft limit): its changes conflate into one snapshot.
        public var conflations = 0
        /// Connections closed 4008.
        public var slowConsumerCloses = 0
        /// `revoked` messages sent.
        public var revocations = 0
        /// Resumes (`subscribe` with `since`) answered by replaying the changes after it.
        public var resumesReplayed = 0
        /// Resumes answered with a `reset` snapshot (log pruned, too far behind, access changed,
        /// another epoch).
        public var resumesReset = 0

        /// Totals as given (all zero: nothing done yet).
        public init(
            conflations: Int = 0, slowConsumerCloses: Int = 0, revocations: Int = 0, resumesReplayed: Int = 0,
            resumesReset: Int = 0
        ) {
            self.conflations = conflations
            self.slowConsumerCloses = slowConsumerCloses
            self.revocations = revocations
            self.resumesReplayed = resumesReplayed
            self.resumesReset = resumesReset
        }
    }

    var connections: [ConnectionID: ConnectionState] = [:]
    var subscribers: [Topic: Set<ConnectionID>] = [:]
    var connectionsByUser: [String: Set<ConnectionID>] = [:]
    /// Authenticated connections by their session's public id (those that named one).
    var connectionsBySession: [String: Set<ConnectionID>] = [:]
    /// Groups whose set of present users (granted subscriptions) may have changed since the last
    /// `flushPresence`.
    var presenceDirty: Set<String> = []
    /// Per group, the users last announced as present (in snapshots and `presence` messages):
    /// local ∪ cluster as of the last `flushPresence`.
    var presenceAnnounced: [String: Set<String>] = [:]
    /// Per group, the users present on OTHER instances (`setClusterPresence`); empty on one server.
    var presenceCluster: [String: Set<String>] = [:]
    /// Per group, the users with a granted subscription on THIS instance as of the last `flushPresence`.
    var presenceLocal: [String: Set<String>] = [:]
    /// Groups whose local set changed at a flush since the last `takeLocalPresence`.
    var presenceLocalChanged: Set<String> = []
    /// Changes held per loading subscription.
    var held: [SubscriptionKey: Held] = [:]
    var nextTicket: UInt64 = 0
    let decoder: ClientMessageDecoder

    /// The log's epoch named in snapshots (nil: none); see `ServerMessage`.
    public let epoch: String?

    /// A hub that delivers changes after `position` (the log's latest seq when the server starts).
    /// `epoch` identifies the database's history (e.g. an id created with the database) so clients
    /// can tell a restored database from a continued one.
    public init(position: Int64, epoch: String? = nil, limits: RealtimeLimits = RealtimeLimits()) {
        self.epoch = epoch
        self.position = position
        self.limits = limits
        self.decoder = ClientMessageDecoder(limits: limits)
        accountClosures = RecentClosures(capacity: limits.maxRememberedAccountClosures)
        sessionClosures = RecentClosures(capacity: limits.maxRememberedSessionClosures)
    }

    // MARK: - Connection state

    enum Auth: Sendable {
        case anonymous
        case authenticating(queued: [ClientMessage])
        case authenticated(userID: String)
    }

    enum LoadMode: Sendable, Equatable {
        case snapshot(reset: Bool)
        case replay(since: Int64)
    }

    struct SubscriptionKey: Hashable, Sendable {
        var connection: ConnectionID
        var topic: Topic
    }

    struct Held: Sendable {
        /// The hub's position when the read was requested: a read at S below it would leave a gap
        /// (changes ingested before the subscription existed), so it is requested again.
        var floor: Int64 = 0
        var changes: [EncodedChange] = []
        var bytes = 0
        /// Set when held changes were dropped (caps): a read at S below it is not enough.
        var droppedThrough: Int64?
    }

    enum Phase: Sendable {
        /// Held changes live in `RealtimeHub.held` (mutated in place, never copied per change).
        case loading(LoadRequest, LoadMode)
        case live(seq: Int64)
        /// Conflating: changes are dropped until the buffer drains, then a fresh snapshot is read.
        case stale(reset: Bool)
    }

    struct ConnectionState: Sendable {
        var auth: Auth
        var subscriptions: [Topic: Phase] = [:]
        /// The subscribed topics whose access a read confirmed (see "Access" on `RealtimeHub`): a
        /// subset of `subscriptions`' keys; only these count for presence.
        var granted: Set<Topic> = []
        /// Outbound bytes queued: the shell's last report plus what the hub sent since.
        var buffered = 0
        var protocolErrors = 0
        var closed = false
        /// The public id of the session the connection authenticated with (nil: not given).
        var sessionID: String?

        var userID: String? {
            if case .authenticated(let id) = auth { return id }
            return nil
        }
    }

    // MARK: - Inspection (for the shell's metrics and for tests)

    /// Open (not closed) connections.
    public var connectionCount: Int { connections.values.count { !$0.closed } }

    /// The topics a connection is subscribed to, in any phase.
    public func topics(of connection: ConnectionID) -> Set<Topic> {
        guard let state = connections[connection] else { return [] }
        return Set(state.subscriptions.keys)
    }

    /// The outbound bytes the hub believes are queued for the connection.
    public func bufferedBytes(of connection: ConnectionID) -> Int { connections[connection]?.buffered ?? 0 }

    /// Changes held for a subscription whose snapshot or replay is being read (0 otherwise).
    public func heldChangeCount(_ connection: ConnectionID, _ topic: Topic) -> Int {
        held[SubscriptionKey(connection: connection, topic: topic)]?.changes.count ?? 0
    }

    // MARK: - Connections

    /// A WebSocket was accepted. `userID` when the upgrade carried a valid `Authorization: Bearer`;
    /// nil when the client must send `{"op":"auth"}` — the shell then starts the auth deadline timer
    /// and calls `authDeadlinePassed` when it fires. `checkedAt`: the log's max seq read together with
    /// the token check; if the account was suspended or deleted after it, or the session `sessionID`
    /// (its public id) revoked, the socket closes (4003).
    public mutating func connect(
        _ id: ConnectionID, userID: String?, checkedAt: Int64? = nil, sessionID: String? = nil
    ) -> [HubAction] {
        guard connections[id] == nil else { return [] }
        var out: [HubAction] = []
        connections[id] = ConnectionState(auth: .anonymous)
        if let userID { admit(id, userID: userID, checkedAt: checkedAt, sessionID: sessionID, &out) }
        return out
    }

    /// The socket is gone (closed by either side). Forgets everything about it; no actions.
    public mutating func disconnect(_ id: ConnectionID) {
        guard let state = connections.removeValue(forKey: id) else { return }
        for topic in state.subscriptions.keys { removeSubscriber(id, topic) }
        if let userID = state.userID { removeUserConnection(id, userID) }
        if let sessionID = state.sessionID {
            connectionsBySession[sessionID]?.remove(id)
            if connectionsBySession[sessionID]?.isEmpty == true { connectionsBySession[sessionID] = nil }
        }
    }

    /// The token of an `auth` message is valid for `userID` (checked in a read at log seq
    /// `checkedAt`, see `connect`) with the session `sessionID`: queued commands run now.
    public mutating func authenticated(
        _ id: ConnectionID, userID: String, checkedAt: Int64? = nil, sessionID: String? = nil
    ) -> [HubAction] {
        guard let state = connections[id], !state.closed, case .authenticating(let queued) = state.auth else { return [] }
        var out: [HubAction] = []
        admit(id, userID: userID, checkedAt: checkedAt, sessionID: sessionID, &out)
        guard connections[id]?.closed == false else { return out }
        for message in queued { handle(id, message, &out) }
        return out
    }

    /// The token of an `auth` message is invalid → close 4001.
    public mutating func authenticationFailed(_ id: ConnectionID) -> [HubAction] {
        closing(id, .authenticationFailed, reason: "authentication failed")
    }

    /// The token of an `auth` message could not be checked (the session read failed: storage
    /// unavailable) → close 1013 Try Again Later. Nothing is known about the token, so this is not
    /// an authentication failure: the client keeps its token and reconnects with back-off.
    public mutating func authenticationUnavailable(_ id: ConnectionID) -> [HubAction] {
        closing(id, .tryAgainLater, reason: "storage unavailable; try again later")
    }

    /// The session behind this connection lapsed (idle expiry) while the socket was open → close 4001,
    /// so the client knows to sign in again.
    public mutating func sessionExpired(_ id: ConnectionID) -> [HubAction] {
        closing(id, .authenticationFailed, reason: "session expired")
    }

    /// The auth deadline (5 s after `connect` without a user) passed: close 4001 if no `auth` came.
    /// A connection whose `auth` is still being checked is left to the check's outcome — a slow
    /// database (an outage) is not the client's failure to authenticate.
    public mutating func authDeadlinePassed(_ id: ConnectionID) -> [HubAction] {
        guard let state = connections[id], case .anonymous = state.auth else { return [] }
        return closing(id, .authenticationFailed, reason: "authentication timeout")
    }

    /// The shell's count of bytes queued on the socket and not yet written (report it when writes make
    /// progress, and 0 when the queue empties). Past the hard limit → close 4008; at or below
    /// `resumeOutboundBytes` the conflated topics get their fresh snapshot read.
    public mutating func outboundBuffered(_ id: ConnectionID, bytes: Int) -> [HubAction] {
        // Called for every recipient after every broadcast: the state is read and set in place.
        guard let index = connections.index(forKey: id), !connections.values[index].closed else { return [] }
        var out: [HubAction] = []
        connections.values[index].buffered = bytes
        if bytes > limits.hardOutboundBytes {
            close(id, .slowConsumer, reason: "slow consumer", &out)
            return out
        }
        let isStale: (Phase) -> Bool = { if case .stale = $0 { true } else { false } }
        guard bytes <= limits.resumeOutboundBytes, connections.values[index].subscriptions.values.contains(where: isStale)
        else { return out }
        for (topic, phase) in connections.values[index].subscriptions.sorted(by: { $0.key.logName < $1.key.logName }) {
            if case .stale(let reset) = phase { load(id, topic, .snapshot(reset: reset), &out) }
        }
        return out
    }

    // MARK: - Client messages

    /// One complete text message from the client: decoded under the limits and handled.
    public mutating func receive(_ id: ConnectionID, text: [UInt8]) -> [HubAction] {
        guard let state = connections[id], !state.closed else { return [] }
        var out: [HubAction] = []
        do {
            let message = try decoder.decode(text)
            handle(id, message, &out)
        } catch .tooLarge(let size) {
            close(id, .messageTooBig, reason: "message of \(size) bytes is too big", &out)
        } catch {
            refuse(id, code: error.code, message: error.message, topic: nil, requestID: nil, &out)
        }
        return out
    }

    /// Handles a decoded client message (what `receive` does after decoding).
    public mutating func handle(_ id: ConnectionID, _ message: ClientMessage) -> [HubAction] {
        var out: [HubAction] = []
        handle(id, message, &out)
        return out
    }

    mutating func handle(_ id: ConnectionID, _ message: ClientMessage, _ out: inout [HubAction]) {
        guard let state = connections[id], !state.closed else { return }
        switch message {
        case .ping(let requestID):
            send(id, ServerMessage.pong(id: requestID), &out)
        case .auth(let token, let requestID):
            guard case .anonymous = state.auth else {
                return refuse(
                    id, code: .alreadyAuthenticated, message: "already authenticated", topic: nil,
                    requestID: requestID, &out)
            }
            connections[id]?.auth = .authenticating(queued: [])
            out.append(.authenticate(id, token: token))
        case .subscribe(let wire, _, _, let requestID), .unsubscribe(let wire, let requestID):
            switch state.auth {
            case .anonymous:
                refuse(id, code: .notAuthenticated, message: "send auth first", topic: wire, requestID: requestID, &out)
            case .authenticating(var queued):
                guard queued.count < limits.maxCommandsWhileAuthenticating else {
                    return refuse(
                        id, code: .tooManyRequests, message: "too many requests before authentication",
                        topic: wire, requestID: requestID, &out)
                }
                queued.append(message)
                connections[id]?.auth = .authenticating(queued: queued)
            case .authenticated(let userID):
                let topic: Topic
                do {
                    topic = try Topic(wire: wire, userID: userID)
                } catch {
                    return refuse(id, code: .invalidTopic, message: "unknown topic", topic: wire, requestID: requestID, &out)
                }
                if case .subscribe(_, let since, let clientEpoch, _) = message {
                    subscribe(id, topic, since: since, clientEpoch: clientEpoch, wire: wire, requestID: requestID, &out)
                } else {
                    unsubscribe(id, topic)
                }
            }
        }
    }

    mutating func subscribe(
        _ id: ConnectionID, _ topic: Topic, since: Int64?, clientEpoch: String?, wire: String, requestID: RequestID?,
        _ out: inout [HubAction]
    ) {
        guard let state = connections[id] else { return }
        guard state.subscriptions[topic] == nil else {
            return refuse(
                id, code: .alreadySubscribed, message: "already subscribed", topic: wire,
                requestID: requestID, &out)
        }
        guard state.subscriptions.count < limits.maxTopicsPerConnection else {
            return refuse(
                id, code: .tooManyTopics, message: "at most \(limits.maxTopicsPerConnection) topics per connection",
                topic: wire, requestID: requestID, &out)
        }
        if subscribers[topic, default: []].insert(id).inserted { subscriptionCount += 1 }
        let mode: LoadMode
        if let since {
            mode = clientEpoch == nil || clientEpoch == epoch ? .replay(since: since) : .snapshot(reset: true)
            if case .snapshot = mode { counters.resumesReset += 1 }
        } else {
            mode = .snapshot(reset: false)
        }
        load(id, topic, mode, requestID: requestID, &out)
    }

    /// Ends a subscription at once: nothing more is sent for it (pending reads are ignored).
    mutating func unsubscribe(_ id: ConnectionID, _ topic: Topic) {
        guard connections[id]?.subscriptions.removeValue(forKey: topic) != nil else { return }
        connections[id]?.granted.remove(topic)
        removeSubscriber(id, topic)
    }

    /// A read confirmed access to `topic` for this subscription: from now on (and while it re-reads)
    /// its user counts for the group's presence, announced at the next `flushPresence`.
    mutating func grant(_ id: ConnectionID, _ topic: Topic) {
        guard connections[id]?.granted.insert(topic).inserted == true, case .group(let groupID) = topic else { return }
        presenceDirty.insert(groupID)
    }

    // MARK: - Read results

    /// The snapshot for `request`, read together with the log's max seq `seq` (S). Sends it (unless
    /// the connection is over its soft limit: then it is read again after the drain), then the held
    /// changes with seq > S. If held changes were dropped past S, reads a newer snapshot instead.
    public mutating func snapshotReady(_ request: LoadRequest, seq: Int64, data: [UInt8]) -> [HubAction] {
        guard case .loading(let current, let mode)? = phase(request), current == request else { return [] }
        var out: [HubAction] = []
        let id = request.connection
        let topic = request.topic
        let key = SubscriptionKey(connection: id, topic: topic)
        let held = self.held[key] ?? Held()
        let reset: Bool
        switch mode {
        case .snapshot(let r): reset = r
        case .replay: reset = true
        }
        if seq < held.floor || seq < (held.droppedThrough ?? 0) {
            load(id, topic, .snapshot(reset: reset), &out)
            return out
        }
        self.held[key] = nil
        grant(id, topic)
        guard (connections[id]?.buffered ?? 0) <= limits.softOutboundBytes else {
            connections[id]?.subscriptions[topic] = .stale(reset: reset)
            counters.conflations += 1
            return out
        }
        connections[id]?.subscriptions[topic] = .live(seq: seq)
        let presence: [String]? = if case .group(let groupID) = topic { (presenceAnnounced[groupID] ?? []).sorted() } else { nil }
        send(
            id, ServerMessage.snapshot(topic: topic, seq: seq, data: data, reset: reset, epoch: epoch, presence: presence),
            &out)
        for change in held.changes { deliver(change, to: id, &out) }
        return out
    }

    /// The resume read for `request`: when the log reaches back to `since` (and not too far), sends
    /// the topic's batches after `since`, then held changes after the read's `latestSeq`; otherwise
    /// asks for a fresh snapshot marked `reset`.
    public mutating func replayReady(_ request: LoadRequest, _ replay: ChangeFeed.Replay) -> [HubAction] {
        guard case .loading(let current, .replay(let since))? = phase(request), current == request else { return [] }
        var out: [HubAction] = []
        let id = request.connection
        let topic = request.topic
        let key = SubscriptionKey(connection: id, topic: topic)
        let held = self.held[key] ?? Held()
        if replay.latestSeq < held.floor {
            load(id, topic, .replay(since: since), &out)
            return out
        }
        let droppedTooMuch = replay.latestSeq < (held.droppedThrough ?? 0)
        guard replay.reachesBack(to: since), !replay.truncated, !replay.accessChanged, !droppedTooMuch else {
            counters.resumesReset += 1
            load(id, topic, .snapshot(reset: true), &out)
            return out
        }
        counters.resumesReplayed += 1
        self.held[key] = nil
        grant(id, topic)
        connections[id]?.subscriptions[topic] = .live(seq: since)
        for batch in replay.batches {
            let rows = batch.rows.filter { $0.change.topic == topic.logName }
            guard !rows.isEmpty else { continue }
            deliver(ServerMessage.change(topic: topic, event: batch.event, rows: rows), to: id, &out)
        }
        if case .live? = connections[id]?.subscriptions[topic] {
            connections[id]?.subscriptions[topic] = .live(seq: max(since, replay.latestSeq))
        }
        for change in held.changes { deliver(change, to: id, &out) }
        return out
    }

    /// The user may not read `request.topic` (not an active member, or no such group): the
    /// subscription ends with `error` code `not_found` — the same answer whether or not the group exists.
    public mutating func accessDenied(_ request: LoadRequest) -> [HubAction] {
        endLoading(request, code: .notFound, message: "topic not found")
    }

    /// The read for `request` failed (the database, not access): the subscription ends with `error`
    /// code `unavailable`, so the client can tell it from `not_found` and subscribe again later.
    /// Not counted as a protocol error (the client did nothing wrong).
    public mutating func readFailed(_ request: LoadRequest) -> [HubAction] {
        endLoading(request, code: .unavailable, message: "topic could not be read; subscribe again later")
    }

    /// Ends the subscription `request` is still loading with an `error` message (`code`, `message`);
    /// nothing when the subscription moved on (unsubscribed, or a newer load replaced it).
    private mutating func endLoading(_ request: LoadRequest, code: RealtimeErrorCode, message: String) -> [HubAction] {
        guard case .loading(let current, _)? = phase(request), current == request else { return [] }
        var out: [HubAction] = []
        unsubscribe(request.connection, request.topic)
        send(
            request.connection,
            ServerMessage.error(code: code, message: message, topic: request.topic.wireName, id: request.requestID),
            &out)
        return out
    }

    // MARK: - Presence

    /// Announces who has each group subscribed — on this instance (granted subscriptions only: one
    /// still waiting for its access check does not count) or, per `setClusterPresence`, on
    /// another. The shell calls it on a timer (`limits.presenceIntervalMilliseconds`), which is the
    /// debounce: a connection that drops and comes back between two calls announces nothing. Per
    /// changed group, one `presence` broadcast (joined/left user ids) to its live subscribers;
    /// snapshots carry the announced set, so a client holds snapshot presence + later presence
    /// messages. A subscriber over its soft limit gets no message and conflates into a reset
    /// snapshot instead.
    public mutating func flushPresence() -> [HubAction] {
        var out: [HubAction] = []
        let dirty = presenceDirty
        presenceDirty = []
        for groupID in dirty.sorted() {
            let topic = Topic.group(groupID)
            let ids = (subscribers[topic] ?? []).sorted()
            let local = Set(ids.compactMap { id in connections[id].flatMap { $0.granted.contains(topic) ? $0.userID : nil } })
            if local != presenceLocal[groupID] ?? [] {
                presenceLocal[groupID] = local.isEmpty ? nil : local
                presenceLocalChanged.insert(groupID)
            }
            let current = local.union(presenceCluster[groupID] ?? [])
            let announced = presenceAnnounced[groupID] ?? []
            presenceAnnounced[groupID] = current.isEmpty ? nil : current
            let joined = current.subtracting(announced).sorted()
            let left = announced.subtracting(current).sorted()
            guard !joined.isEmpty || !left.isEmpty else { continue }
            let bytes = ServerMessage.presence(topic: topic, joined: joined, left: left)
            var recipients: [ConnectionID] = []
            var overHard: [ConnectionID] = []
            for id in ids {
                guard case .live? = connections[id]?.subscriptions[topic], connections[id]?.closed == false else { continue }
                let buffered = connections[id]?.buffered ?? 0
                guard buffered <= limits.softOutboundBytes else {
                    connections[id]?.subscriptions[topic] = .stale(reset: true)
                    counters.conflations += 1
                    continue
                }
                connections[id]?.buffered = buffered + bytes.count
                recipients.append(id)
                if buffered + bytes.count > limits.hardOutboundBytes { overHard.append(id) }
            }
            if !recipients.isEmpty { out.append(.broadcast(recipients, bytes)) }
            for id in overHard { close(id, .slowConsumer, reason: "slow consumer", &out) }
        }
        return out
    }

    /// The users present in `groupID` on OTHER instances sharing the database (read by the shell
    /// from `ClusterPresenceStore`), replacing the previous set; empty: nobody. A change is announced
    /// at the next `flushPresence`, merged with this instance's own subscribers. No actions.
    public mutating func setClusterPresence(groupID: String, users: Set<String>) {
        guard users != presenceCluster[groupID] ?? [] else { return }
        presenceCluster[groupID] = users.isEmpty ? nil : users
        presenceDirty.insert(groupID)
    }

    /// For the other instances: per group whose set of users subscribed HERE (granted) changed at a
    /// `flushPresence` since the last call, that set now (empty: nobody here any more). Changes that
    /// cancel out between two flushes are never reported. The shell calls it after every flush.
    public mutating func takeLocalPresence() -> [String: Set<String>] {
        defer { presenceLocalChanged = [] }
        var changes: [String: Set<String>] = [:]
        for groupID in presenceLocalChanged { changes[groupID] = presenceLocal[groupID] ?? [] }
        return changes
    }

    // MARK: - Change-log fan-out

    /// New change-log batches in seq order, read for ALL topics (`ChangeFeed.batches(after: position)`); batches at or below `position`
    /// are skipped. Seqs are dense, so a batch starting past `position + 1` means rows were missed (retention, a shell bug): every
    /// subscription is then re-read as a `reset` snapshot rather than continued over the gap. Per batch, in this order: revoked
    /// sessions' and suspended/deleted accounts' connections close (4003); subscriptions whose access the batch ends get `revoked`
    /// (before, and instead of, the batch's change); then each topic's rows become one `change` (encoded once) for its subscribers (one
    /// `.broadcast`) — sent when live, held while loading, dropped when stale.
    public mutating func ingest(_ batches: [ChangeFeed.Batch]) -> [HubAction] {
        var out: [HubAction] = []
        for batch in batches where batch.lastSeq > position {
            if batch.batch > position + 1 { resynchronize(missedThrough: batch.batch - 1, &out) }
            ingest(batch, &out)
            position = batch.lastSeq
        }
        return out
    }

    mutating func ingest(_ batch: ChangeFeed.Batch, _ out: inout [HubAction]) {
        for row in batch.rows where row.change.kind == .session && row.change.op == .removed {
            let sessionID = row.change.entityID
            sessionClosures.remember(sessionID, at: row.seq)
            for id in (connectionsBySession[sessionID] ?? []).sorted() {
                close(id, .sessionRevoked, reason: "session revoked", &out)
            }
        }
        for row in batch.rows where row.change.kind == .user {
            guard case .user(let userID)? = Topic(logName: row.change.topic), row.change.entityID == userID else { continue }
            if batch.event == .userSuspended {
                accountClosures.remember(userID, at: row.seq)
                closeUser(userID, reason: "account suspended", &out)
            } else if row.change.op == .removed {
                accountClosures.remember(userID, at: row.seq)
                closeUser(userID, reason: "account deleted", &out)
            }
        }
        for row in batch.rows where row.change.kind == .group && row.change.op == .removed {
            switch Topic(logName: row.change.topic) {
            case .user(let userID)?:
                for id in (connectionsByUser[userID] ?? []).sorted() {
                    revoke(id, .group(row.change.entityID), seq: row.seq, reason: .revocation(event: batch.event), &out)
                }
            case .group(let groupID)? where groupID == row.change.entityID:
                for id in (subscribers[.group(groupID)] ?? []).sorted() {
                    revoke(id, .group(groupID), seq: row.seq, reason: .deleted, &out)
                }
            case .group?, nil:
                break
            }
        }
        var topics: [String] = []
        var rowsByTopic: [String: [ChangeFeed.Row]] = [:]
        for row in batch.rows {
            if rowsByTopic[row.change.topic] == nil { topics.append(row.change.topic) }
            rowsByTopic[row.change.topic, default: []].append(row)
        }
        for name in topics {
            guard let topic = Topic(logName: name), let ids = subscribers[topic], !ids.isEmpty, let rows = rowsByTopic[name]
            else { continue }
            let change = ServerMessage.change(topic: topic, event: batch.event, rows: rows)
            fanOut(change, to: ids.sorted(), &out)
        }
    }

    /// After a gap in the ingested log: live subscriptions get a fresh `reset` snapshot; loading ones
    /// refuse a read older than the gap; stale ones already wait for one.
    mutating func resynchronize(missedThrough seq: Int64, _ out: inout [HubAction]) {
        for id in connections.keys.sorted() where connections[id]?.closed == false {
            for (topic, phase) in (connections[id]?.subscriptions ?? [:]).sorted(by: { $0.key.logName < $1.key.logName }) {
                switch phase {
                case .live: load(id, topic, .snapshot(reset: true), &out)
                case .loading:
                    let key = SubscriptionKey(connection: id, topic: topic)
                    held[key, default: Held()].droppedThrough = max(held[key]?.droppedThrough ?? 0, seq)
                case .stale: break
                }
            }
        }
    }

    // MARK: - Internals

    func phase(_ request: LoadRequest) -> Phase? {
        connections[request.connection].flatMap { $0.closed ? nil : $0.subscriptions[request.topic] }
    }

    /// Registers an authenticated connection for its user, within the per-user limit.
    mutating func admit(
        _ id: ConnectionID, userID: String, checkedAt: Int64?, sessionID: String?, _ out: inout [HubAction]
    ) {
        connections[id]?.auth = .authenticated(userID: userID)
        if let checkedAt, let closedAt = accountClosures[userID], closedAt > checkedAt {
            close(id, .sessionRevoked, reason: "session revoked", &out)
            return
        }
        if let checkedAt, let sessionID, let revokedAt = sessionClosures[sessionID], revokedAt > checkedAt {
            close(id, .sessionRevoked, reason: "session revoked", &out)
            return
        }
        let existing = connectionsByUser[userID]?.count ?? 0
        guard existing < limits.maxConnectionsPerUser else {
            close(id, .tooManyConnections, reason: "too many connections", &out)
            return
        }
        connectionsByUser[userID, default: []].insert(id)
        if let sessionID {
            connections[id]?.sessionID = sessionID
            connectionsBySession[sessionID, default: []].insert(id)
        }
    }

    /// Starts (or restarts) the read for a subscription with a new ticket.
    /// Held changes are kept across a restart (the new read may still use them).
    mutating func load(
        _ id: ConnectionID, _ topic: Topic, _ mode: LoadMode, requestID: RequestID? = nil, _ out: inout [HubAction]
    ) {
        guard let userID = connections[id]?.userID else { return }
        nextTicket += 1
        let request = LoadRequest(connection: id, userID: userID, topic: topic, ticket: nextTicket, requestID: requestID)
        held[SubscriptionKey(connection: id, topic: topic), default: Held()].floor = position
        connections[id]?.subscriptions[topic] = .loading(request, mode)
        switch mode {
        case .snapshot: out.append(.needSnapshot(request))
        case .replay(let since): out.append(.needReplay(request, after: since))
        }
    }

    /// One change for one subscriber, by phase.
    /// (No copy of the connection's state is held while it is mutated: its dictionaries stay unique.)
    mutating func deliver(_ change: EncodedChange, to id: ConnectionID, _ out: inout [HubAction]) {
        if accept(change, for: id) { send(id, change.bytes, &out) }
    }

    /// One change for all of a topic's subscribers: ONE `.broadcast` action with every connection that
    /// takes it now (then any hard-limit closes it caused).
    mutating func fanOut(_ change: EncodedChange, to ids: [ConnectionID], _ out: inout [HubAction]) {
        var recipients: [ConnectionID] = []
        recipients.reserveCapacity(ids.count)
        var overHard: [ConnectionID] = []
        for id in ids {
            guard let index = connections.index(forKey: id) else { continue }
            // A live subscription — nearly every recipient — is decided on the connection's state in
            // place (no copy of it per recipient); the other phases go through `accept`.
            switch Self.acceptLive(change, &connections.values[index], softOutboundBytes: limits.softOutboundBytes) {
            case .send(let buffered):
                recipients.append(id)
                if buffered > limits.hardOutboundBytes { overHard.append(id) }
            case .conflated:
                counters.conflations += 1
            case .skip:
                break
            case .notLive:
                guard accept(change, for: id) else { continue }
                let buffered = (connections[id]?.buffered ?? 0) + change.bytes.count
                connections[id]?.buffered = buffered
                recipients.append(id)
                if buffered > limits.hardOutboundBytes { overHard.append(id) }
            }
        }
        if !recipients.isEmpty { out.append(.broadcast(recipients, change.bytes)) }
        for id in overHard { close(id, .slowConsumer, reason: "slow consumer", &out) }
    }

    /// What `acceptLive` decided for one recipient.
    enum LiveAcceptance {
        /// Send it; the connection's buffered count is now this (the change included).
        case send(buffered: Int)
        /// Over the soft limit: the subscription turned stale (count one conflation).
        case conflated
        /// Not for this connection (closed, not subscribed, or the change is not after its seq).
        case skip
        /// The subscription is loading or stale: `accept` decides.
        case notLive
    }

    /// `accept` for a live subscription, plus the buffered count `fanOut` keeps, on the state in place.
    /// The topic is looked up once (its key hashed once per recipient), and the phase updated at
    /// that index.
    static func acceptLive(_ change: EncodedChange, _ state: inout ConnectionState, softOutboundBytes: Int) -> LiveAcceptance {
        guard !state.closed, let index = state.subscriptions.index(forKey: change.topic) else { return .skip }
        guard case .live(let seq) = state.subscriptions.values[index] else { return .notLive }
        guard change.seq > seq else { return .skip }
        guard state.buffered <= softOutboundBytes else {
            state.subscriptions.values[index] = .stale(reset: true)
            return .conflated
        }
        state.subscriptions.values[index] = .live(seq: change.seq)
        state.buffered += change.bytes.count
        return .send(buffered: state.buffered)
    }

    /// Applies a change to one subscription by phase; true when it must be sent now (live, seq after
    /// its position, under the soft limit — the position then moves to the change's seq).
    mutating func accept(_ change: EncodedChange, for id: ConnectionID) -> Bool {
        guard connections[id]?.closed == false, let phase = connections[id]?.subscriptions[change.topic] else { return false }
        switch phase {
        case .live(let seq):
            guard change.seq > seq else { return false }
            guard (connections[id]?.buffered ?? 0) <= limits.softOutboundBytes else {
                connections[id]?.subscriptions[change.topic] = .stale(reset: true)
                counters.conflations += 1
                return false
            }
            connections[id]?.subscriptions[change.topic] = .live(seq: change.seq)
            return true
        case .loading:
            let key = SubscriptionKey(connection: id, topic: change.topic)
            let (count, bytes) = held[key].map { ($0.changes.count, $0.bytes) } ?? (0, 0)
            if count >= limits.maxHeldChanges || bytes + change.bytes.count > limits.maxHeldBytes {
                held[key, default: Held()].changes = []
                held[key, default: Held()].bytes = 0
                held[key, default: Held()].droppedThrough = change.seq
            } else {
                held[key, default: Held()].changes.append(change)
                held[key, default: Held()].bytes += change.bytes.count
            }
            return false
        case .stale:
            return false
        }
    }

    /// Ends a subscription whose access ended at `seq`, with a `revoked` message. A live subscription
    /// whose snapshot is already at or past `seq` was authorized after it (the user rejoined) and stays.
    /// A loading one is revoked at once (conservative: its read may predate the removal); the client
    /// may subscribe again, which re-checks access.
    mutating func revoke(
        _ id: ConnectionID, _ topic: Topic, seq: Int64, reason: RemovalReason, _ out: inout [HubAction]
    ) {
        guard let phase = connections[id]?.subscriptions[topic] else { return }
        if case .live(let position) = phase, position >= seq { return }
        unsubscribe(id, topic)
        counters.revocations += 1
        send(id, ServerMessage.revoked(topic: topic, reason: reason), &out)
    }

    /// An `error` for a client request, counted towards `maxProtocolErrors` (then close 4000).
    mutating func refuse(
        _ id: ConnectionID, code: RealtimeErrorCode, message: String, topic: String?, requestID: RequestID?,
        _ out: inout [HubAction]
    ) {
        guard var state = connections[id], !state.closed else { return }
        state.protocolErrors += 1
        connections[id] = state
        guard state.protocolErrors <= limits.maxProtocolErrors else {
            close(id, .protocolError, reason: "too many invalid messages", &out)
            return
        }
        send(id, ServerMessage.error(code: code, message: message, topic: topic, id: requestID), &out)
    }

    /// Queues bytes for a connection, counting them against its budget (hard limit → close 4008).
    mutating func send(_ id: ConnectionID, _ bytes: [UInt8], _ out: inout [HubAction]) {
        guard let state = connections[id], !state.closed else { return }
        connections[id]?.buffered = state.buffered + bytes.count
        out.append(.send(id, bytes))
        if state.buffered + bytes.count > limits.hardOutboundBytes {
            close(id, .slowConsumer, reason: "slow consumer", &out)
        }
    }

    mutating func closeUser(_ userID: String, reason: String, _ out: inout [HubAction]) {
        for id in (connectionsByUser[userID] ?? []).sorted() { close(id, .sessionRevoked, reason: reason, &out) }
    }

    /// `close` as the whole answer to an event.
    private mutating func closing(_ id: ConnectionID, _ code: CloseCode, reason: String) -> [HubAction] {
        var out: [HubAction] = []
        close(id, code, reason: reason, &out)
        return out
    }

    /// Emits `.close` once and drops the connection's subscriptions; it stays known (closed) until
    /// `disconnect`.
    mutating func close(_ id: ConnectionID, _ code: CloseCode, reason: String, _ out: inout [HubAction]) {
        guard let state = connections[id], !state.closed else { return }
        if code == .slowConsumer { counters.slowConsumerCloses += 1 }
        for topic in state.subscriptions.keys { removeSubscriber(id, topic) }
        if let userID = state.userID { removeUserConnection(id, userID) }
        connections[id]?.subscriptions = [:]
        connections[id]?.granted = []
        connections[id]?.closed = true
        out.append(.close(id, code, reason: reason))
    }

    mutating func removeSubscriber(_ id: ConnectionID, _ topic: Topic) {
        if case .group(let groupID) = topic { presenceDirty.insert(groupID) }
        held[SubscriptionKey(connection: id, topic: topic)] = nil
        if subscribers[topic]?.remove(id) != nil { subscriptionCount -= 1 }
        if subscribers[topic]?.isEmpty == true { subscribers[topic] = nil }
    }

    mutating func removeUserConnection(_ id: ConnectionID, _ userID: String) {
        connectionsByUser[userID]?.remove(id)
        if connectionsByUser[userID]?.isEmpty == true { connectionsByUser[userID] = nil }
    }
}
