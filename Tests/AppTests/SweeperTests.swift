import Dispatch
import Foundation
import Logging
import SQLite
import Storage
import Store
import Synchronization
import TestSupport
import Testing

@testable import App

@Suite("Sweeper — periodic jobs on their own queue")
struct SweeperTests {

    @Test("each job runs once per period of the injected clock, however often the timer ticks")
    func periods() throws {
        let dir = TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let db = try SQLiteDatabase(path: dir.path + "/t.sqlite")
        _ = try MigrationRunner.migrate(db, migrations: Schema.migrations, nowMilliseconds: 1)  // sweep_claims
        let clock = ManualClock()
        let runs = Mutex([0, 0])
        let fast = Sweeper.Job(name: "fast", everyMilliseconds: 1000) { _, _ in
            runs.withLock { $0[0] += 1 }
            return 0
        }
        let slow = Sweeper.Job(name: "slow", everyMilliseconds: 60_000) { _, _ in
            runs.withLock { $0[1] += 1 }
            return 0
        }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        // The ticks run on the manual clock too: each `advance` runs the ticks that fell due before it returns.
        let sweeper = Sweeper(
            database: db, clock: clock, logger: logger, jobs: [fast, slow], tick: .milliseconds(10),
            firstTickAfter: .milliseconds(1), ticks: clock)
        defer { sweeper.stop() }
        #expect(runs.withLock { $0 } == [0, 0])
        clock.advance(by: 1)  // the first tick: every job runs
        #expect(runs.withLock { $0 } == [1, 1])
        // Twenty ticks within the fast job's period: nothing runs again.
        for _ in 0..<20 { clock.advance(by: 10) }
        #expect(runs.withLock { $0 } == [1, 1])
        clock.advance(by: 1000)
        #expect(runs.withLock { $0 } == [2, 1])
        clock.advance(by: 60_000)
        #expect(runs.withLock { $0 } == [3, 2])
    }

    @Test("a batched job runs one write transaction after another until one affects fewer rows than the batch")
    func batches() throws {
        let dir = TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let db = try SQLiteDatabase(path: dir.path + "/t.sqlite")
        // 25 rows due, batches of 10: 10, 10, 5 — three transactions, 25 rows reported.
        let due = Mutex(25)
        let steps = Mutex([Int]())
        let job = Sweeper.Job.inBatches(name: "batched", everyMilliseconds: 1000, of: 10) { now, limit, _ in
            #expect(now == 7)
            let taken = due.withLock { left in
                let taken = min(left, limit)
                left -= taken
                return taken
            }
            steps.withLock { $0.append(taken) }
            return taken
        }
        #expect(try job.run(db, 7) == 25)
        #expect(steps.withLock { $0 } == [10, 10, 5])
        // Exactly a multiple of the batch: one more, empty transaction confirms nothing is left.
        due.withLock { $0 = 20 }
        steps.withLock { $0 = [] }
        #expect(try job.run(db, 7) == 20)
        #expect(steps.withLock { $0 } == [10, 10, 0])
    }

    @Test("a failing job is retried at its next period and does not stop the others")
    func failures() throws {
        let dir = TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        let db = try SQLiteDatabase(path: dir.path + "/t.sqlite")
        _ = try MigrationRunner.migrate(db, migrations: Schema.migrations, nowMilliseconds: 1)  // sweep_claims
        let clock = ManualClock()
        struct Boom: Error {}
        let attempts = Mutex(0)
        let others = Mutex(0)
        let failing = Sweeper.Job(name: "failing", everyMilliseconds: 1000) { _, _ in
            attempts.withLock { $0 += 1 }
            throw Boom()
        }
        let fine = Sweeper.Job(name: "fine", everyMilliseconds: 1000) { _, _ in
            others.withLock { $0 += 1 }
            return 1
        }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let sweeper = Sweeper(
            database: db, clock: clock, logger: logger, jobs: [failing, fine], tick: .milliseconds(10),
            firstTickAfter: .milliseconds(1), ticks: clock)
        defer { sweeper.stop() }
        clock.advance(by: 1)
        #expect(others.withLock { $0 } == 1 && attempts.withLock { $0 } == 1)
        clock.advance(by: 10)  // a tick within the period: the failed job is not retried early
        #expect(attempts.withLock { $0 } == 1)
        clock.advance(by: 1000)
        #expect(others.withLock { $0 } == 2 && attempts.withLock { $0 } == 2)
    }

    @Test("--sweep-period: every job gets the period; the tick is a quarter of it, at most the default")
    func shortPeriod() {
        let jobs = Sweeper.Job.standard.map { $0.every(2000) }
        #expect(jobs.map(\.name) == Sweeper.Job.standard.map(\.name))
        #expect(jobs.allSatisfy { $0.everyMilliseconds == 2000 })
        let short = Sweeper.timing(periodMilliseconds: 2000)
        #expect(short.tick == .milliseconds(500) && short.leeway == .milliseconds(50))
        let long = Sweeper.timing(periodMilliseconds: 86_400_000)
        #expect(long.tick == .milliseconds(30_000) && long.leeway == .milliseconds(1000))
    }
}
