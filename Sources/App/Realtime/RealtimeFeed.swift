import Dispatch
import Domain
import Hashing
import Logging
import Postgres
import Realtime
import SQLite
import Storage
import Store
import Synchronization
import Transport
import Wire

/// The I/O shell around `RealtimeHub`: one serial queue owns the hub and performs its actions in
/// order; reads run on the database's reader pool and hop back. This process's own commits trigger a
/// read at once (`SQLDatabase.onCommit`); other processes' and instances' commits are noticed by a
/// `ChangeWatcher` — SQLite's `PRAGMA data_version`, checked every `pollInterval`, or PostgreSQL's
/// `LISTEN`, which wakes the feed at once.
public final class RealtimeFeed: @unchecked Sendable {
    let services: Services
    /// WebSockets held per client network (`AppConfig.maxWebSocketsPerAddress`), taken at the upgrade.
    let webSockets: AddressQuota
    let queue = DispatchQueue(label: "chronir.realtime")
    // Everything below is touched only on `queue`.
    private var hub: RealtimeHub?
    private var sockets: [ConnectionID: WebSocket] = [:]
    /// The session each authenticated socket uses, so a logout can close exactly that session's
    /// sockets and an idle expiry that passes while the socket is open closes it (4001).
    private var sessions: [ConnectionID: Session] = [:]
    /// The earliest `expiresAt` in `sessions` when last computed: until then no session can have
    /// lapsed, so the check costs one comparison (`Int64.max` with no sessions).
    private var nextExpiry: Int64 = .max
    private var nextID: UInt64 = 0
    private var poller: (any DispatchSourceTimer)?
    private var presence: (any DispatchSourceTimer)?
    private var expiryCheck: (any DispatchSourceTimer)?
    private var watcher: (any ChangeWatcher)?
    /// Set while reading the change log fails (the database is down): every poll reads again,
    /// whatever the watcher says, so a change it announced is never dropped with the failed read.
    private var readFailing = false
    private var stopped = false
    /// While a poll triggered by a local commit runs: when that commit happened (monotonic ns), for
    /// the fan-out latency metric (commit → frame written to the socket).
    private var commitStamp: UInt64?
    /// The hub's counters and subscription count last handed to the metrics.
    private var recorded: (counters: RealtimeHub.Counters, subscriptions: Int)?
    /// Compresses every broadcast once (queue only); no context takeover, so any connection that
    /// agreed `server_no_context_takeover` with a 2^15 window can take its frame as is.
    private let broadcastCompressor = PerMessageDeflateCompressor(
        windowBits: 15, noContextTakeover: true, level: RealtimeRoutes.webSocket.deflate?.compressionLevel ?? 6)
    /// How often the `ChangeWatcher` is asked.
    static let pollInterval: DispatchTimeInterval = .milliseconds(150)
    /// How often open sockets' sessions are checked for idle expiry even when no change arrives
    /// (every ingested batch checks too), so a lapsed session stops streaming within this long.
    static let sessionCheckInterval: DispatchTimeInterval = .seconds(60)

    /// An authenticated socket's session: SHA-256 of its bearer token and when it lapses unless used.
    struct Session: Sendable {
        var tokenHash: [UInt8]
        var expiresAt: Int64
    }

    /// Group snapshots encoded once per (group, seq) for all subscribers.
    private let snapshotCache = SnapshotCache()
    /// Set while a `commitNoticed` poll is queued (coalesces a burst of commits into one poll).
    private let pollQueued = Atomic<Bool>(false)

    init(services: Services) {
        self.services = services
        webSockets = AddressQuota(limit: services.config.maxWebSocketsPerAddress)
        // This process's commits are read at once; other processes' when the watcher notices.
        services.database.onCommit { [weak self] in self?.commitNoticed(local: true) }
    }

