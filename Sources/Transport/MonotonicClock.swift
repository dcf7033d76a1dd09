import Glibc

/// The time source of every transport deadline: the request-head, body, idle, write and linger
/// deadlines of `ServerConfiguration`, a refused connection's wait, and a WebSocket's close, idle
/// and ping deadlines. Nanoseconds from an arbitrary fixed point that never go backwards — for
/// deadlines, never for timestamps (the `Date` header reads the wall clock).
///
/// Injected through `ServerConfiguration.clock` (default `SystemMonotonicClock`) so tests can
/// move time and watch a deadline fire without sleeping until it passes. What it does not govern:
/// the loop's deadline sweep still ticks in real time (every `sweepTick`, ≤ 250 ms), it only
/// compares each connection's deadlines against this clock; `EventLoop.schedule` timers and the
/// shutdown grace period are real time too.
public protocol MonotonicClock: Sendable {
    /// The current reading in nanoseconds; successive readings never decrease.
    func nowNanoseconds() -> UInt64
}

/// `CLOCK_MONOTONIC`: the real clock, the default.
public struct SystemMonotonicClock: MonotonicClock {
    /// The system's monotonic clock.
    public init() {}

    @inline(__always)
    public func nowNanoseconds() -> UInt64 { monotonicNanoseconds() }
}
