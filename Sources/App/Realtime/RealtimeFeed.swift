import Dispatch
import Domain
import Hashing
import Logging
import Realtime
import Storage
import Store
import Synchronization
import Transport
import Wire

/// The I/O shell around `RealtimeHub`: one serial queue owns the hub and performs its actions in
/// order; reads run on the database's reader pool and hop back. This process's own commits trigger a
/// read at once (`SQLDatabase.onCommit`); other processes' and instances' commits are noticed by a
/// `CommitWatcher` (`SQLDatabase.watchCommits`) — SQLite's `PRAGMA data_version`, checked every `pollInterval`, or PostgreSQL's
/// `LISTEN`, which wakes the feed at once (reading the log: `RealtimeFeed+Ingest.swift`). Each
/// socket's events arrive through its `RealtimeConnection`.
///
/// Nothing runs until the first socket opens: then the hub starts at the log's seq of that moment,
/// with its watcher and timers (`Running`); `stop` ends them.
public final class RealtimeFeed: @unchecked Sendable {
    let services: Services
    /// WebSockets held per client network (`AppConfiguration.maxWebSocketsPerAddress`), taken at the upgrade.
    let webSockets: AddressQuota
    let queue = DispatchQueue(label: "chronir.realtime")
    /// The last connection id handed out (`connectionID()`, any thread).
    private let lastConnectionID = Atomic<UInt64>(0)
    // Everything below is touched only on `queue` (each method checks with `dispatchPrecondition`).
    /// The hub with its watcher and timers once the first socket opened; nil before, and after `stop`.
    var running: Running?
    private var sockets: [ConnectionID: WebSocket] = [:]
    /// The session each authenticated socket uses, so a logout can close exactly that session's
    /// sockets and an idle expiry that passes while the socket is open closes it (4001).
    private var sessions: [ConnectionID: Session] = [:]
    /// The earliest `expiresAt` in `sessions` when last computed: until then no session can have
    /// lapsed, so the check costs one comparison (`Int64.max` with no sessions).
    private var nextExpiry: Int64 = .max
    private var stopped = false
    /// While a batch's hub actions are performed: when it committed, on the monotonic clock
    /// (`DispatchTime` nanoseconds), for the fan-out latency metric (commit → the last subscriber's
    /// frame handed to the kernel).
    var broadcastCommittedAt: UInt64?
    /// The earliest of this process's COMMITs not yet read by `ingestNewBatches` (monotonic
    /// nanoseconds, taken on the writer queue right after the COMMIT; 0: none).
    let localCommitAt = Atomic<UInt64>(0)
    /// Since when reading the change log fails (wall ms), while it does: logged once per outage.
    var ingestFailingSince: Int64?
    /// What `/readyz` reports of the feed (any thread).
    let health = FeedHealth()
    /// The chain hash of the change-log row at `seq`, the last one read into the hub (nil hash:
    /// unchained or compacted): the next read checks the database still holds that row.
    var deliveredHash: (seq: Int64, hash: [UInt8]?)?
    /// The hub's counters and subscription count last handed to the metrics.
    private var recorded: (counters: RealtimeHub.Counters, subscriptions: Int)?
    /// Compresses every broadcast once (queue only); no context takeover, so any connection that
    /// agreed `server_no_context_takeover` with a 2^15 window can take its frame as is.
    private let broadcastCompressor = PerMessageDeflateCompressor(
        windowBits: 15, noContextTakeover: true, level: RealtimeRoutes.webSocket.deflate?.compressionLevel ?? 6)
    /// How often the `CommitWatcher` is asked.
    static let pollInterval: DispatchTimeInterval = .milliseconds(150)
    /// How often open sockets' sessions are checked for idle expiry even when no change arrives
    /// (every ingested batch checks too), so a lapsed session stops streaming within this long.
    static let sessionCheckInterval: DispatchTimeInterval = .seconds(60)
    /// Without `{"op":"auth"}` within this long after the upgrade, a socket closes 4001.
    static let authDeadline: DispatchTimeInterval = .seconds(5)

    /// An authenticated socket's session: SHA-256 of its bearer token, its public id (a revocation
    /// in the change log names it) and when it lapses unless used.
    struct Session: Sendable {
        var tokenHash: [UInt8]
        var sessionID: String
        var expiresAt: Int64
    }