    /// A write committed — of this process (`local`, from the writer queue) or announced by the
    /// watcher: read the log now. Only schedules; a burst of commits coalesces into one read.
    private func commitNoticed(local: Bool) {
        guard !pollQueued.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let committedAt = DispatchTime.now().uptimeNanoseconds
        queue.async { [self] in
            pollQueued.store(false, ordering: .releasing)
            commitStamp = local ? committedAt : nil
            ingestNewBatches()
            commitStamp = nil
        }
    }

    deinit {
        poller?.cancel()
        presence?.cancel()
        expiryCheck?.cancel()
    }

    /// Stops the timers and closes every socket (server shutdown).
    public func stop() {
        queue.sync {
            stopped = true
            poller?.cancel()
            presence?.cancel()
            expiryCheck?.cancel()
            poller = nil
            presence = nil
            expiryCheck = nil
            watcher?.stop()
            watcher = nil
            for socket in sockets.values { socket.close(code: .goingAway, reason: "server shutting down") }
        }
    }

    /// Starts the hub and its timers on first use (queue only).
    private func startIfNeeded() throws -> Bool {
        guard !stopped else { return false }
        if hub != nil { return true }
        let db = services.database
        let (position, epoch) = try db.readSync { c in (try ChangeLog.latestSeq(on: c), try LogEpoch.current(on: c)) }
        watcher = try makeWatcher()
        let hub = RealtimeHub(position: position, epoch: epoch)
        self.hub = hub
        let poll = DispatchSource.makeTimerSource(queue: queue)
        poll.schedule(deadline: .now() + Self.pollInterval, repeating: Self.pollInterval)
        poll.setEventHandler { [weak self] in self?.poll() }
        poll.resume()
        poller = poll
        let flush = DispatchSource.makeTimerSource(queue: queue)
        let interval = DispatchTimeInterval.milliseconds(hub.limits.presenceIntervalMilliseconds)
        flush.schedule(deadline: .now() + interval, repeating: interval)
        flush.setEventHandler { [weak self] in
            guard let self, self.hub != nil else { return }
            self.perform(self.hub!.flushPresence())
        }
        flush.resume()
        presence = flush
        let expiry = DispatchSource.makeTimerSource(queue: queue)
        expiry.schedule(deadline: .now() + Self.sessionCheckInterval, repeating: Self.sessionCheckInterval)
        expiry.setEventHandler { [weak self] in self?.closeLapsedSessions() }
        expiry.resume()
        expiryCheck = expiry
        return true
    }

    /// The watcher for this backend (queue only).
    private func makeWatcher() throws -> any ChangeWatcher {
        switch services.database {
        case let sqlite as Database:
            return try DataVersionWatcher(database: sqlite)
        case let postgres as PostgresDatabase:
            return NotifyWatcher(url: postgres.url, logger: services.logger) { [weak self] in
                self?.commitNoticed(local: false)
            }
        default:
            preconditionFailure("no change watcher for \(type(of: services.database))")
        }
    }

    /// The poll timer: reads the log when the watcher says another process may have committed.
    private func poll() {
        guard let watcher, watcher.changedSinceLastCheck() || readFailing else { return }
        ingestNewBatches()
    }

    /// Reads every batch after the hub's position and hands it to the hub (queue only). A failed
    /// read is retried at every poll until one succeeds (`readFailing`).
    private func ingestNewBatches() {
        guard hub != nil else { return }
        while let position = hub?.position {
            let batches: [ChangeFeed.Batch]
            do {
                batches = try services.database.readSync { c in try ChangeFeed.batches(after: position, on: c) }
            } catch {
                if !readFailing {
                    services.logger.warning(
                        "realtime: reading the change log failed; retrying at every poll", metadata: ["error": "\(error)"])
                }
                readFailing = true
                return
            }
            readFailing = false
            guard !batches.isEmpty else { return }
            if commitStamp == nil {  // another process's or instance's commits
                let now = services.clock.nowMilliseconds()
                for batch in batches {
                    services.metrics.realtime.changeLogLag(nanoseconds: UInt64(max(0, now - batch.atMilliseconds)) * 1_000_000)
                }
            }
            closeLapsedSessions()  // before the batch: a lapsed session receives nothing more
            perform(hub!.ingest(batches))
            if batches.count < 1000 { break }
        }
    }

