@preconcurrency public import Dispatch
public import Domain
import Foundation
public import Logging
public import Storage
public import Store

/// Hands queued notifications to their senders (docs/notifications.md#pipeline). Each round: expand
/// outbox rows due within `NotificationScheduler.lookaheadMilliseconds` into deliveries (recipients
/// checked again; a staged alarm fire's deliveries wait for its instant), claim due deliveries with a
/// lease (checked again, cancelled when no longer owed), send them with bounded concurrency, settle
/// every outcome in one write — delivered → done; retry → back-off (`RetryPolicy`, `Retry-After`
/// wins) until its time to live; device gone → the device is deleted; rejected → dropped. Every
/// instance may run one: claims are leased, so a dead instance's deliveries are sent by another once
/// its lease lapses. Delivery is at-least-once.
///
/// When it runs (`start`): a pass of rounds at most every `tick`, and earlier at the instant the next
/// delivery falls due (a staged fire's minute, a retry) or when `wake` is called (the fire scheduler
/// queued something). While a round fills its batch, `Limits.concurrentRounds` rounds run at once
/// until the backlog is gone, so one round's claim and settle overlap another's sends.
public final class NotificationDispatcher: Sendable {
    /// Named limits of one dispatcher.
    public struct Limits: Sendable, Equatable {
        /// Sends in flight at once, per round and sender.
        public var maxConcurrentSends = 32
        /// Rounds run at once while a backlog lasts (each claims its own leased batch, so they never
        /// share a delivery). With 32 sends each, 4 fill `OutboundLimits`' 64 running transfers and
        /// keep the queue behind them, so the connection is never idle while a round claims or settles.
        public var concurrentRounds = 4
        /// Deliveries claimed per round.
        public var claimBatch = 256
        /// Outbox rows expanded per round.
        public var expandBatch = 256
        /// How long a claim holds: longer than any send (outbound total timeout 30 s).
        public var leaseMilliseconds: Int64 = 60_000
        public init() {}
    }

    /// What one round did.
    public struct Round: Sendable, Equatable {
        public var expansion = NotificationDeliveries.Expansion()
        public var delivered = 0
        public var retried = 0
        public var devicesGone = 0
        public var dropped = 0
        /// Deliveries claimed (a full claim batch means more may be waiting).
        public var claimed = 0
        /// Deliveries found due but no longer owed at the claim (`NotificationDeliveries.claim`).
        public var cancelled = 0
        public var sent: Int { delivered + retried + devicesGone + dropped }
        public init() {}
    }

    /// The longest wait between two passes (a pass also starts when a delivery falls due or on `wake`).
    public static let defaultTick: DispatchTimeInterval = .seconds(1)

    private let database: any SQLDatabase
    private let clock: any Clock
    private let logger: Logger
    private let senders: [any NotificationSender]
    private let limits: Limits
    private let retry: RetryPolicy
    private let unitRandom: @Sendable () -> Double
    private let metrics: NotificationMetrics?
    private let owner = "dispatcher:" + UUID().uuidString.lowercased()
    private let loop = RoundLoop(label: "chronir.notification-dispatcher")

    /// A dispatcher over `senders` (one per configured provider, plus the webhook's). Call `start`
    /// for the timer; tests call `runOnce`.
    public init(
        database: any SQLDatabase, clock: any Clock, logger: Logger, senders: [any NotificationSender],
        limits: Limits = Limits(), retry: RetryPolicy = RetryPolicy(), metrics: NotificationMetrics? = nil,
        unitRandom: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.metrics = metrics
        self.database = database
        self.clock = clock
        self.logger = logger
        self.senders = senders
        self.limits = limits
        self.retry = retry
        self.unitRandom = unitRandom
    }

    /// Starts the timer: the first pass after one `tick`, then as described on the type.
    public func start(tick: DispatchTimeInterval = NotificationDispatcher.defaultTick) {
        loop.start(tick: tick) { [self] in
            let next = await pass()
            return next.map { $0 - clock.nowMilliseconds() }
        }
    }

    /// Asks for a pass now (the fire scheduler queued fires: their deliveries are made at once, and the
    /// timer armed for their instant). A pass already running is followed by another.
    public func wake() { loop.wake() }