    /// The started feed (queue only): the hub, and the watcher and timers that drive it. Dropping it
    /// cancels the timers.
    final class Running {
        /// The realtime core; every call on the feed's queue, its actions performed in order.
        var hub: RealtimeHub
        /// Tells the poll timer whether another process or instance may have committed.
        let watcher: any CommitWatcher
        /// Presence shared with other instances (PostgreSQL only; ClusterPresence.swift).
        let cluster: ClusterPresence?
        /// The poll, presence and session-expiry timers.
        var timers: [any DispatchSourceTimer] = []

        init(hub: RealtimeHub, watcher: any CommitWatcher, cluster: ClusterPresence?) {
            self.hub = hub
            self.watcher = watcher
            self.cluster = cluster
        }

        /// Cancels the timers, stops watching and withdraws this instance's presence (shutdown).
        func stop() {
            for timer in timers { timer.cancel() }
            watcher.stop()
            cluster?.stop()
        }

        deinit {
            for timer in timers { timer.cancel() }
        }
    }

    /// Group snapshots encoded once per (group, seq) for all subscribers.
    private let snapshotCache = SnapshotCache()
    /// Set while a `commitNoticed` poll is queued (coalesces a burst of commits into one poll).
    let pollQueued = Atomic<Bool>(false)

    init(services: Services) {
        self.services = services
        webSockets = AddressQuota(limit: services.config.maxWebSocketsPerAddress)
        // This process's commits are read at once; other processes' when the watcher notices.
        services.database.onCommit { [weak self] in
            guard let self else { return }
            _ = localCommitAt.compareExchange(
                expected: 0, desired: DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
            commitNoticed(local: true)
        }
    }

    /// Stops the timers and closes every socket (server shutdown).
    public func stop() {
        queue.sync {
            stopped = true
            running?.stop()
            running = nil
            health.running.store(false, ordering: .relaxed)
            for socket in sockets.values { socket.close(code: .goingAway, reason: "server shutting down") }
        }
    }

    /// Ends the running hub without stopping the feed (queue only): every socket is closed 1012
    /// Service Restart with `reason`, the watcher, timers and presence stop, and the next socket
    /// starts a fresh hub at the log's head and epoch of that moment.
    func restartHub(reason: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        running?.stop()
        running = nil
        health.running.store(false, ordering: .relaxed)
        deliveredHash = nil
        for socket in sockets.values { socket.close(code: .serviceRestart, reason: reason) }
    }

    /// Starts the hub and its timers on first use (queue only). Nil after `stop`.
    private func startIfNeeded() throws -> Running? {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopped else { return nil }
        if let running { return running }
        let db = services.database
        let (position, epoch) = try db.readSync { c in (try ChangeLog.latestSeq(on: c), try LogEpoch.current(on: c)) }
        let hub = RealtimeHub(position: position, epoch: epoch)
        let cluster = ClusterPresence.make(services: services, presenceIntervalMilliseconds: hub.limits.presenceIntervalMilliseconds) {
            [weak self] sets in
            guard let self else { return }
            queue.async { [self] in
                guard let running = self.running else { return }
                for (groupID, users) in sets { running.hub.setClusterPresence(groupID: groupID, users: users) }
            }
        }
        let running = Running(hub: hub, watcher: try makeWatcher(presence: cluster), cluster: cluster)
        self.running = running
        health.running.store(true, ordering: .relaxed)
        let poll = DispatchSource.makeTimerSource(queue: queue)
        poll.schedule(deadline: .now() + Self.pollInterval, repeating: Self.pollInterval)
        poll.setEventHandler { [weak self] in self?.poll() }
        let flush = DispatchSource.makeTimerSource(queue: queue)
        let interval = DispatchTimeInterval.milliseconds(running.hub.limits.presenceIntervalMilliseconds)
        flush.schedule(deadline: .now() + interval, repeating: interval)
        flush.setEventHandler { [weak self] in
            guard let self, let running = self.running else { return }
            self.perform(running.hub.flushPresence())
            running.cluster?.publish(running.hub.takeLocalPresence())
        }
        let expiry = DispatchSource.makeTimerSource(queue: queue)
        expiry.schedule(deadline: .now() + Self.sessionCheckInterval, repeating: Self.sessionCheckInterval)
        expiry.setEventHandler { [weak self] in self?.closeLapsedSessions() }
        running.timers = [poll, flush, expiry]
        for timer in running.timers { timer.resume() }
        return running
    }

    /// The database's commit watcher (queue only): it wakes the feed on an announced commit and, on
    /// PostgreSQL, tells `presence` of its channel and of the connection coming and going.
    private func makeWatcher(presence: ClusterPresence?) throws -> any CommitWatcher {
        dispatchPrecondition(condition: .onQueue(queue))
        let logger = services.logger
        let channels = CommitChannels(
            changes: ChangeLog.notifyChannel, others: presence == nil ? [] : [ClusterPresenceStore.notifyChannel])
        return try services.database.watchCommits(channels: channels) { [weak self] event in
            switch event {
            case .commitAnnounced:
                self?.commitNoticed(local: false)
            case .notified(let channel, let payload):
                if channel == ClusterPresenceStore.notifyChannel { presence?.received(.notified(payload: payload)) }
            case .listening(let resumed):
                self?.health.listening.store(true, ordering: .relaxed)
                if resumed { self?.services.metrics.realtime.listenerReconnected() }
                if resumed { logger.info("realtime: change notifications resumed; catching up from the last seq seen") }
                presence?.received(.listening)
            case .notListening(let reason, let retryInSeconds):
                self?.health.listening.store(false, ordering: .relaxed)
                logger.warning(
                    "realtime: change notifications unavailable; reading the change log on every poll until reconnected",
                    metadata: ["error": "\(reason)", "retry_in_s": "\(retryInSeconds)"])
                presence?.received(.notListening)
            }
        }
    }

    /// Closes (4001 "session expired") every socket whose session passed its idle expiry (queue only).
    /// The cached instant is only a hint: a session used over HTTP meanwhile slid forward, so a
    /// socket whose instant passed is re-checked in the database before it is closed. Sessions that
    /// were revoked are closed by `sessionRevoked` (4003), not here.
    func closeLapsedSessions() {
        dispatchPrecondition(condition: .onQueue(queue))
        let now = services.clock.nowMilliseconds()
        guard now >= nextExpiry, let running else { return }
        var next = Int64.max
        for (id, session) in sessions {
            guard session.expiresAt <= now else {
                next = min(next, session.expiresAt)
                continue
            }
            let hash = session.tokenHash
            let current = Result {
                try services.database.readSync { db in try SessionStore.lookup(tokenHash: hash, at: now, on: db)?.expiresAt }
            }
            switch current {
            case .success(.some(let expiresAt)):
                sessions[id]?.expiresAt = expiresAt
                next = min(next, expiresAt)
            case .success(.none):
                sessions[id] = nil
                services.metrics.realtime.sessionExpired()
                perform(running.hub.sessionExpired(id))
            case .failure(let error):  // keep the socket; look again at the next check
                services.logger.error("realtime: session expiry check failed", metadata: ["error": "\(error)"])
                next = min(next, now + 1)
            }
        }
        nextExpiry = next
    }

    /// Records a socket's session (queue only).
    private func track(_ id: ConnectionID, _ session: Session?) {
        dispatchPrecondition(condition: .onQueue(queue))
        sessions[id] = session
        if let session { nextExpiry = min(nextExpiry, session.expiresAt) }
    }

    // MARK: - Connections

    /// A new connection id, unique for the process (any thread). `RealtimeConnection` takes one when
    /// it is made, so every event of its socket reaches the queue already carrying it, in order.
    func connectionID() -> ConnectionID {
        ConnectionID(lastConnectionID.wrappingAdd(1, ordering: .relaxed).newValue)
    }

    /// A socket opened as connection `id`; `userID` when the upgrade's bearer token was valid,
    /// `tokenRejected` when it carried a bad one (→ 4001).
    func opened(
        _ id: ConnectionID, _ socket: WebSocket, userID: String?, checkedAt: Int64?, session: Session?,
        tokenRejected: Bool
    ) {
        queue.async { [self] in
            let running: Running
            do {
                guard let started = try startIfNeeded() else {  // stopped
                    socket.close(code: .goingAway, reason: "unavailable")
                    return
                }
                running = started
            } catch {  // the log's position could not be read (storage unavailable): retry later
                services.logger.error("realtime: feed could not start", metadata: ["error": "\(error)"])
                socket.close(code: WebSocketCloseCode(rawValue: CloseCode.tryAgainLater.rawValue), reason: "unavailable")
                return
            }
            sockets[id] = socket
            track(id, session)
            perform(running.hub.connect(id, userID: userID, checkedAt: checkedAt, sessionID: session?.sessionID))
            if tokenRejected {
                perform(running.hub.authenticationFailed(id))
            } else if userID == nil {
                queue.asyncAfter(deadline: .now() + Self.authDeadline) { [weak self] in
                    guard let self, let running = self.running else { return }
                    self.perform(running.hub.authDeadlinePassed(id))
                }
            }
        }
    }

    /// A text message from connection `id`'s client.
    func received(_ id: ConnectionID, text: String) {
        queue.async { [self] in
            guard let running else { return }
            perform(running.hub.receive(id, text: Array(text.utf8)))
        }
    }

    /// Connection `id`'s socket is gone.
    func closed(_ id: ConnectionID) {
        queue.async { [self] in
            sockets[id] = nil
            sessions[id] = nil
            running?.hub.disconnect(id)
        }
    }

    /// Connection `id`'s queued output drained below the transport's mark.
    func writable(_ id: ConnectionID, socket: WebSocket) { report(id, socket) }

    /// Reports the socket's queued bytes to the hub (read on the socket's loop).
    private func report(_ id: ConnectionID, _ socket: WebSocket) {
        socket.loop.execute { [weak self] in
            let bytes = socket.pendingOutboundBytes
            self?.queue.async { [weak self] in self?.outboundBuffered([(id, bytes)]) }
        }
    }

    /// Reports what the hub's counters gained and its subscription count (queue only).
    private func recordMetrics(_ hub: RealtimeHub) {
        dispatchPrecondition(condition: .onQueue(queue))
        // `perform` runs once per socket report after every broadcast: skip when nothing moved.
        if let recorded, recorded.counters == hub.counters, recorded.subscriptions == hub.subscriptionCount { return }
        recorded = (hub.counters, hub.subscriptionCount)
        services.metrics.realtime.record(hub.counters, subscriptions: hub.subscriptionCount)
    }

    /// Hands the sockets' queued byte counts to the hub (queue only).
    private func outboundBuffered(_ reports: [(ConnectionID, Int)]) {
        dispatchPrecondition(condition: .onQueue(queue))
        for (id, bytes) in reports {
            guard let running, sockets[id] != nil else { continue }
            perform(running.hub.outboundBuffered(id, bytes: bytes))
        }
    }

    /// One message for many sockets (queue only): framed — and compressed, when any recipient agreed
    /// permessage-deflate — ONCE, with the feed's own no-context-takeover compressor; then one task
    /// per event loop writes it to that loop's sockets. The loop that finishes last reports every
    /// loop's sockets back in one hop (only the sockets with bytes still queued, and those the hub
    /// counts as buffered: a socket that took the frame at once is reported as drained by the hub's
    /// own accounting, see below) — so the hub's bookkeeping never competes for a core with a loop
    /// still sending the same broadcast.
    /// Order per socket is kept: every send to a socket goes through its loop's serial queue in the
    /// order the feed issued it.
    private func broadcast(_ bytes: [UInt8], to ids: [ConnectionID]) {
        dispatchPrecondition(condition: .onQueue(queue))
        var byLoop: [(loop: EventLoop, targets: [(ConnectionID, WebSocket)])] = []
        var deflate = false
        var sent: [ConnectionID] = []
        sent.reserveCapacity(ids.count)
        for id in ids {
            guard let socket = sockets[id] else { continue }
            let index = socket.loop.index
            while byLoop.count <= index { byLoop.append((socket.loop, [])) }
            if byLoop[index].targets.isEmpty { byLoop[index].loop = socket.loop }
            byLoop[index].targets.append((id, socket))
            sent.append(id)
            deflate = deflate || socket.deflate != nil
        }
        byLoop.removeAll { $0.targets.isEmpty }
        guard !byLoop.isEmpty else { return }
        let message = WebSocketEncodedMessage(
            text: String(decoding: bytes, as: UTF8.self), compressor: deflate ? broadcastCompressor : nil)
        let recipients = sent
        let completion = FanOutCompletion(
            loops: byLoop.count, committedAt: broadcastCommittedAt, metrics: services.metrics.realtime)
        for (loop, targets) in byLoop {
            loop.execute { [weak self] in
                var reports: [(ConnectionID, Int)] = []
                for (id, socket) in targets {
                    let pending = socket.sendAndReport(message)
                    if pending != 0 { reports.append((id, pending)) }
                }
                // The hub added the frame to each recipient's count: one hop back, after the last
                // loop, settles them all (those not reported took their frame at once: drained).
                guard let pending = completion.loopFinished(pending: reports) else { return }
                self?.queue.async { [weak self] in self?.broadcastWritten(to: recipients, pending: pending) }
            }
        }
    }

    /// A broadcast's frames are handed to its recipients' sockets (queue only): each recipient's
    /// queued bytes go to the hub — 0 for every socket not in `pending`.
    private func broadcastWritten(to ids: [ConnectionID], pending: [(ConnectionID, Int)]) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let running else { return }
        var queued: [ConnectionID: Int] = [:]
        for (id, bytes) in pending { queued[id] = bytes }
        var actions: [HubAction] = []
        for id in ids where sockets[id] != nil {
            actions += running.hub.outboundBuffered(id, bytes: queued[id] ?? 0)
        }
        if !actions.isEmpty { perform(actions) }
    }

