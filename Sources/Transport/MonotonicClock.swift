public import Dispatch
import Glibc

/// The time source of every transport deadline: the request-head, body, idle, write and linger
/// deadlines of `ServerConfiguration`, a refused connection's wait, and a WebSocket's close, idle
/// and ping deadlines. Nanoseconds from an arbitrary fixed point that never go backwards — for
/// deadlines, never for timestamps (the `Date` header reads the wall clock).
///
/// Injected through `ServerConfiguration.clock` (default `SystemMonotonicClock`) so tests can
/// move time and watch a deadline fire without sleeping until it passes. The clock also runs the
/// timers on it (`scheduleTimer`): the event loops' `schedule`/`scheduleRepeating`, hence each loop's
/// deadline sweep, and the server's shutdown grace period. A manual clock (TestSupport's
/// `ManualClock`) runs them when a test advances it, so nothing in the transport waits for real time.
public protocol MonotonicClock: Sendable {
    /// The current reading in nanoseconds; successive readings never decrease.
    func nowNanoseconds() -> UInt64

    /// Runs `work` on `queue` once this clock reads `delay` nanoseconds past now, then — with
    /// `interval` — every `interval` nanoseconds after, until the returned timer is cancelled. Repeats
    /// that fell due while one was missed run once (as a Dispatch timer's do). `leeway`: how late a
    /// run may start (a hint). Default: a Dispatch timer on `CLOCK_MONOTONIC`.
    func scheduleTimer(
        on queue: DispatchQueue, after delay: UInt64, repeating interval: UInt64?, leeway: UInt64,
        _ work: @escaping @Sendable () -> Void
    ) -> Scheduled
}

extension MonotonicClock {
    /// A Dispatch timer source on `queue`, in real time.
    public func scheduleTimer(
        on queue: DispatchQueue, after delay: UInt64, repeating interval: UInt64?, leeway: UInt64,
        _ work: @escaping @Sendable () -> Void
    ) -> Scheduled {
        let source = DispatchSource.makeTimerSource(flags: [], queue: queue)
        let start = DispatchTime.now() + .nanoseconds(Int(min(delay, UInt64(Int.max / 2))))
        let slack = DispatchTimeInterval.nanoseconds(Int(min(leeway, UInt64(Int.max / 2))))
        if let interval {
            source.schedule(deadline: start, repeating: .nanoseconds(Int(min(interval, UInt64(Int.max / 2)))), leeway: slack)
            source.setEventHandler(handler: work)
        } else {
            source.schedule(deadline: start, leeway: slack)
            // The handler holds the source until it fires or is cancelled (dispatch then drops it).
            source.setEventHandler {
                source.cancel()
                work()
            }
        }
        source.activate()
        return Scheduled(DispatchTimer(source))
    }
}

/// What a clock's timer must offer its `Scheduled` handle.
public protocol CancellableTimer: AnyObject, Sendable {
    /// Stops the timer; its work will not start afterwards (work already running finishes). Thread-safe, idempotent.
    func cancel()
    /// Whether `cancel()` was called or a one-shot timer already fired.
    var isCancelled: Bool { get }
}

/// A Dispatch timer source as a `CancellableTimer`.
final class DispatchTimer: CancellableTimer, @unchecked Sendable {
    // @unchecked: the only member is a dispatch source, whose cancel is thread-safe.
    private let source: any DispatchSourceTimer
    init(_ source: any DispatchSourceTimer) { self.source = source }
    func cancel() { source.cancel() }
    var isCancelled: Bool { source.isCancelled }
}

/// `CLOCK_MONOTONIC`: the real clock, the default.
public struct SystemMonotonicClock: MonotonicClock {
    /// The system's monotonic clock.
    public init() {}

    @inline(__always)
    public func nowNanoseconds() -> UInt64 { monotonicNanoseconds() }
}