    /// Rounds until nothing due is left: one, and while it filled its batch, `concurrentRounds` at
    /// once. Returns when the next delivery falls due (nil: none waiting).
    private func pass() async -> Int64? {
        var total = Round()
        do {
            let first = try await round(at: clock.nowMilliseconds(), measuringDepth: false)
            total.add(first)
            if first.backlog(limits) {
                let lanes = max(1, limits.concurrentRounds)
                await withTaskGroup(of: Round.self) { group in
                    for _ in 0..<lanes {
                        group.addTask { [self] in
                            var lane = Round()
                            while !loop.isStopped {
                                do {
                                    let round = try await round(at: clock.nowMilliseconds(), measuringDepth: false)
                                    lane.add(round)
                                    if !round.backlog(limits) { break }
                                } catch {
                                    logger.error("notification dispatcher failed", metadata: ["error": "\(error)"])
                                    break
                                }
                            }
                            return lane
                        }
                    }
                    for await lane in group { total.add(lane) }
                }
            }
        } catch {
            logger.error("notification dispatcher failed", metadata: ["error": "\(error)"])
        }
        if total.sent > 0 || total.expansion.expired > 0 || total.cancelled > 0 {
            logger.info(
                "notifications sent",
                metadata: [
                    "delivered": "\(total.delivered)", "retried": "\(total.retried)",
                    "devices_gone": "\(total.devicesGone)", "dropped": "\(total.dropped)",
                    "expired": "\(total.expansion.expired)", "cancelled": "\(total.cancelled)",
                ])
        }
        let now = clock.nowMilliseconds()
        let metrics = metrics
        return try? await database.read { db in
            if let metrics { metrics.pending(try NotificationDeliveries.depth(on: db)) }
            return try NotificationDeliveries.nextDue(after: now, on: db)
        }
    }

    /// Stops future rounds (one in progress finishes: `waitUntilIdle`).
    public func stop() { loop.stop() }

    /// Waits (blocking) until no round is running, at most `timeout`; returns whether it is idle. The
    /// shutdown calls it after `stop` and after closing the outbound client (which fails sends in
    /// flight at once), so the database is not closed under a round that is still settling.
    @discardableResult
    public func waitUntilIdle(timeout: Duration = .seconds(20)) -> Bool { loop.waitUntilIdle(timeout: timeout) }

    /// One round at `now`: expand, claim, send, settle; then the pending gauge is set.
    @discardableResult
    public func runOnce(at now: Int64) async throws -> Round {
        try await round(at: now, measuringDepth: true)
    }

    /// One round; the pending gauge is set after it when `measuringDepth` (a pass sets it once at its
    /// end instead: counting the deliveries reads the whole table from a reader whose page cache every
    /// round's writes invalidated — 40 counts of 10,000 rows in the 10,000-alarm burst).
    private func round(at now: Int64, measuringDepth: Bool) async throws -> Round {
        var round = Round()
        let providers = Set(senders.compactMap(\.provider))
        let webhook = senders.contains { $0.provider == nil }
        let limits = limits
        let owner = owner
        round.expansion = try await database.write { db in
            try NotificationDeliveries.expand(
                at: now, lookahead: NotificationScheduler.lookaheadMilliseconds, providers: providers, webhook: webhook,
                limit: limits.expandBatch, on: db)
        }
        let claim = try await database.write { db in
            try NotificationDeliveries.claim(
                owner: owner, at: now, leaseUntil: now + limits.leaseMilliseconds, limit: limits.claimBatch, on: db)
        }
        round.claimed = claim.deliveries.count
        round.cancelled = claim.cancelled
        let outcomes = await send(claim.deliveries, now: now).map { delivery, outcome in
            (delivery, outcome, nextAttempt(after: outcome, of: delivery, now: now))
        }
        // Every outcome of the round in one write transaction, not one each.
        let kept =
            outcomes.isEmpty
            ? []
            : try await database.write { db in
                try outcomes.map { delivery, outcome, next in try Self.apply(outcome, to: delivery, nextAttempt: next, on: db) }
            }
        for ((delivery, outcome, _), kept) in zip(outcomes, kept) {
            record(delivery, outcome, kept: kept, round: &round)
        }
        if measuringDepth, let metrics {
            metrics.pending(try await database.read { db in try NotificationDeliveries.depth(on: db) })
        }
        return round
    }

