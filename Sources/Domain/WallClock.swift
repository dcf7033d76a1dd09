import Foundation

/// Wall-clock time as epoch milliseconds. Injected everywhere a rule depends on "now" (expiry, rate
/// limits, next-fire) so tests can drive a manual clock.
public protocol WallClock: Sendable {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    func nowMilliseconds() -> Int64
}

/// The system's real-time clock.
public struct SystemClock: WallClock {
    public init() {}
    public func nowMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
