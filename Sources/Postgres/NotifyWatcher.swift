import Dispatch
public import Storage
import Synchronization

/// PostgreSQL's `CommitWatcher`: every commit that appends to the change log sends `NOTIFY` on
/// `channels.changes` in its transaction, so this instance `LISTEN`s and announces it at once. When
/// the listening connection drops, it reconnects with back-off and answers true on every poll
/// meanwhile (the feed reads after its own last seq), so no change is lost across the gap; once
/// reconnected it announces `.listening(resumed: true)` and a poll reads everything after the last
/// seq seen — what was committed while no connection listened. The same connection listens on
/// `channels.others`, passed on as `.notified`.
final class NotifyWatcher: CommitWatcher, Sendable {
    /// First and longest wait before reconnecting the listener.
    static let reconnectDelays = (first: 0.1, longest: 5.0)

    private let url: String
    /// The listener's heartbeat (`PostgresConfiguration.listenerHeartbeat`).
    private let heartbeat: Duration?
    private let channels: CommitChannels
    private let events: @Sendable (CommitWatcherEvent) -> Void
    private let queue = DispatchQueue(label: "chronir.postgres.commit-watcher")
    /// Set by a notification or while disconnected; cleared by `changedSinceLastCheck`.
    private let pending = Atomic<Bool>(true)
    private let connected = Atomic<Bool>(false)
    /// Set once a connection broke or failed, until one succeeds.
    private let reconnecting = Atomic<Bool>(false)
    /// The current listener, whether `stop` was called, and the next reconnect delay.
    private let state = Mutex<(listener: PostgresListener?, stopped: Bool, delay: Double)>((nil, false, 0.1))

    /// Starts listening (connecting on its own queue).
    init(url: String, heartbeat: Duration?, channels: CommitChannels, events: @escaping @Sendable (CommitWatcherEvent) -> Void) {
        self.url = url
        self.heartbeat = heartbeat
        self.channels = channels
        self.events = events
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
            let listener = try PostgresListener(url: url, channels: [channels.changes] + channels.others, heartbeat: heartbeat) {
                [weak self] event in
                self?.received(event)
            }
            let keep = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.listener = listener
                state.delay = Self.reconnectDelays.first
                return true
            }
            guard keep else { return listener.stop() }
            let resumed = reconnecting.exchange(false, ordering: .acquiringAndReleasing)
            connected.store(true, ordering: .releasing)
            // Anything committed while no connection listened is read now, from the feed's position.
            pending.store(true, ordering: .releasing)
            listener.start()
            events(.listening(resumed: resumed))
            events(.commitAnnounced)
        } catch {
            retryLater(after: "\(error)")
        }
    }

    private func received(_ event: PostgresListener.Event) {
        switch event {
        case .notification(let notification) where notification.channel == channels.changes:
            pending.store(true, ordering: .releasing)
            events(.commitAnnounced)
        case .notification(let notification):
            events(.notified(channel: notification.channel, payload: notification.payload))
        case .disconnected(let message):
            connected.store(false, ordering: .releasing)
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
        events(.notListening(reason: message, retryInSeconds: delay))
        queue.asyncAfter(deadline: .now() + delay) { [self] in connect() }
    }
}

extension PostgresDatabase {
    /// `SQLDatabase.watchCommits`: `LISTEN` on `channels` over a connection of its own, reconnected with back-off.
    public func watchCommits(
        channels: CommitChannels, events: @escaping @Sendable (CommitWatcherEvent) -> Void
    ) throws -> any CommitWatcher {
        NotifyWatcher(url: url, heartbeat: listenerHeartbeat, channels: channels, events: events)
    }
}
