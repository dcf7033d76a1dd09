import Domain
import Testing

@Suite("Token bucket and write budget — pure policy, time passed in")
struct WriteBudgetTests {
    static let t0: Int64 = 1_770_368_400_000

    @Test("a bucket starts full, takes exactly its capacity, then refills at its rate")
    func bucket() {
        var b = TokenBucket(capacity: 3, refillUnits: 2, perMilliseconds: 1000, now: Self.t0)
        #expect(b.isFull(now: Self.t0))
        for _ in 0..<3 {
            let result = b.take(1, now: Self.t0)
            #expect(result)
        }
        let took1 = b.take(1, now: Self.t0)
        #expect(!took1)
        #expect(b.wait(for: 1, now: Self.t0) == 500)
        let took2 = b.take(1, now: Self.t0 + 499)
        #expect(!took2)
        let took3 = b.take(1, now: Self.t0 + 500)
        #expect(took3)
        #expect(b.available(now: Self.t0 + 500) == 0)
        #expect(b.available(now: Self.t0 + 10_000) == 3)  // never above capacity
        #expect(b.isFull(now: Self.t0 + 2000))  // empty at +500, 3 units at 2 a second
        #expect(!b.isFull(now: Self.t0 + 1999))
    }

    @Test("a cost above capacity is charged as the whole bucket; a clock stepping back refills nothing")
    func edges() {
        var b = TokenBucket(capacity: 10, refillUnits: 10, perMilliseconds: 1000, now: Self.t0)
        let took1 = b.take(25, now: Self.t0)
        #expect(took1)
        #expect(b.wait(for: 25, now: Self.t0) == 1000)
        // The clock steps back an hour: no refill, and the refill restarts from the earlier time
        // instead of waiting for the old time to come back.
        let took2 = b.take(1, now: Self.t0 - 3_600_000)
        #expect(!took2)
        let took3 = b.take(1, now: Self.t0 - 3_600_000 + 100)
        #expect(took3)
        // Huge gaps do not overflow.
        #expect(b.isFull(now: Int64.max / 2))
    }

    @Test("the count budget: burst at once, then writesPerMinute; Retry-After rounds up to whole seconds")
    func countBudget() {
        let budget = WriteBudget(writesPerMinute: 120, burst: 60, bytesPerHour: 0)
        var a = budget.allowance(now: Self.t0)
        for _ in 0..<60 {
            let result = a.charge(bodyBytes: 10, now: Self.t0)
            #expect(result == .allowed)
        }
        let decision1 = a.charge(bodyBytes: 10, now: Self.t0)
        #expect(decision1 == .refused(retryAfterSeconds: 1))  // 500 ms → 1 s
        let decision2 = a.charge(bodyBytes: 10, now: Self.t0 + 500)
        #expect(decision2 == .allowed)
        let decision3 = a.charge(bodyBytes: 10, now: Self.t0 + 500)
        #expect(decision3 == .refused(retryAfterSeconds: 1))
        #expect(a.isFull(now: Self.t0 + 500 + 30_000))
    }

    @Test("the byte budget: bodies count, at least minimumChargedBytes each; a refusal charges nothing")
    func byteBudget() {
        let budget = WriteBudget(writesPerMinute: 0, burst: 0, bytesPerHour: 10 * 1024)
        var a = budget.allowance(now: Self.t0)
        let decision1 = a.charge(bodyBytes: 8 * 1024, now: Self.t0)
        #expect(decision1 == .allowed)
        let decision2 = a.charge(bodyBytes: 1, now: Self.t0)
        #expect(decision2 == .allowed)  // charged 1 KiB
        let decision3 = a.charge(bodyBytes: 1024, now: Self.t0)
        #expect(decision3 == .allowed)  // exactly the rest
        // 2 KiB more: refills at 10 KiB an hour, so 720 s.
        let decision4 = a.charge(bodyBytes: 2048, now: Self.t0)
        #expect(decision4 == .refused(retryAfterSeconds: 720))
        // The refusal took nothing from either bucket.
        let decision5 = a.charge(bodyBytes: 2048, now: Self.t0 + 720_000)
        #expect(decision5 == .allowed)
    }

    @Test("both buckets must have room; Retry-After is the later of the two; nothing is half-charged")
    func both() {
        let budget = WriteBudget(writesPerMinute: 60, burst: 2, bytesPerHour: 3600 * 1024)  // 1 KiB/s
        var a = budget.allowance(now: Self.t0)
        let decision1 = a.charge(bodyBytes: 3600 * 1024 - 1024, now: Self.t0)
        #expect(decision1 == .allowed)
        let decision2 = a.charge(bodyBytes: 5 * 1024, now: Self.t0)
        #expect(decision2 == .refused(retryAfterSeconds: 4))  // bytes decide
        let decision3 = a.charge(bodyBytes: 10, now: Self.t0)
        #expect(decision3 == .allowed)
        let decision4 = a.charge(bodyBytes: 10, now: Self.t0)
        #expect(decision4 == .refused(retryAfterSeconds: 1))  // both empty: 1 s each
        #expect(!a.isFull(now: Self.t0 + 2000))
        #expect(a.isFull(now: Self.t0 + 3_600_000))
    }

    @Test("disabled budgets admit everything")
    func unlimited() {
        var a = WriteBudget.unlimited.allowance(now: Self.t0)
        #expect(!WriteBudget.unlimited.isEnabled)
        for _ in 0..<10_000 {
            let result = a.charge(bodyBytes: 1 << 20, now: Self.t0)
            #expect(result == .allowed)
        }
    }
}
