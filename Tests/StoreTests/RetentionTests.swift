import Domain
import SQLite
import Storage
import Store
import TestSupport
import Testing

@Suite("Retention sweep")
struct RetentionTests {
    @Test("deletes login failures, invite attempts and dead sessions past their periods, keeps the rest", arguments: TestBackend.available)
    func sweep(_ backend: TestBackend) throws {
        let db = try backend.open(migrations: Schema.migrations(for: backend.dialect)).database
        let day: Int64 = 24 * 3600 * 1000
        let now = 100 * day
        let user = try db.writeSync { c in
            try AccountStore.register(email: "a@example.com", displayName: "A", passwordHash: "h", tier: .free, at: 0, on: c)
        }
        try db.writeSync { c in
            try LoginFailureStore.record(subjects: ["ip:1"], at: now - 2 * day, on: c)  // old
            try LoginFailureStore.record(subjects: ["ip:1"], at: now - 1000, on: c)  // recent
            try c.run(
                "INSERT INTO invite_attempts (subject, at_ms) VALUES ('user:x', ?1), ('user:x', ?2)",
                [.integer(now - 25 * 3600 * 1000), .integer(now - 3600 * 1000)])
            try SessionStore.create(
                tokenHash: [UInt8](repeating: 1, count: 32), userID: user.id, userAgent: nil, clientIP: nil, at: 0, on: c)
            try SessionStore.create(
                tokenHash: [UInt8](repeating: 2, count: 32), userID: user.id, userAgent: nil, clientIP: nil, at: now - day, on: c)
        }
        let report = try db.writeSync { try Retention.sweep(at: now, on: $0) }
        #expect(report.loginFailures == 1)
        #expect(report.inviteAttempts == 1)
        #expect(report.deadSessions == 1)  // created at 0: expired at 30 days, 70 days ago
        let left = try db.readSync { c in
            (
                try c.scalar("SELECT count(*) FROM login_failures"), try c.scalar("SELECT count(*) FROM invite_attempts"),
                try c.scalar("SELECT count(*) FROM sessions")
            )
        }
        #expect(left.0 == .integer(1) && left.1 == .integer(1) && left.2 == .integer(1))
        #expect(try db.writeSync { try Retention.sweep(at: now, on: $0) }.total == 0)  // idempotent
    }
}

@Suite("Sweep claims — each job once per period across instances (migration 0010)")
struct SweepClaimsTests {
    @Test("of two handles claiming in the same period one wins; the next period is claimable again", arguments: TestBackend.available)
    func oncePerPeriod(_ backend: TestBackend) throws {
        let storage = try backend.open(migrations: Schema.migrations(for: backend.dialect))
        let a = storage.database
        let b = try openAnotherHandle(storage.database)
        let minute: Int64 = 60_000
        func claim(_ db: any SQLDatabase, _ now: Int64) throws -> Bool {
            try db.writeSync { try SweepClaims.claim(job: "retention", everyMilliseconds: minute, at: now, on: $0) }
        }
        #expect(try claim(a, 1_000_000))
        #expect(try !claim(b, 1_000_000), "the other instance, same tick")
        #expect(try !claim(b, 1_000_000 + minute / 2), "half a period later")
        #expect(try claim(b, 1_000_000 + minute - SweepClaims.toleranceMilliseconds), "a period later (a timer a second early)")
        #expect(try !claim(a, 1_000_000 + minute), "already taken by b this period")
        #expect(
            try a.writeSync { try SweepClaims.claim(job: "compaction", everyMilliseconds: minute, at: 1_000_000, on: $0) },
            "jobs are claimed separately")
    }
}
