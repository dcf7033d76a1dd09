@preconcurrency public import Dispatch
public import Domain
import Foundation
public import Logging
public import Storage
public import Store
import Synchronization

/// Hands queued notifications to their senders (docs/notifications.md#pipeline). Each round: expand
/// outbox rows due within `NotificationScheduler.lookaheadMilliseconds` into deliveries (recipients
/// checked again; a staged alarm fire's deliveries wait for its instant), claim due deliveries with a
/// lease (checked again, cancelled when no longer owed), charge each to its send budget (`SendBudget`:
/// per user-chosen origin, per account, in all — one over a budget is postponed, not sent), start the
/// sends, one group per sender and origin, and settle each group's outcomes in one write when the
/// group is done — delivered → done; retry → back-off (`RetryPolicy`, `Retry-After`
/// wins) until its time to live; device gone → the device is deleted; rejected → dropped. Every
/// instance may run one: claims are leased, so a dead instance's deliveries are sent by another once
/// its lease lapses. Delivery is at-least-once.
///
/// A round never waits for its sends (one stalled origin held every round for its
/// 15-s deadline, so everyone's notifications waited): a group that does not finish keeps its slots and
/// its lease while later rounds send everyone else's; `runOnce` (tests, one explicit round) does await
/// them.
///
/// When it runs (`start`): a pass of rounds at most every `tick`, and earlier at the instant the next
/// delivery falls due (a staged fire's minute, a retry, a postponed delivery) or when `wake` is called
/// (the fire scheduler queued something; a group settled while the in-flight budget was full). While a
/// round fills its batch, `Limits.concurrentRounds` rounds run at once until the backlog is gone.
public final class NotificationDispatcher: Sendable {
    /// Named limits of one dispatcher.
    public struct Limits: Sendable, Equatable {
        /// Sends in flight at once, per round and sender.
        public var maxConcurrentSends = 32
        /// Rounds run at once while a backlog lasts (each claims its own leased batch, so they never
        /// share a delivery). With 32 sends each, 4 fill `OutboundLimits`' 64 running transfers and
        /// keep the queue behind them, so the connection is never idle while a round claims or settles.
        public var concurrentRounds = 4
        /// Deliveries claimed per round: a quarter of `maxInFlight`, so while one round's sends run the
        /// next rounds claim, and their round trips to the database overlap with the sending.
        public var claimBatch = 128
        /// Outbox rows expanded per round.
        public var expandBatch = 256
        /// How long a claim holds: longer than any send (outbound total timeout 30 s).
        public var leaseMilliseconds: Int64 = 60_000
        /// Sends in flight at once, every origin and round together: rounds do not wait for their sends,
        /// so this is what bounds them. 512 = 4 claim batches: with one batch in flight a round's claim,
        /// settle and wake-up ran one after another with its sends, and across a network (0.7 ms a
        /// round trip) they, not the sends, set the pace (docs/scaling.md, "Notifications at a
        /// distance"). The outbound client runs at most `OutboundLimits` transfers at once; the rest wait
        /// there, leased.
        public var maxInFlight = 512
        /// Sends in flight at once to one user-chosen origin (a Web Push endpoint's `https://host:port`):
        /// a stalled origin holds at most this many of `maxInFlight`. 32, what one round sent to one
        /// provider before, so a big push service (FCM's, Mozilla's, Apple's) keeps its pace.
        public var maxInFlightPerOrigin = 32
        /// Sends in flight at once to one account's devices: a household has a few; an account with 20
        /// stalling devices holds 8 slots, the rest of its deliveries wait their turn.
        public var maxInFlightPerAccount = 8
        /// How long a delivery over a budget waits before it is claimed again (no attempt counted).
        public var overBudgetDeferMilliseconds: Int64 = 1_000
        /// A device whose user-chosen endpoint timed out this many times in a row is dropped, like one its
        /// push service called gone …
        public var timeoutsBeforeDrop = 5
        /// … when the first and the last of those timeouts are at least this far apart: a push service's
        /// outage shorter than 10 minutes drops nobody's device.
        public var timeoutStreakMilliseconds: Int64 = 600_000
        /// Devices whose timeout streak is remembered (memory bound; per process, a restart forgets).
        public var maxTrackedStreaks = 10_000
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
        /// Deliveries claimed but over a send budget: postponed by `overBudgetDeferMilliseconds`.
        public var postponed = 0
        public var sent: Int { delivered + retried + devicesGone + dropped }
        public init() {}
    }

