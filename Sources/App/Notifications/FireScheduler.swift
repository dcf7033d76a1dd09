@preconcurrency public import Dispatch
public import Domain
public import Logging
public import Storage
public import Store

/// Drives `NotificationScheduler` on its own queue (never an event loop): every `tick` a read asks
/// whether any alarm fire or pre-alarm is due within `NotificationScheduler.lookaheadMilliseconds`;
/// only then a write queues them, pass after pass while a pass fills its batch, and `onQueued` is
/// called (the dispatcher's `wake`: it expands them at once and arms its timer for their instant).
/// Exactly-once comes from the outbox keys, so every instance on a database may run one — no claim
/// is taken, the writer lock serialises them.
///
/// Latency: a fire is queued about `lookaheadMilliseconds` before its instant (at most one `tick`
/// after its instant when it became due within the look-ahead, e.g. an alarm edited to fire now).
public final class FireScheduler: Sendable {
    /// How often the scheduler looks for due fires.
    public static let defaultTick: DispatchTimeInterval = .seconds(1)

    private let timer: RepeatingTimer

    /// Starts the timer; the first look is after one `tick`.
    public init(
        database: any SQLDatabase, clock: any WallClock, logger: Logger, tick: DispatchTimeInterval = FireScheduler.defaultTick,
        onQueued: @escaping @Sendable () -> Void = {}
    ) {
        timer = RepeatingTimer(label: "chronir.fire-scheduler", every: tick, leeway: .milliseconds(50), firstAfter: tick) {
            do {
                if try Self.runOnce(database: database, at: clock.nowMilliseconds(), logger: logger).queued > 0 { onQueued() }
            } catch {
                logger.error("fire scheduler failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// One look at `now`: queues every fire due by `now + lookahead` and logs what it did. Returns the
    /// fires handled.
    @discardableResult
    public static func runOnce(database: any SQLDatabase, at now: Int64, logger: Logger) throws -> NotificationScheduler.Pass {
        var total = NotificationScheduler.Pass()
        guard try database.readSync({ try NotificationScheduler.anythingDue(at: now, on: $0) }) else { return total }
        while true {
            // `.concurrent`: beside answers and other instances' passes (`NotificationScheduler.enqueueDue`).
            let pass = try database.writeSync(.concurrent) { try NotificationScheduler.enqueueDue(at: now, on: $0) }
            total.queued += pass.queued
            total.skipped += pass.skipped
            if pass.total < NotificationScheduler.batchLimit { break }
        }
        if total.total > 0 {
            logger.info("alarm fires queued", metadata: ["queued": "\(total.queued)", "skipped": "\(total.skipped)", "at": "\(now)"])
        }
        return total
    }

    /// Stops future looks (one in progress finishes).
    public func stop() { timer.stop() }
}