    // MARK: - Actions

    /// Performs the hub's actions in order (queue only). The hub's counters already include what
    /// these actions do, so they are reported first: a client that sees a message finds its metric.
    func perform(_ actions: [HubAction]) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let running else { return }
        recordMetrics(running.hub)
        for action in actions {
            switch action {
            case .send(let id, let bytes):
                guard let socket = sockets[id] else { continue }
                socket.send(text: String(decoding: bytes, as: UTF8.self))
                report(id, socket)
            case .broadcast(let ids, let bytes):
                broadcast(bytes, to: ids)
            case .authenticate(let id, let token):
                let database = services.database
                let logger = services.logger
                let now = services.clock.nowMilliseconds()
                Task {
                    let result: Result<CheckedSession?, any Error>
                    do {
                        result = .success(try await Self.check(token: token, database: database, now: now))
                    } catch {
                        result = .failure(error)
                    }
                    self.queue.async {
                        guard let running = self.running else { return }
                        switch result {
                        case .success(let found?):
                            self.track(
                                id, Session(tokenHash: found.tokenHash, sessionID: found.sessionID, expiresAt: found.expiresAt))
                            self.perform(
                                running.hub.authenticated(
                                    id, userID: found.userID, checkedAt: found.seq, sessionID: found.sessionID))
                        case .success(nil):
                            self.perform(running.hub.authenticationFailed(id))
                        case .failure(let error):  // nothing is known about the token: 1013, not 4001
                            logger.error("realtime: token check failed", metadata: ["error": "\(error)"])
                            self.perform(running.hub.authenticationUnavailable(id))
                        }
                    }
                }
            case .needSnapshot(let request):
                let now = services.clock.nowMilliseconds()
                let cache = snapshotCache
                read(request) { db in
                    try RealtimeSnapshots.read(request.topic, userID: request.userID, at: now, cache: cache, on: db)
                } then: { hub, result in
                    hub.snapshotReady(request, seq: result.seq, data: result.data)
                }
            case .needReplay(let request, let after):
                let maxRows = running.hub.limits.maxReplayRows
                read(request) { db in
                    try RealtimeSnapshots.replay(request.topic, userID: request.userID, after: after, maxRows: maxRows, on: db)
                } then: { hub, result in
                    hub.replayReady(request, result)
                }
            case .close(let id, let code, let reason):
                sockets[id]?.close(code: WebSocketCloseCode(rawValue: code.rawValue), reason: reason)
            }
        }
    }

    /// Runs `body` — the read for `request` — in one read transaction with `Database.read` (waiting
    /// for a free reader parks no thread, so 1,000 sockets subscribing at once queue for the reader
    /// pool instead of blocking 1,000 Dispatch threads), then back on the feed's queue (if the hub
    /// still runs) hands the result to `completion`. A read that threw ends the subscription:
    /// `DomainError.notFound` (no access) → `accessDenied` (error `not_found`); anything else is the
    /// database's → logged, `readFailed` (error `unavailable`).
    private func read<T: Sendable>(
        _ request: LoadRequest, _ body: @escaping @Sendable (any SQLConnection) throws -> T,
        then completion: @escaping @Sendable (inout RealtimeHub, T) -> [HubAction]
    ) {
        let database = services.database
        Task {
            let result: Result<T, any Error>
            do {
                result = .success(try await database.read(body))
            } catch {
                result = .failure(error)
            }
            self.queue.async {
                guard let running = self.running else { return }
                switch result {
                case .success(let value):
                    self.perform(completion(&running.hub, value))
                case .failure(DomainError.notFound):
                    self.perform(running.hub.accessDenied(request))
                case .failure(let error):
                    self.services.logger.error(
                        "realtime: topic read failed", metadata: ["topic": "\(request.topic)", "error": "\(error)"])
                    self.perform(running.hub.readFailed(request))
                }
            }
        }
    }

    /// A bearer token found valid: its user, the log's seq read with it, its hash, public id and expiry.
    typealias CheckedSession = (userID: String, seq: Int64, tokenHash: [UInt8], sessionID: String, expiresAt: Int64)

    /// The user of a live session with an active account, the session's expiry, and the log's seq
    /// in the same read. Nil for an unknown, expired or revoked token or an inactive account (→ 4001).
    /// Throws what the read threw (storage unavailable, typically): then nothing is known about the
    /// token, and the caller must not answer as for a bad one — the upgrade answers through
    /// `ErrorMapping` (503 CA027 + Retry-After), an in-band `auth` closes 1013.
    static func check(token: String, database: any SQLDatabase, now: Int64) async throws -> CheckedSession? {
        guard let hash = TokenHashing.hash(token: token) else { return nil }
        let found = try await database.read { db -> (String, Int64, String, Int64)? in
            guard let lookup = try SessionStore.lookup(tokenHash: hash, at: now, on: db), lookup.user.status == .active
            else { return nil }
            return (lookup.user.id, try ChangeLog.latestSeq(on: db), lookup.sessionID, lookup.expiresAt)
        }
        guard let found else { return nil }
        return (found.0, found.1, hash, found.2, found.3)
    }
}