    /// Sends every delivery: each sender gets its share of the round in one call (at most
    /// `maxConcurrentSends` of them in flight at once), the senders side by side.
    private func send(_ deliveries: [NotificationDeliveries.Delivery], now: Int64) async
        -> [(NotificationDeliveries.Delivery, SendOutcome)]
    {
        var shares: [Int: [NotificationDeliveries.Delivery]] = [:]
        var unsendable: [(NotificationDeliveries.Delivery, SendOutcome)] = []
        for delivery in deliveries {
            if let index = senders.firstIndex(where: { $0.provider == delivery.provider }) {
                shares[index, default: []].append(delivery)
            } else {
                unsendable.append((delivery, .rejected(reason: "no sender configured")))
            }
        }
        let senders = senders
        let width = limits.maxConcurrentSends
        // One sender (the usual round): no child task at all.
        if shares.count == 1, let (index, share) = shares.first {
            return unsendable + zip(share, await senders[index].send(share, now: now, width: width))
        }
        return await withTaskGroup(of: [(NotificationDeliveries.Delivery, SendOutcome)].self) { group in
            for (index, share) in shares {
                group.addTask { Array(zip(share, await senders[index].send(share, now: now, width: width))) }
            }
            var results = unsendable
            for await outcomes in group { results += outcomes }
            return results
        }
    }

    /// When a retried delivery is tried again (`RetryPolicy`, `Retry-After` wins); nil for the other outcomes.
    private func nextAttempt(after outcome: SendOutcome, of delivery: NotificationDeliveries.Delivery, now: Int64) -> Int64? {
        guard case .retry(_, let retryAfter) = outcome else { return nil }
        return now + retry.delay(attempts: delivery.attempts, retryAfterMilliseconds: retryAfter, unit: unitRandom())
    }

    /// Settles one outcome in the round's transaction: delivered or rejected → done; retry → due at
    /// `nextAttempt` (false when that passes its TTL and it was dropped); device gone → the device is
    /// deleted, and with it its deliveries.
    private static func apply(
        _ outcome: SendOutcome, to delivery: NotificationDeliveries.Delivery, nextAttempt: Int64?, on db: any SQLConnection
    ) throws -> Bool {
        switch outcome {
        case .delivered, .rejected:
            try NotificationDeliveries.settle(delivery.id, on: db)
        case .retry(let reason, _):
            return try NotificationDeliveries.retry(delivery.id, at: nextAttempt ?? 0, error: reason, on: db)
        case .deviceGone:
            if case .device(let userID, let device) = delivery.target {
                try NotificationDeliveries.deviceGone(userID: userID, deviceID: device.deviceID, on: db)
            } else {
                try NotificationDeliveries.settle(delivery.id, on: db)
            }
        }
        return true
    }

    /// Counts, measures and logs one settled outcome.
    private func record(_ delivery: NotificationDeliveries.Delivery, _ outcome: SendOutcome, kept: Bool, round: inout Round) {
        let provider = delivery.provider?.rawValue ?? "webhook"
        func count(_ outcome: String) {
            metrics?.record(provider: provider, type: delivery.type.rawValue, outcome: outcome)
        }
        switch outcome {
        case .delivered:
            round.delivered += 1
            count("delivered")
            metrics?.delivered(lagMilliseconds: clock.nowMilliseconds() - delivery.notBefore)
        case .retry(let reason, _):
            if kept { round.retried += 1 } else { round.dropped += 1 }
            count(kept ? "retried" : "expired")
            logger.notice(
                kept ? "notification send failed, will retry" : "notification send failed, expired",
                metadata: ["key": "\(delivery.key)", "attempts": "\(delivery.attempts + 1)", "reason": "\(reason)"])
        case .deviceGone(let reason):
            round.devicesGone += 1
            count("device_gone")
            logger.notice("push address gone: device deleted", metadata: ["key": "\(delivery.key)", "reason": "\(reason)"])
        case .rejected(let reason):
            round.dropped += 1
            count("rejected")
            logger.warning("notification rejected", metadata: ["key": "\(delivery.key)", "reason": "\(reason)"])
        }
    }
}

extension NotificationDispatcher.Round {
    /// Adds `other`'s counts to these.
    mutating func add(_ other: Self) {
        expansion.expanded += other.expansion.expanded
        expansion.deliveries += other.expansion.deliveries
        expansion.expired += other.expansion.expired
        delivered += other.delivered
        retried += other.retried
        devicesGone += other.devicesGone
        dropped += other.dropped
        claimed += other.claimed
        cancelled += other.cancelled
    }

    /// Whether this round filled its claim or expand batch (more may be waiting).
    func backlog(_ limits: NotificationDispatcher.Limits) -> Bool {
        claimed + cancelled >= limits.claimBatch || expansion.expanded >= limits.expandBatch
    }
}

extension NotificationDeliveries.Delivery {
    /// The provider its target needs; nil for the webhook.
    var provider: Device.Provider? {
        switch target {
        case .device(_, let device): device.provider
        case .webhook: nil
        }
    }
}
