/// A sliding-window attempt limit: at most `maxAttempts` failures within `windowMilliseconds`.
/// Pure: the caller supplies the failure times it has recorded and "now".
public struct AttemptWindow: Sendable, Equatable {
    /// Failures allowed inside one window before further attempts are refused.
    public var maxAttempts: Int
    /// The window length.
    public var windowMilliseconds: Int64

    public init(maxAttempts: Int, windowMilliseconds: Int64) {
        self.maxAttempts = maxAttempts
        self.windowMilliseconds = windowMilliseconds
    }

    /// Failed logins: 10 per 15 minutes, per email and per client IP.
    public static let login = AttemptWindow(maxAttempts: 10, windowMilliseconds: 15 * 60 * 1000)

    /// The earliest failure time still inside the window at `now`.
    public func windowStart(now: Int64) -> Int64 { now - windowMilliseconds }

    /// Whether another attempt may proceed given the failure times inside the window (any order).
    /// When refused, `retryAfterSeconds` is when the oldest counted failure leaves the window (≥ 1).
    public func evaluate(failureTimes: [Int64], now: Int64) -> Decision {
        let inWindow = failureTimes.filter { $0 > windowStart(now: now) && $0 <= now }.sorted()
        guard inWindow.count >= maxAttempts else { return .allowed }
        // The attempt is allowed again once enough old failures expire to drop below the limit.
        let releasing = inWindow[inWindow.count - maxAttempts]
        let waitMs = releasing + windowMilliseconds - now
        return .refused(retryAfterSeconds: Int(max(1, (waitMs + 999) / 1000)))
    }

    /// The outcome of `evaluate`.
    public enum Decision: Sendable, Equatable {
        case allowed
        case refused(retryAfterSeconds: Int)
    }
}
