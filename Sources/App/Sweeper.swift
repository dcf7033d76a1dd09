@preconcurrency public import Dispatch
public import Domain
public import Logging
public import SQLite
import Store

/// Runs periodic maintenance on its own queue (never an event loop): the retention sweep now;
/// more jobs (overdue occurrences) plug in as `jobs`. Each run is one write transaction per job; a
/// failing job is logged and retried at the next tick.
public final class Sweeper: Sendable {
    /// Time between runs.
    public static let defaultInterval: DispatchTimeInterval = .seconds(600)

    private let timer: any DispatchSourceTimer
    private let queue = DispatchQueue(label: "chronir.sweeper")

    /// One maintenance job: a name for logs and the work, given the database and "now".
    public struct Job: Sendable {
        public var name: String
        public var run: @Sendable (Database, Int64) throws -> Int
        public init(name: String, run: @escaping @Sendable (Database, Int64) throws -> Int) {
            self.name = name
            self.run = run
        }

        /// The retention sweep (`Retention.sweep`).
        public static let retention = Job(name: "retention") { database, now in
            try database.writeSync { try Retention.sweep(at: now, on: $0) }.total
        }
    }

    /// Starts the timer: the first run after `firstRunAfter`, then every `interval`.
    public init(
        database: Database, clock: any Clock, logger: Logger, jobs: [Job] = [.retention],
        interval: DispatchTimeInterval = Sweeper.defaultInterval, firstRunAfter: DispatchTimeInterval = .seconds(5)
    ) {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        self.timer = timer
        timer.schedule(deadline: .now() + firstRunAfter, repeating: interval, leeway: .seconds(1))
        timer.setEventHandler {
            let now = clock.nowMilliseconds()
            for job in jobs {
                do {
                    let affected = try job.run(database, now)
                    if affected > 0 { logger.info("sweep", metadata: ["job": "\(job.name)", "rows": "\(affected)"]) }
                } catch {
                    logger.error("sweep failed", metadata: ["job": "\(job.name)", "error": "\(error)"])
                }
            }
        }
        timer.resume()
    }

    /// Stops future runs (a run in progress finishes).
    public func stop() { timer.cancel() }

    deinit { timer.cancel() }
}