    /// The longest wait between two passes (a pass also starts when a delivery falls due or on `wake`).
    public static let defaultTick: DispatchTimeInterval = .seconds(1)

    private let database: any SQLDatabase
    private let clock: any WallClock
    private let logger: Logger
    private let senders: [any NotificationSender]
    private let limits: Limits
    private let retry: RetryPolicy
    private let unitRandom: @Sendable () -> Double
    private let metrics: NotificationMetrics?
    private let owner = "dispatcher:" + UUID().uuidString.lowercased()
    private let loop = RoundLoop(label: "chronir.notification-dispatcher")
    private let budget: Mutex<SendBudget>
    /// Set when a round claimed fewer than its batch because `maxInFlight` was reached: the next group
    /// to settle asks for a pass.
    private let starved = Mutex(false)
    /// When a pass last counted the waiting deliveries for the pending gauge (`depthInterval`).
    private let depthCountedAt = Mutex<Int64?>(nil)
    /// How often a pass counts the waiting deliveries (a scan of the table) for the pending gauge: a
    /// burst runs a pass per settled group, dozens a second, and the gauge needs no more than this.
    static let depthInterval: Int64 = 1_000

    /// A dispatcher over `senders` (one per configured provider, plus the webhook's). Call `start`
    /// for the timer; tests call `runOnce`.
    public init(
        database: any SQLDatabase, clock: any WallClock, logger: Logger, senders: [any NotificationSender],
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
        budget = Mutex(SendBudget(limits: limits))
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
    /// once. The rounds start their sends and return; the sends settle on their own. Returns when the
    /// next delivery falls due (nil: none waiting, or the in-flight budget is full — a settling group
    /// wakes the loop).
    private func pass() async -> Int64? {
        var total = Round()
        do {
            let first = try await round(at: clock.nowMilliseconds()).round
            total.add(first)
            if first.backlog(limits) {
                let lanes = max(1, limits.concurrentRounds)
                await withTaskGroup(of: Round.self) { group in
                    for _ in 0..<lanes {
                        group.addTask { [self] in
                            var lane = Round()
                            while !loop.isStopped {
                                do {
                                    let round = try await round(at: clock.nowMilliseconds()).round
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
        log(total)
        let now = clock.nowMilliseconds()
        let counting =
            metrics != nil
            && depthCountedAt.withLock { last in
                guard last.map({ now - $0 >= Self.depthInterval }) ?? true else { return false }
                last = now
                return true
            }
        let read: @Sendable (any SQLConnection) throws -> (depth: Int64?, nextDue: Int64?) = { db in
            try NotificationDeliveries.outlook(after: now, countingDepth: counting, on: db)
        }
        // Without the count the outlook is one statement: a `.statement` read, no BEGIN or COMMIT.
        let outlook = try? await (counting ? database.read(read) : database.readStatement(read))
        if let metrics, let depth = outlook?.depth { metrics.pending(depth) }
        let due = outlook?.nextDue
        return starved.withLock { $0 } ? nil : due
    }

    /// Stops future rounds (one in progress finishes, and the sends it started: `waitUntilIdle`).
    public func stop() { loop.stop() }

    /// Waits (blocking) until no round is running and every send it started has settled, at most
    /// `timeout`; returns whether it is idle. The shutdown calls it after `stop` and after closing the
    /// outbound client (which fails sends in flight at once), so the database is not closed under a
    /// group that is still settling.
    @discardableResult
    public func waitUntilIdle(timeout: Duration = .seconds(20)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        guard loop.waitUntilIdle(timeout: timeout) else { return false }
        while budget.withLock({ $0.inFlight }) > 0 {
            guard ContinuousClock.now < deadline else { return false }
            usleep(10_000)
        }
        return true
    }

    /// One round at `now`: expand, claim, charge, send, and — unlike the timer's rounds — wait for every
    /// send it started to settle; then the pending gauge is set.
    @discardableResult
    public func runOnce(at now: Int64) async throws -> Round {
        var (round, groups) = try await self.round(at: now)
        for group in groups { round.add(await group.value) }
        if let metrics {
            metrics.pending(try await database.readStatement { db in try NotificationDeliveries.depth(on: db) })
        }
        return round
    }

    /// One round: expand, claim as many as `maxInFlight` leaves room for, charge each delivery to its
    /// budget (postponing those over it and settling those no sender takes, in one write), and start one
    /// task per sender and origin. Returns what it did and those tasks (each yields its settled counts).
    private func round(at now: Int64) async throws -> (round: Round, groups: [Task<Round, Never>]) {
        var round = Round()
        let providers = Set(senders.compactMap(\.provider))
        let webhook = senders.contains { $0.provider == nil }
        let limits = limits
        let owner = owner
        round.expansion = try await database.write(.concurrent) { db in
            try NotificationDeliveries.expand(
                at: now, lookahead: NotificationScheduler.lookaheadMilliseconds, providers: providers, webhook: webhook,
                limit: limits.expandBatch, on: db)
        }
        // Rounds claim at once (`Limits.concurrentRounds`): each reserves its room first.
        let room = budget.withLock { $0.reserve(upTo: limits.claimBatch) }
        guard room > 0 else {
            starved.withLock { $0 = true }
            return (round, [])
        }
        let claim: NotificationDeliveries.Claim
        do {
            claim = try await database.write(.concurrent) { db in
                try NotificationDeliveries.claim(owner: owner, at: now, leaseUntil: now + limits.leaseMilliseconds, limit: room, on: db)
            }
        } catch {
            budget.withLock { $0.endReservation(room) }
            throw error
        }
        round.claimed = claim.deliveries.count
        round.cancelled = claim.cancelled
        if room < limits.claimBatch && claim.deliveries.count + claim.cancelled >= room { starved.withLock { $0 = true } }

        var shares: [GroupKey: [NotificationDeliveries.Delivery]] = [:]
        var postponed: [Int64] = []
        var unsendable: [(NotificationDeliveries.Delivery, SendOutcome)] = []
        budget.withLock { budget in
            budget.endReservation(room)
            for delivery in claim.deliveries {
                guard let index = senders.firstIndex(where: { $0.provider == delivery.provider }) else {
                    unsendable.append((delivery, .rejected(reason: "no sender configured")))
                    continue
                }
                let charge = charge(of: delivery, sender: senders[index])
                switch budget.admit(charge) {
                case .admitted: shares[GroupKey(sender: index, origin: charge.origin), default: []].append(delivery)
                case .overBudget: postponed.append(delivery.id)
                }
            }
        }
        round.postponed = postponed.count
        if !postponed.isEmpty || !unsendable.isEmpty {
            let (ids, until) = (postponed, now + limits.overBudgetDeferMilliseconds)
            try await database.write(.concurrent) { db in try NotificationDeliveries.postpone(ids, until: until, on: db) }
            round.add(try await settle(unsendable, now: now))
        }
        let groups = shares.map { key, share in
            Task { [self] in await send(share, sender: key.sender, now: now) }
        }
        return (round, groups)
    }

    /// Which sends settle together: one sender's deliveries to one user-chosen origin (nil: the sender's
    /// own destination).
    private struct GroupKey: Hashable {
        var sender: Int
        var origin: String?
    }

    /// What a delivery's send is charged to.
    private func charge(of delivery: NotificationDeliveries.Delivery, sender: any NotificationSender) -> SendBudget.Charge {
        let account: String? =
            switch delivery.target {
            case .device(let userID, _): userID
            case .webhook: nil
            }
        return SendBudget.Charge(origin: sender.userChosenOrigin(of: delivery), account: account)
    }

    /// Sends one group (at most `maxConcurrentSends` at once), turns a device's timeout streak past its
    /// limit into device gone, settles the outcomes in one write, and gives the slots back.
    private func send(_ share: [NotificationDeliveries.Delivery], sender index: Int, now: Int64) async -> Round {
        let sender = senders[index]
        var outcomes = await sender.send(share, now: now, width: limits.maxConcurrentSends)
        let charges = share.map { charge(of: $0, sender: sender) }
        budget.withLock { budget in
            for (position, delivery) in share.enumerated() where charges[position].origin != nil {
                guard case .device(let userID, let device) = delivery.target else { continue }
                let key = userID + "/" + device.deviceID
                if budget.recordTimeout(device: key, timedOut: outcomes[position].isTimeout, now: now) {
                    outcomes[position] = .deviceGone(reason: "timed out \(limits.timeoutsBeforeDrop) times in a row")
                }
            }
        }
        var round = Round()
        do {
            round = try await settle(Array(zip(share, outcomes)), now: now)
        } catch {
            logger.error("notification dispatcher failed", metadata: ["error": "\(error)"])
        }
        budget.withLock { budget in for charge in charges { budget.release(charge) } }
        let wasStarved = starved.withLock { flag in
            defer { flag = false }
            return flag
        }
        if wasStarved { loop.wake() }
        log(round)
        return round
    }

    /// Settles `outcomes` in one write transaction, then counts, measures and logs each. The write is
    /// `.concurrent` (it changes only deliveries this dispatcher leased) unless a device is gone:
    /// deleting a device deletes its deliveries, which another round may hold, so that one runs alone.
    private func settle(_ outcomes: [(NotificationDeliveries.Delivery, SendOutcome)], now: Int64) async throws -> Round {
        var round = Round()
        guard !outcomes.isEmpty else { return round }
        let planned = outcomes.map { delivery, outcome in (delivery, outcome, nextAttempt(after: outcome, of: delivery, now: now)) }
        let kind: TransactionKind = outcomes.contains { $0.1.isDeviceGone } ? .immediate : .concurrent
        let kept = try await database.write(kind) { db in
            var done: [Int64] = []
            let kept = try planned.map { delivery, outcome, next in
                try Self.apply(outcome, to: delivery, nextAttempt: next, done: &done, on: db)
            }
            try NotificationDeliveries.settle(done, on: db)
            return kept
        }
        for ((delivery, outcome, _), kept) in zip(planned, kept) {
            record(delivery, outcome, kept: kept, round: &round)
        }
        return round
    }

    /// The summary line of what settled (nothing when nothing did).
    private func log(_ total: Round) {
        guard total.sent > 0 || total.expansion.expired > 0 || total.cancelled > 0 || total.postponed > 0 else { return }
        logger.info(
            "notifications sent",
            metadata: [
                "delivered": "\(total.delivered)", "retried": "\(total.retried)",
                "devices_gone": "\(total.devicesGone)", "dropped": "\(total.dropped)",
                "expired": "\(total.expansion.expired)", "cancelled": "\(total.cancelled)", "postponed": "\(total.postponed)",
            ])
    }

    /// When a retried delivery is tried again (`RetryPolicy`, `Retry-After` wins); nil for the other outcomes.
    private func nextAttempt(after outcome: SendOutcome, of delivery: NotificationDeliveries.Delivery, now: Int64) -> Int64? {
        guard case .retry(_, let retryAfter) = outcome else { return nil }
        return now + retry.delay(attempts: delivery.attempts, retryAfterMilliseconds: retryAfter, unit: unitRandom())
    }

    /// Settles one outcome in the round's transaction: delivered or rejected → done (its id added to
    /// `done`, which the caller settles in one statement); retry → due at `nextAttempt` (false when
    /// that passes its TTL and it was dropped); device gone → the device is deleted, and with it its
    /// deliveries.
    private static func apply(
        _ outcome: SendOutcome, to delivery: NotificationDeliveries.Delivery, nextAttempt: Int64?, done: inout [Int64],
        on db: any SQLConnection
    ) throws -> Bool {
        switch outcome {
        case .delivered, .rejected:
            done.append(delivery.id)
        case .retry(let reason, _):
            return try NotificationDeliveries.retry(delivery.id, at: nextAttempt ?? 0, error: reason, on: db)
        case .deviceGone:
            if case .device(let userID, let device) = delivery.target {
                try NotificationDeliveries.deviceGone(userID: userID, deviceID: device.deviceID, on: db)
            } else {
                done.append(delivery.id)
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
        postponed += other.postponed
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