    /// Closes (4001 "session expired") every socket whose session passed its idle expiry (queue only).
    /// The cached instant is only a hint: a session used over HTTP meanwhile slid forward, so a
    /// socket whose instant passed is re-checked in the database before it is closed. Sessions that
    /// were revoked are closed by `sessionRevoked` (4003), not here.
    func closeLapsedSessions() {
        let now = services.clock.nowMilliseconds()
        guard now >= nextExpiry, hub != nil else { return }
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
                perform(hub!.sessionExpired(id))
            case .failure(let error):  // keep the socket; look again at the next check
                services.logger.error("realtime: session expiry check failed", metadata: ["error": "\(error)"])
                next = min(next, now + 1)
            }
        }
        nextExpiry = next
    }

    /// Records a socket's session (queue only).
    private func track(_ id: ConnectionID, _ session: Session?) {
        sessions[id] = session
        if let session { nextExpiry = min(nextExpiry, session.expiresAt) }
    }

    // MARK: - Connections

    /// A socket opened; `userID` when the upgrade's bearer token was valid, `tokenRejected` when it
    /// carried a bad one (→ 4001).
    func opened(
        _ socket: WebSocket, userID: String?, checkedAt: Int64?, session: Session?, tokenRejected: Bool,
        _ assign: @escaping @Sendable (ConnectionID) -> Void
    ) {
        queue.async { [self] in
            guard (try? startIfNeeded()) == true else {
                socket.close(code: .goingAway, reason: "unavailable")
                return
            }
            nextID += 1
            let id = ConnectionID(nextID)
            sockets[id] = socket
            track(id, session)
            assign(id)
            perform(hub!.connect(id, userID: userID, checkedAt: checkedAt))
            if tokenRejected {
                perform(hub!.authenticationFailed(id))
            } else if userID == nil {
                queue.asyncAfter(deadline: .now() + 5) { [weak self] in
                    guard let self, self.hub != nil else { return }
                    self.perform(self.hub!.authDeadlinePassed(id))
                }
            }
        }
    }

    func received(_ id: ConnectionID, text: String) {
        queue.async { [self] in
            guard hub != nil else { return }
            perform(hub!.receive(id, text: Array(text.utf8)))
        }
    }

    /// A session ended (logout): its sockets close with 4003. Callable from any thread.
    public func sessionRevoked(tokenHash: [UInt8]) {
        queue.async { [self] in
            guard hub != nil else { return }
            for (id, session) in sessions where session.tokenHash == tokenHash { perform(hub!.sessionRevoked(id)) }
        }
    }

    func closed(_ id: ConnectionID) {
        queue.async { [self] in
            sockets[id] = nil
            sessions[id] = nil
            hub?.disconnect(id)
        }
    }

    func writable(_ id: ConnectionID, socket: WebSocket) { report(id, socket) }

    /// Reports the socket's queued bytes to the hub (read on the socket's loop).
    private func report(_ id: ConnectionID, _ socket: WebSocket) {
        socket.loop.execute { [weak self] in
            let bytes = socket.pendingOutboundBytes
            self?.queue.async { [weak self] in self?.outboundBuffered([(id, bytes)]) }
        }
    }

    /// Reports what the hub's counters gained and its subscription count (queue only).
    private func recordMetrics() {
        guard let hub else { return }
        // `perform` runs once per socket report after every broadcast: skip when nothing moved.
        if let recorded, recorded.counters == hub.counters, recorded.subscriptions == hub.subscriptionCount { return }
        recorded = (hub.counters, hub.subscriptionCount)
        let c = hub.counters
        services.metrics.realtime.record(
            .init(
                conflations: c.conflations, slowConsumerCloses: c.slowConsumerCloses, revocations: c.revocations,
                resumesReplayed: c.resumesReplayed, resumesReset: c.resumesReset),
            subscriptions: hub.subscriptionCount)
    }

    /// Hands the sockets' queued byte counts to the hub (queue only).
    private func outboundBuffered(_ reports: [(ConnectionID, Int)]) {
        for (id, bytes) in reports {
            guard hub != nil, sockets[id] != nil else { continue }
            perform(hub!.outboundBuffered(id, bytes: bytes))
        }
    }

    /// One message for many sockets (queue only): framed — and compressed, when any recipient agreed
    /// permessage-deflate — ONCE, with the feed's own no-context-takeover compressor; then one task
    /// per event loop writes it to that loop's sockets and reports their queues back in one hop.
    /// Order per socket is kept: every send to a socket goes through its loop's serial queue in the
    /// order the feed issued it.
    private func broadcast(_ bytes: [UInt8], to ids: [ConnectionID]) {
        var byLoop: [Int: (loop: EventLoop, targets: [(ConnectionID, WebSocket)])] = [:]
        var deflate = false
        for id in ids {
            guard let socket = sockets[id] else { continue }
            byLoop[socket.loop.index, default: (socket.loop, [])].targets.append((id, socket))
            deflate = deflate || socket.deflate != nil
        }
        guard !byLoop.isEmpty else { return }
        let message = WebSocketEncodedMessage(
            text: String(decoding: bytes, as: UTF8.self), compressor: deflate ? broadcastCompressor : nil)
        let committedAt = commitStamp, metrics = services.metrics.realtime
        for (loop, targets) in byLoop.values {
            loop.execute { [weak self] in
                var reports: [(ConnectionID, Int)] = []
                reports.reserveCapacity(targets.count)
                for (id, socket) in targets {
                    socket.send(message)
                    reports.append((id, socket.pendingOutboundBytes))
                }
                if let committedAt {  // the loop's last frame is written (or queued behind a slow peer)
                    metrics.fannedOut(nanoseconds: DispatchTime.now().uptimeNanoseconds &- committedAt)
                }
                self?.queue.async { [weak self, reports] in self?.outboundBuffered(reports) }
            }
        }
    }

    // MARK: - Actions

    /// Performs the hub's actions in order (queue only). The hub's counters already include what
    /// these actions do, so they are reported first: a client that sees a message finds its metric.
    private func perform(_ actions: [HubAction]) {
        recordMetrics()
        for action in actions {
            switch action {
            case .send(let id, let bytes):
                guard let socket = sockets[id] else { continue }
                socket.send(text: String(decoding: bytes, as: UTF8.self))
                report(id, socket)
            case .broadcast(let ids, let bytes):
                broadcast(bytes, to: ids)
            case .authenticate(let id, let token):
                let database = services.database, now = services.clock.nowMilliseconds()
                Task {
                    let result = await Self.check(token: token, database: database, now: now)
                    self.queue.async {
                        guard self.hub != nil else { return }
                        if let result {
                            self.track(id, Session(tokenHash: result.tokenHash, expiresAt: result.expiresAt))
                            self.perform(self.hub!.authenticated(id, userID: result.userID, checkedAt: result.seq))
                        } else {
                            self.perform(self.hub!.authenticationFailed(id))
                        }
                    }
                }
            case .needSnapshot(let request):
                let now = services.clock.nowMilliseconds(), cache = snapshotCache
                read { db in
                    try RealtimeSnapshots.read(request.topic, userID: request.userID, at: now, cache: cache, on: db)
                } then: { result in
                    if let result {
                        self.perform(self.hub!.snapshotReady(request, seq: result.seq, data: result.data))
                    } else {
                        self.perform(self.hub!.accessDenied(request))
                    }
                }
            case .needReplay(let request, let after):
                let maxRows = hub!.limits.maxReplayRows
                read { db in
                    try RealtimeSnapshots.replay(request.topic, userID: request.userID, after: after, maxRows: maxRows, on: db)
                } then: { result in
                    if let result {
                        self.perform(self.hub!.replayReady(request, result))
                    } else {
                        self.perform(self.hub!.accessDenied(request))
                    }
                }
            case .close(let id, let code, let reason):
                sockets[id]?.close(code: WebSocketCloseCode(rawValue: code.rawValue), reason: reason)
            }
        }
    }

    /// Runs `body` in one read transaction with `Database.read` — waiting for a free reader parks
    /// no thread, so 1,000 sockets subscribing at once queue for the reader pool instead of blocking
    /// 1,000 Dispatch threads — then `completion` on the feed's queue (if the hub still runs) with
    /// the result, nil when the read threw (no access, or the database failed).
    private func read<T: Sendable>(
        _ body: @escaping @Sendable (any SQLConnection) throws -> T, then completion: @escaping @Sendable (T?) -> Void
    ) {
        let database = services.database
        Task {
            let result = try? await database.read(body)
            self.queue.async {
                guard self.hub != nil else { return }
                completion(result)
            }
        }
    }

    /// The user of a live session with an active account, the session's expiry, and the log's seq
    /// in the same read.
    static func check(
        token: String, database: any SQLDatabase, now: Int64
    ) async -> (userID: String, seq: Int64, tokenHash: [UInt8], expiresAt: Int64)? {
        guard let hash = TokenHashing.hash(token: token) else { return nil }
        let found = try? await database.read { db -> (String, Int64, Int64)? in
            guard let lookup = try SessionStore.lookup(tokenHash: hash, at: now, on: db), lookup.user.status == .active
            else { return nil }
            return (lookup.user.id, try ChangeLog.latestSeq(on: db), lookup.expiresAt)
        }
        guard let found else { return nil }
        return (found.0, found.1, hash, found.2)
    }
}

