@preconcurrency public import Dispatch
import Domain
import Logging
import Storage
import Store
public import Transport

/// Google Play acknowledgements (docs/subscriptions.md#google-play): Google refunds a purchase not
/// acknowledged within three days. After a purchase is posted or notified, `acknowledge` acknowledges it
/// when Google shows it unacknowledged; a failure schedules another attempt `retryMilliseconds` later,
/// which a timer on the injected clock makes (`pass`): the purchase is read again first (it may have been
/// acknowledged meanwhile, or have ended), then acknowledged — so a failed acknowledgement is not lost.
public final class PlayAcknowledgements: Sendable {
    /// How often the timer looks for due attempts.
    public static let tick: DispatchTimeInterval = .seconds(60)
    /// How long after a failed attempt the next is due (Google allows three days).
    public static let retryMilliseconds: Int64 = 15 * 60_000
    /// Most attempts one pass makes.
    public static let batchSize = 50

    private let play: PlayDeveloperAPI
    private let services: Services
    private let schedule = PassSchedule()

    /// Acknowledges through `play`, records through `services`.
    public init(play: PlayDeveloperAPI, services: Services) {
        self.play = play
        self.services = services
    }

    /// Starts the retry timer on `ticks` (a test passes its `ManualClock`).
    public func start(ticks: any MonotonicClock = SystemMonotonicClock(), every: DispatchTimeInterval = PlayAcknowledgements.tick) {
        let clock = services.clock
        schedule.start(label: "chronir.play-acknowledge", every: every, ticks: ticks) { [self] in
            _ = await pass(at: clock.nowMilliseconds())
        }
    }

    /// Stops the timer and waits for a pass in progress (blocks: call it off the cooperative pool).
    public func stop() { schedule.stop() }

    /// Acknowledges `subscription` of `token` when Google shows it unacknowledged and it grants access;
    /// a failure is logged and retried later. Returns whether an acknowledgement is still owed.
    @discardableResult
    public func acknowledge(_ subscription: PlaySubscription, token: String) async -> Bool {
        guard !subscription.acknowledged, subscription.state == "ACTIVE" || subscription.state == "IN_GRACE_PERIOD" else { return false }
        let now = services.clock.nowMilliseconds()
        switch await play.acknowledge(productID: subscription.productID, token: token, now: now) {
        case .success:
            await schedule(token, nil)
            return false
        case .failure(let failure):
            services.logger.warning("play: acknowledge failed, retried later", metadata: ["error": "\(failure)"])
            await schedule(token, now + Self.retryMilliseconds)
            return true
        }
    }

    /// Tries every acknowledgement due at `now` again (at most `batchSize`); returns the tokens still owed one.
    public func pass(at now: Int64) async -> [String] {
        let due: [EntitlementStore.AcknowledgementDue]
        do {
            due = try await services.database.read { db in
                try EntitlementStore.playAcknowledgementsDue(at: now, limit: Self.batchSize, on: db)
            }
        } catch {
            services.logger.error("play: cannot read due acknowledgements", metadata: ["error": "\(error)"])
            return []
        }
        var owed: [String] = []
        defer {
            let failed = owed.count
            for _ in 0..<failed { services.metrics.playAcknowledgementRetry(outcome: "failed") }
            for _ in 0..<(due.count - failed) { services.metrics.playAcknowledgementRetry(outcome: "done") }
        }
        for item in due {
            switch await play.subscription(token: item.token, now: now) {
            case .success(let subscription):
                if await acknowledge(subscription, token: item.token) {
                    owed.append(item.token)
                } else {
                    await schedule(item.token, nil)
                }
            case .failure(.notFound):
                await schedule(item.token, nil)
            case .failure(.unavailable(let why)):
                services.logger.warning("play: acknowledge retry could not read the purchase", metadata: ["error": "\(why)"])
                await schedule(item.token, now + Self.retryMilliseconds)
                owed.append(item.token)
            }
        }
        return owed
    }

    private func schedule(_ token: String, _ due: Int64?) async {
        do {
            try await services.database.write { db in try EntitlementStore.setPlayAcknowledgementDue(token: token, at: due, on: db) }
        } catch {
            services.logger.error("play: cannot record the acknowledgement", metadata: ["error": "\(error)"])
        }
    }
}
