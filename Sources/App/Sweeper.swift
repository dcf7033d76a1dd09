@preconcurrency public import Dispatch
public import Domain
public import Logging
public import Storage
import Store
import Synchronization
public import Transport

/// Runs periodic maintenance on its own queue (never an event loop). Each job has its own period;
/// the timer ticks every `tick` and runs the jobs that are due, each in its own write transaction —
/// once per period across every instance on the database (`SweepClaims`).
/// Every run this instance claimed logs one `sweep` line at info (`job`, `rows`, `at`: the claim's
/// time in ms) — how an operator, and Reliability/three-instances.sh, sees which instance ran what.
/// A failing job is logged and retried at its next period.
public final class Sweeper: Sendable {
    /// How often the timer checks for due jobs.
    public static let defaultTick: DispatchTimeInterval = .seconds(30)

    private let timer: RepeatingTimer

    /// One maintenance job: a name for logs, its period, and the work (returns rows affected).
    public struct Job: Sendable {
        public var name: String
        public var everyMilliseconds: Int64
        public var run: @Sendable (any SQLDatabase, Int64) throws -> Int
        public init(name: String, everyMilliseconds: Int64, run: @escaping @Sendable (any SQLDatabase, Int64) throws -> Int) {
            self.name = name
            self.everyMilliseconds = everyMilliseconds
            self.run = run
        }

        /// Marks shared-alarm occurrences still open past their grace as missed, every minute,
        /// in batches of 500 alarms per transaction until none is left.
        public static let overdueOccurrences = Job.inBatches(name: "overdue_occurrences", everyMilliseconds: 60_000, of: 500) {
            now, limit, db in try SharedAlarmStore.sweepOverdue(at: now, limit: limit, on: db)
        }

        /// The retention sweep (`Retention.sweep`), every 10 minutes.
        public static let retention = Job(name: "retention", everyMilliseconds: 600_000) { db, now in
            try db.writeSync { try Retention.sweep(at: now, on: $0) }.total
        }

        /// Change-log compaction (`ChangeLog.compact`, `ChangeLogRetention.standard`), every 10 minutes,
        /// one bounded transaction at a time until nothing is due.
        public static let changeLogCompaction = Job(name: "change_log_compaction", everyMilliseconds: 600_000) { db, now in
            try ChangeLog.compactUntilDone(at: now, database: db).rowsRemoved
        }

        /// Entitlements whose period or grace period ran out (`EntitlementStore.sweepExpiries`), every
        /// minute, 200 accounts per transaction until none is left: the tier follows the store's dates
        /// even when no notification arrives (docs/subscriptions.md#the-timeline-of-a-lapse).
        public static let entitlementExpiry = Job.inBatches(name: "entitlement_expiry", everyMilliseconds: 60_000, of: 200) {
            now, limit, db in try EntitlementStore.sweepExpiries(at: now, limit: limit, on: db)
        }

        /// A job that runs `step` in one write transaction after another, each on at most `batch` rows
        /// (`limit`), until one affects fewer (nothing more is due); the rows it reports are the sum.
        static func inBatches(
            name: String, everyMilliseconds: Int64, of batch: Int,
            _ step: @escaping @Sendable (_ now: Int64, _ limit: Int, any SQLConnection) throws -> Int
        ) -> Job {
            Job(name: name, everyMilliseconds: everyMilliseconds) { db, now in
                var total = 0
                while true {
                    let affected = try db.writeSync { try step(now, batch, $0) }
                    total += affected
                    if affected < batch { return total }
                }
            }
        }

        /// What the server runs.
        public static let standard: [Job] = [.overdueOccurrences, .retention, .changeLogCompaction, .entitlementExpiry]

        /// This job run every `milliseconds` instead (`--sweep-period`; every job is idempotent).
        public func every(_ milliseconds: Int64) -> Job {
            Job(name: name, everyMilliseconds: milliseconds, run: run)
        }
    }

    /// The tick and timer leeway for jobs run every `periodMilliseconds` (`--sweep-period`): a
    /// quarter of the period, at most `defaultTick`, so a run starts at most a quarter period late;
    /// leeway a tenth of the tick, at most the default 1 s.
    public static func timing(periodMilliseconds: Int64) -> (tick: DispatchTimeInterval, leeway: DispatchTimeInterval) {
        let tick = max(1, min(30_000, periodMilliseconds / 4))
        return (.milliseconds(Int(tick)), .milliseconds(Int(max(1, min(1000, tick / 10)))))
    }

    /// Starts the timer; every job first runs at the first tick. `clock` dates the runs; the ticks run
    /// on `ticks` (real time by default; a test passes its `ManualClock` and advances it instead of sleeping).
    public init(
        database: any SQLDatabase, clock: any WallClock, logger: Logger, jobs: [Job] = Job.standard,
        tick: DispatchTimeInterval = Sweeper.defaultTick, leeway: DispatchTimeInterval = .seconds(1),
        firstTickAfter: DispatchTimeInterval = .seconds(2), ticks: any MonotonicClock = SystemMonotonicClock()
    ) {
        let lastRun = Mutex([Int64](repeating: Int64.min / 2, count: jobs.count))
        timer = RepeatingTimer(
            label: "chronir.sweeper", every: tick, leeway: leeway, firstAfter: firstTickAfter, clock: ticks
        ) {
            let now = clock.nowMilliseconds()
            for (index, job) in jobs.enumerated() {
                let due = lastRun.withLock { last -> Bool in
                    guard now - last[index] >= job.everyMilliseconds else { return false }
                    last[index] = now
                    return true
                }
                guard due else { continue }
                do {
                    // Another instance on the same database may have run it this period.
                    let claimed = try database.writeSync {
                        try SweepClaims.claim(job: job.name, everyMilliseconds: job.everyMilliseconds, at: now, on: $0)
                    }
                    guard claimed else { continue }
                    let affected = try job.run(database, now)
                    logger.info("sweep", metadata: ["job": "\(job.name)", "rows": "\(affected)", "at": "\(now)"])
                } catch {
                    logger.error("sweep failed", metadata: ["job": "\(job.name)", "error": "\(error)"])
                }
            }
        }
    }

    /// Stops future runs (a run in progress finishes).
    public func stop() { timer.stop() }
}
