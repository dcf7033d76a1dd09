public import Domain
import Synchronization
public import Transport

/// A clock that moves only when a test says so: a wall clock for Domain and App (`WallClock`), and the
/// monotonic clock of transport deadlines (`MonotonicClock`, `ServerConfiguration.clock`; the same
/// reading in nanoseconds), so a test moves time past a deadline instead of sleeping until it.
public final class ManualClock: WallClock {
    private let now: Mutex<Int64>
    /// Starts at `milliseconds` (default: 2026-02-06T09:00:00.000Z).
    public init(milliseconds: Int64 = 1_770_368_400_000) { now = Mutex(milliseconds) }
    public func nowMilliseconds() -> Int64 { now.withLock { $0 } }
    /// Moves the clock forward by `milliseconds`.
    public func advance(by milliseconds: Int64) { now.withLock { $0 += milliseconds } }
    /// Sets the clock.
    public func set(_ milliseconds: Int64) { now.withLock { $0 = milliseconds } }
}

extension ManualClock: MonotonicClock {
    /// The reading in nanoseconds (milliseconds × 10⁶): advancing the clock moves transport deadlines.
    public func nowNanoseconds() -> UInt64 { UInt64(nowMilliseconds()) &* 1_000_000 }
}