/// Forwards one socket's events to the feed.
final class RealtimeConnection: WebSocketDelegate, Sendable {
    let feed: RealtimeFeed
    let userID: String?
    let checkedAt: Int64?
    let tokenRejected: Bool
    let session: RealtimeFeed.Session?
    /// This socket's share of its client's `maxWebSocketsPerAddress`: given back when the socket
    /// closes (or, if it never opens, when this object goes away).
    let slot: AddressQuota.Slot?
    private struct State {
        var id: ConnectionID?
        var pending: [String] = []
        var closedEarly = false
    }
    private let state = Mutex(State())

    init(
        feed: RealtimeFeed, userID: String?, checkedAt: Int64?, session: RealtimeFeed.Session? = nil, tokenRejected: Bool,
        slot: AddressQuota.Slot? = nil
    ) {
        self.feed = feed
        self.slot = slot
        self.session = session
        self.userID = userID
        self.checkedAt = checkedAt
        self.tokenRejected = tokenRejected
    }

    func webSocketOpened(_ socket: WebSocket) {
        feed.opened(
            socket, userID: userID, checkedAt: checkedAt, session: session, tokenRejected: tokenRejected
        ) { [self] id in
            // On the feed's queue, after `connect`'s slot exists: events that came first follow it.
            let (texts, closed) = state.withLock { s -> ([String], Bool) in
                s.id = id
                defer { s.pending = [] }
                return (s.pending, s.closedEarly)
            }
            for text in texts { feed.received(id, text: text) }
            if closed { feed.closed(id) }
        }
    }

    func webSocket(_ socket: WebSocket, received event: WebSocketEvent) {
        let id: ConnectionID? = state.withLock { s in
            if s.id == nil {
                switch event {
                case .text(let text): s.pending.append(text)
                case .closed: s.closedEarly = true
                default: break
                }
            }
            return s.id
        }
        if case .closed = event { slot?.release() }
        guard let id else { return }
        switch event {
        case .text(let text): feed.received(id, text: text)
        case .closed: feed.closed(id)
        case .binary, .ping, .pong: break
        }
    }

    func webSocketBecameWritable(_ socket: WebSocket) {
        guard let id = state.withLock({ $0.id }) else { return }
        feed.writable(id, socket: socket)
    }
}
