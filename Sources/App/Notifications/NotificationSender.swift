public import Domain
public import Outbound
public import Store

/// One push provider (Web Push, APNs, FCM) or the operator's webhook, as the dispatcher sees it: it
/// gets one delivery and answers what became of it. A sender never touches the database — the
/// dispatcher settles every outcome — and reads no clock but `now`.
public protocol NotificationSender: Sendable {
    /// The device provider it serves; nil for the webhook (channel `webhook`).
    var provider: Device.Provider? { get }
    /// Sends one delivery, at most once per call; `now` is the dispatcher's clock.
    func send(_ delivery: NotificationDeliveries.Delivery, now: Int64) async -> SendOutcome
    /// Sends a round's deliveries for this sender, each at most once, at most `width` at once;
    /// the outcomes in the order of `deliveries`. The default sends each with `send(_:now:)`, a task
    /// each; a sender whose request needs no awaiting to build overrides it to hand the whole round
    /// to the outbound client at once (`OutboundClient.send(_:width:)`: no task or thread hop per send).
    func send(_ deliveries: [NotificationDeliveries.Delivery], now: Int64, width: Int) async -> [SendOutcome]
    /// The origin (`https://host:port`) of the endpoint the user chose for `delivery` — a Web Push
    /// subscription's — or nil when the sender's destination is the operator's (APNs, FCM, the
    /// webhook; the default). The dispatcher's per-origin budget and timeout streaks key on it.
    func userChosenOrigin(of delivery: NotificationDeliveries.Delivery) -> String?
}

extension NotificationSender {
    public func userChosenOrigin(of delivery: NotificationDeliveries.Delivery) -> String? { nil }

    public func send(_ deliveries: [NotificationDeliveries.Delivery], now: Int64, width: Int) async -> [SendOutcome] {
        let indexed = await RoundLoop.boundedMap(Array(deliveries.enumerated()), width: width) { index, delivery in
            (index, await send(delivery, now: now))
        }
        var outcomes = [SendOutcome](repeating: .rejected(reason: "not sent"), count: deliveries.count)
        for (index, outcome) in indexed { outcomes[index] = outcome }
        return outcomes
    }
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

extension SendOutcome {
    /// Whether the exchange passed its connect or total deadline (`ProviderExchange.timeoutReason`
    /// words those reasons, and only those): the dispatcher's timeout streaks count these.
    var isTimeout: Bool {
        guard case .retry(let reason, _) = self else { return false }
        return reason.hasSuffix(ProviderExchange.timeoutSuffix)
    }

    /// Whether the address is gone (its settle deletes the device).
    var isDeviceGone: Bool {
        if case .deviceGone = self { return true }
        return false
    }
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

/// A sender whose request for a delivery is built without awaiting anything (the webhook, Web Push):
/// it says what to send and what the answer means, and a round's requests go to the outbound client
/// as one batch, handed over in slices as they are built (`OutboundBatch`, docs/notifications.md#pipeline).
public protocol RequestSender: NotificationSender {
    /// The client its requests go through (the caller owns and closes it).
    var client: OutboundClient { get }
    /// The request for `delivery` at `now`, or the outcome when it cannot be sent (wrong target, an
    /// unusable address or payload).
    func prepare(_ delivery: NotificationDeliveries.Delivery, now: Int64) -> PreparedSend
    /// What the exchange's response or failure means for the delivery (`Retry-After` read at `now`).
    func outcome(of result: Result<OutboundResponse, OutboundError>, now: Int64) -> SendOutcome
}

/// What `RequestSender.prepare` made of a delivery.
public enum PreparedSend: Sendable {
    /// Send this.
    case request(OutboundRequest)
    /// Nothing to send: the delivery's outcome is already known.
    case settled(SendOutcome)
}

extension RequestSender {
    public func send(_ delivery: NotificationDeliveries.Delivery, now: Int64) async -> SendOutcome {
        await send([delivery], now: now, width: 1)[0]
    }

    /// Builds the round's requests in slices of `width` and hands each to the outbound client as
    /// soon as it is built (`OutboundBatch`), so the first sends start after `width` requests are
    /// built, not all of them, and the rest are built while those are on the wire.
    public func send(_ deliveries: [NotificationDeliveries.Delivery], now: Int64, width: Int) async -> [SendOutcome] {
        var outcomes: [SendOutcome?] = []
        outcomes.reserveCapacity(deliveries.count)
        let slice = max(1, width)
        let batch = client.batch(width: width)
        var requests: [OutboundRequest] = []
        requests.reserveCapacity(slice)
        for delivery in deliveries {
            switch prepare(delivery, now: now) {
            case .request(let request):
                outcomes.append(nil)
                requests.append(request)
                if requests.count == slice {
                    batch.add(requests)
                    requests.removeAll(keepingCapacity: true)
                }
            case .settled(let outcome):
                outcomes.append(outcome)
            }
        }
        var results = await batch.results(adding: requests).makeIterator()
        return outcomes.map { prepared in
            if let prepared { return prepared }
            // One result per request, in order: the nth unsettled delivery's is the nth result.
            guard let result = results.next() else { return .retry(reason: "no result", retryAfterMilliseconds: nil) }
            return outcome(of: result, now: now)
        }
    }
}
