import Dispatch
import Logging
import Postgres
import SQLite
import Storage
import Store
import Synchronization

/// Tells the realtime feed that the change log may have grown through commits it was not told
/// about (`Database.onCommit` covers this process's own): another process such as chronir-admin
/// on SQLite, another instance on PostgreSQL. Asked by the feed's poll timer on its queue.
protocol ChangeWatcher: AnyObject, Sendable {
    /// Whether anything may have been committed since the last call. Errs towards true: a spurious
    /// true costs one indexed read, a missed one would delay delivery until the next change.
    func changedSinceLastCheck() -> Bool
    /// Stops watching (server shutdown). Idempotent.
    func stop()
}

/// SQLite: `PRAGMA data_version` on a dedicated read-only connection changes whenever another
/// connection (of any process) commits (https://sqlite.org/pragma.html#pragma_data_version).
final class DataVersionWatcher: ChangeWatcher, @unchecked Sendable {
    /// Touched only from the feed's queue (the only caller).
    private var connection: SQLite.Connection?
    private var version: Int64 = -1

    init(database: Database) throws {
        connection = try SQLite.Connection(
            path: database.path, mode: .readOnly, durability: database.options.durability,
            busyTimeoutMilliseconds: database.options.busyTimeoutMilliseconds)
        version = current() ?? -1
    }

    private func current() -> Int64? {
        guard let connection, case .integer(let value)? = try? connection.scalar("PRAGMA data_version", []) else {
            return nil
        }
        return value
    }

    func changedSinceLastCheck() -> Bool {
        guard let value = current() else { return true }
        defer { version = value }
        return value != version
    }

    func stop() {
        connection?.close()
        connection = nil
    }
}

/// PostgreSQL: every commit that appends to the change log sends `NOTIFY chronir_changes` in its
/// transaction (`ChangeLog.append`), so this instance `LISTEN`s and wakes the feed at once. When the
/// listening connection drops, it reconnects with back-off and answers true on every poll meanwhile
/// (the feed reads after its own last seq), so no change is lost across the gap; once reconnected it
/// wakes the feed, which reads everything after the last seq it saw — what was committed while no
/// connection listened (PostgresOutageTests). The same connection LISTENs on
/// `ClusterPresenceStore.notifyChannel` for `presence` (cluster presence), told of its notifications
/// and of the connection coming and going.
final class NotifyWatcher: ChangeWatcher, Sendable {
    /// First and longest wait before reconnecting the listener.
    static let reconnectDelays = (first: 0.1, longest: 5.0)

    private let url: String
    private let logger: Logger
    private let wake: @Sendable () -> Void
    private let presence: ClusterPresence?
    private let queue = DispatchQueue(label: "chronir.realtime.listen")
    /// Set by a notification or while disconnected; cleared by `changedSinceLastCheck`.
    private let pending = Atomic<Bool>(true)
    private let connected = Atomic<Bool>(false)
    /// Set once a connection broke or failed, until one succeeds (to log the recovery once).
    private let reconnecting = Atomic<Bool>(false)
    /// The current listener, whether `stop` was called, and the next reconnect delay.
    private let state = Mutex<(listener: PostgresListener?, stopped: Bool, delay: Double)>((nil, false, 0.1))

    /// Starts listening (connecting on its own queue). `wake` is called on every notification, from
    /// the listener's queue; it must only schedule work.
    init(url: String, logger: Logger, presence: ClusterPresence? = nil, wake: @escaping @Sendable () -> Void) {
        self.url = url
        self.logger = logger
        self.presence = presence
        self.wake = wake
        queue.async { [self] in connect() }
    }

    func changedSinceLastCheck() -> Bool {
        let wasPending = pending.exchange(false, ordering: .acquiringAndReleasing)
        return wasPending || !connected.load(ordering: .acquiring)
    }

    func stop() {
        let listener = state.withLock { state -> PostgresListener? in
            state.stopped = true
            defer { state.listener = nil }
            return state.listener
        }
        listener?.stop()
    }

    /// Connects and LISTENs (queue only); on failure, tries again after the back-off delay.
    private func connect() {
        guard !state.withLock({ $0.stopped }) else { return }
        do {
            let channels = [ChangeLog.notifyChannel] + (presence == nil ? [] : [ClusterPresenceStore.notifyChannel])
            let listener = try PostgresListener(url: url, channels: channels) { [weak self] event in
                self?.received(event)
            }
            let keep = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.listener = listener
                state.delay = Self.reconnectDelays.first
                return true
            }
            guard keep else { return listener.stop() }
            if reconnecting.exchange(false, ordering: .acquiringAndReleasing) {
                logger.info("realtime: change notifications resumed; catching up from the last seq seen")
            }
            connected.store(true, ordering: .releasing)
            // Anything committed while no connection listened is read now, from the feed's position.
            pending.store(true, ordering: .releasing)
            listener.start()
            presence?.received(.listening)
            wake()
        } catch {
            retryLater(after: "\(error)")
        }
    }

    private func received(_ event: PostgresListener.Event) {
        switch event {
        case .notification(let notification) where notification.channel == ClusterPresenceStore.notifyChannel:
            presence?.received(.notified(payload: notification.payload))
        case .notification:
            pending.store(true, ordering: .releasing)
            wake()
        case .disconnected(let message):
            connected.store(false, ordering: .releasing)
            presence?.received(.notListening)
            state.withLock { $0.listener = nil }
            queue.async { [self] in retryLater(after: message) }
        }
    }

    private func retryLater(after message: String) {
        reconnecting.store(true, ordering: .releasing)
        let delay = state.withLock { state -> Double in
            defer { state.delay = min(state.delay * 2, Self.reconnectDelays.longest) }
            return state.delay
        }
        logger.warning(
            "realtime: change notifications unavailable; reading the change log on every poll until reconnected",
            metadata: ["error": "\(message)", "retry_in_s": "\(delay)"])
        queue.asyncAfter(deadline: .now() + delay) { [self] in connect() }
    }
}
