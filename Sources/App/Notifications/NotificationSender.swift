public import Domain
public import Store

/// One push provider (Web Push, APNs, FCM) or the operator's webhook, as the dispatcher sees it: it
/// gets one delivery and answers what became of it. A sender never touches the database — the
/// dispatcher settles every outcome — and reads no clock but `now`.
public protocol NotificationSender: Sendable {
    /// The device provider it serves; nil for the webhook (channel `webhook`).
    var provider: Device.Provider? { get }
    /// Sends one delivery, at most once per call; `now` is the dispatcher's clock.
    func send(_ delivery: NotificationDeliveries.Delivery, now: Int64) async -> SendOutcome
}

/// What became of one send.
public enum SendOutcome: Sendable, Equatable {
    /// The provider accepted it: done.
    case delivered
    /// Worth trying again (timeout, connection failure, 429, 5xx); `retryAfterMilliseconds` is the
    /// provider's own `Retry-After`, which wins over the back-off.
    case retry(reason: String, retryAfterMilliseconds: Int64?)
    /// The provider says the address is gone for good (APNs 410 / `BadDeviceToken`, FCM
    /// `UNREGISTERED`, Web Push 404/410): the device is deleted.
    case deviceGone(reason: String)
    /// This message can never be sent (400 payload too large, a refused destination): dropped.
    case rejected(reason: String)
}

/// When to try a failed delivery again: exponential back-off from `base`, doubling per attempt up
/// to `cap`, with full jitter (a uniform draw in [½, 1] of the step, so a burst of failures does not
/// retry in lockstep); a provider's `Retry-After` wins, capped at `maxRetryAfter`. Pure: `unit` is a
/// uniform draw in [0, 1) the caller supplies.
public struct RetryPolicy: Sendable, Equatable {
    public var baseMilliseconds: Int64 = 5_000
    public var capMilliseconds: Int64 = 600_000
    public var maxRetryAfterMilliseconds: Int64 = 3_600_000

    public init() {}

    /// Delay before the attempt after `attempts` failed ones (the first retry has `attempts` 0).
    public func delay(attempts: Int, retryAfterMilliseconds: Int64?, unit: Double) -> Int64 {
        if let retryAfterMilliseconds { return min(max(retryAfterMilliseconds, 0), maxRetryAfterMilliseconds) }
        let step = min(capMilliseconds, baseMilliseconds << Int64(min(attempts, 20)))
        return step / 2 + Int64(Double(step / 2) * min(max(unit, 0), 1))
    }
}