/// Joins the event loops of one broadcast: each loop's task calls `loopFinished(pending:)` after its
/// last send; the last one gets every loop's queued-bytes reports (to settle with the hub in one hop)
/// and, when the broadcast's commit instant is known, records `chronir_realtime_fanout_latency_seconds`:
/// from its COMMIT to the last recipient's frame handed to the kernel (or queued behind a slow peer).
final class FanOutCompletion: Sendable {
    private let state: Mutex<(remaining: Int, pending: [(ConnectionID, Int)])>
    private let committedAt: UInt64?
    private let metrics: RealtimeMetrics

    /// A broadcast to `loops` event loops whose change committed at `committedAt` (monotonic ns), if known.
    init(loops: Int, committedAt: UInt64?, metrics: RealtimeMetrics) {
        state = Mutex((loops, []))
        self.committedAt = committedAt
        self.metrics = metrics
    }

    /// One loop wrote its last frame of the broadcast (any thread; once per loop), with the sockets
    /// it left bytes queued on. Returns every loop's such sockets to the last loop, nil to the others.
    func loopFinished(pending: [(ConnectionID, Int)]) -> [(ConnectionID, Int)]? {
        let all = state.withLock { state -> [(ConnectionID, Int)]? in
            state.pending += pending
            state.remaining -= 1
            return state.remaining == 0 ? state.pending : nil
        }
        guard let all else { return nil }
        if let committedAt {
            let now = DispatchTime.now().uptimeNanoseconds
            metrics.fannedOut(nanoseconds: now &- min(now, committedAt))
        }
        return all
    }
}

/// The realtime feed's state as `/readyz` reports it, kept in atomics by the feed and its watcher.
final class FeedHealth: Sendable {
    /// Whether the hub runs (it starts with the first socket).
    let running = Atomic<Bool>(false)
    /// Whether commit announcements flow (PostgreSQL's LISTEN is connected; SQLite always polls).
    let listening = Atomic<Bool>(true)
    /// Whether the last change-log read failed.
    let failing = Atomic<Bool>(false)

    /// `idle` (no socket yet: nothing to deliver), `failing` (the change log cannot be read; changes
    /// are held and delivered once it can), `polling` (announcements are down: the log is read every
    /// poll, changes arrive within a poll interval) or `live`.
    var state: String {
        guard running.load(ordering: .relaxed) else { return "idle" }
        if failing.load(ordering: .relaxed) { return "failing" }
        return listening.load(ordering: .relaxed) ? "live" : "polling"
    }
}
