public import Domain
import Synchronization

/// A wall clock that moves only when a test says so.
public final class ManualClock: Clock {
    private let now: Mutex<Int64>
    /// Starts at `milliseconds` (default: 2026-02-06T09:00:00.000Z).
    public init(milliseconds: Int64 = 1_770_368_400_000) { now = Mutex(milliseconds) }
    public func nowMilliseconds() -> Int64 { now.withLock { $0 } }
    /// Moves the clock forward by `milliseconds`.
    public func advance(by milliseconds: Int64) { now.withLock { $0 += milliseconds } }
    /// Sets the clock.
    public func set(_ milliseconds: Int64) { now.withLock { $0 = milliseconds } }
}
