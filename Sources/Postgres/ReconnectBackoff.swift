import Synchronization

/// When the connections to one database may next dial the server they lost
/// (`PostgresConnection.reconnectIfBroken`). `PostgresDatabase` gives one to all of its connections
/// (writer, concurrent writers, readers), so an outage is one server's state, not each connection's:
/// - a failed dial holds every connection back for the current delay (`delays`: the first, doubling
///   to the longest), and meanwhile they fail at once with that dial's error — one dial per delay
///   during an outage rather than one per connection;
/// - a successful dial proves the server is back and lets every connection dial at once: after a
///   failover, a connection that idled through the outage (a reader last used by a background job)
///   never answers 503 while the others already reach the new primary;
/// - a dial that began before the last success and failed after it is not recorded: the success
///   has since shown the server reachable.
/// Thread-safe: the connections live on different queues.
public final class ReconnectBackoff: Sendable {
    /// The first and the longest wait after a failed dial before the next attempt (doubling in
    /// between). The first is short so a restart costs little; the longest bounds how long after the
    /// server is back a connection may still refuse (when no other dial succeeded first), and how
    /// often an unreachable server is dialled.
    public static let delays: (first: Duration, longest: Duration) = (.milliseconds(50), .seconds(2))

    /// A dial that `permit` allowed: which success it followed.
    public struct Attempt: Sendable {
        fileprivate let successes: Int
    }

    private struct State {
        /// After a failed dial: when the next is due, and that dial's error.
        var blocked: (until: ContinuousClock.Instant, message: String)?
        /// The wait after the next failed dial.
        var delay = ReconnectBackoff.delays.first
        /// Successful dials so far (tells a stale failure from a fresh one).
        var successes = 0
    }

    private let state = Mutex(State())
    /// Monotonic time (`ContinuousClock.now`; tests step it).
    private let now: @Sendable () -> ContinuousClock.Instant

    /// A back-off measured on `now`.
    public init(now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        self.now = now
    }

    /// Allows a dial, or throws the last failed dial's error (`.connection`) while its delay runs.
    public func permit() throws(PostgresError) -> Attempt {
        let instant = now()
        let outcome: Result<Attempt, PostgresError> = state.withLock { state in
            if let blocked = state.blocked, instant < blocked.until {
                return .failure(PostgresError(.connection, message: "\(blocked.message) (reconnecting after a back-off)"))
            }
            return .success(Attempt(successes: state.successes))
        }
        return try outcome.get()
    }

    /// Records `attempt`'s failure: every connection waits the current delay, which then doubles —
    /// unless a dial succeeded since `attempt` was permitted.
    public func failed(_ attempt: Attempt, message: String) {
        let instant = now()
        state.withLock { state in
            guard attempt.successes == state.successes else { return }
            state.blocked = (instant + state.delay, message)
            state.delay = min(state.delay * 2, Self.delays.longest)
        }
    }

    /// Records a successful dial: nobody is held back, and the next outage starts at the first delay.
    public func succeeded() {
        state.withLock { state in
            state.blocked = nil
            state.delay = Self.delays.first
            state.successes += 1
        }
    }
}
