@preconcurrency import Dispatch
import Transport

/// A repeating timer on its own serial queue — the clockwork of the periodic workers (Sweeper,
/// FireScheduler). `tick` runs on that queue, never on an event loop, one at a time; `stop` ends future
/// ticks and waits for one in progress (releasing the timer only ends future ticks). It runs on
/// `clock` (`MonotonicClock.scheduleTimer`): real time in the server, a test's `ManualClock` when
/// injected, which runs the ticks as the test advances it.
final class RepeatingTimer: Sendable {
    private let timer: Scheduled
    private let queue: DispatchQueue

    /// Starts ticking `firstAfter` from now, then every `every` (± `leeway`), on `clock`.
    init(
        label: String, every: DispatchTimeInterval, leeway: DispatchTimeInterval, firstAfter: DispatchTimeInterval,
        clock: any MonotonicClock = SystemMonotonicClock(), tick: @escaping @Sendable () -> Void
    ) {
        queue = DispatchQueue(label: label)
        timer = clock.scheduleTimer(
            on: queue, after: Self.nanoseconds(firstAfter), repeating: Self.nanoseconds(every),
            leeway: Self.nanoseconds(leeway), tick)
    }

    /// Stops future ticks and returns once a tick in progress has finished (idempotent). Never call
    /// it from a tick: it would wait for itself.
    func stop() {
        timer.cancel()
        queue.sync {}
    }

    deinit { timer.cancel() }

    /// `interval` in nanoseconds (`.never`: a day).
    static func nanoseconds(_ interval: DispatchTimeInterval) -> UInt64 {
        switch interval {
        case .seconds(let seconds): UInt64(max(0, seconds)) * 1_000_000_000
        case .milliseconds(let milliseconds): UInt64(max(0, milliseconds)) * 1_000_000
        case .microseconds(let microseconds): UInt64(max(0, microseconds)) * 1_000
        case .nanoseconds(let nanoseconds): UInt64(max(0, nanoseconds))
        case .never: 86_400 * 1_000_000_000
        @unknown default: 1_000_000_000
        }
    }
}
