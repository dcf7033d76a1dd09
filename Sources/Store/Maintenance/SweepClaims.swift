public import Storage

/// Once-per-cluster maintenance (migration 0010): before a sweeper job runs, its instance claims the
/// run in `sweep_claims`. Write transactions are serialised across instances (SQLite's write lock,
/// PostgreSQL's writer advisory lock), so of several instances whose timers fire in the same period
/// exactly one claim succeeds; if that instance dies, the next period's claim goes to another.
public enum SweepClaims {
    /// How much earlier than one period after the last run a claim may succeed (at most a tenth of
    /// the period): instances' clocks and timers drift, and a run a second early is harmless (every
    /// job is idempotent) while a run skipped for a whole period because a timer fired a second
    /// early is not.
    public static let toleranceMilliseconds: Int64 = 1_000

    /// The tolerance for a job run every `everyMilliseconds`.
    static func tolerance(everyMilliseconds: Int64) -> Int64 { min(toleranceMilliseconds, everyMilliseconds / 10) }

    /// Claims `job` at `now`: true (recorded) when no instance ran it in the last `everyMilliseconds`
    /// (less the tolerance), false when one did. Call in its own write transaction.
    public static func claim(job: String, everyMilliseconds: Int64, at now: Int64, on db: any SQLConnection) throws -> Bool {
        try db.run(
            """
            INSERT INTO sweep_claims (job, last_run_ms) VALUES (?1, ?2)
            ON CONFLICT (job) DO UPDATE SET last_run_ms = excluded.last_run_ms
            WHERE sweep_claims.last_run_ms <= ?3
            """, [.text(job), .integer(now), .integer(now - everyMilliseconds + tolerance(everyMilliseconds: everyMilliseconds))]) == 1
    }
}
