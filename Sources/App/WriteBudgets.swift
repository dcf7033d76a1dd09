public import Domain
import Synchronization

/// The write budgets of this process's users (`WriteBudget`; docs/security-budgets.md): one
/// `WriteAllowance` per user id behind one lock. `Services.authenticate` charges it for every write
/// request of a signed-in user before the handler touches the database.
///
/// In memory on purpose: the budget is a per-process flood guard, not an account quota. A restart
/// forgets it, and N server processes behind a balancer each give a user their own budget (N× the
/// limits in total).
///
/// Bounded: at most `maxTrackedUsers` entries. Reaching the bound sweeps the map down to
/// three quarters of it — first users whose buckets are full again (forgetting them changes nothing),
/// then the least recently charged (each of those gets a fresh budget: the price of a bound, paid only
/// when that many users write within the refill time at once).
public final class WriteBudgets: Sendable {
    /// The limits every user gets.
    public let budget: WriteBudget
    /// The most users tracked at once (≈ 150 bytes each: ≈ 7.5 MiB at the default).
    public let maxTrackedUsers: Int
    private let entries = Mutex<[String: Entry]>([:])

    /// Default `maxTrackedUsers`: far more users than write within an hour on a household server.
    public static let defaultMaxTrackedUsers = 50_000

    private struct Entry {
        var allowance: WriteAllowance
        var lastCharged: Int64
    }

    public init(budget: WriteBudget, maxTrackedUsers: Int = WriteBudgets.defaultMaxTrackedUsers) {
        precondition(maxTrackedUsers >= 4, "maxTrackedUsers too small to sweep")
        self.budget = budget
        self.maxTrackedUsers = maxTrackedUsers
    }

    /// Charges one write of `bodyBytes` by `userID` at `now`; throws `DomainError.rateLimited` (429 +
    /// `Retry-After`) when the user's budget has no room. Disabled budgets never throw.
    public func charge(userID: String, bodyBytes: Int, now: Int64) throws(DomainError) {
        guard budget.isEnabled else { return }
        let decision = entries.withLock { entries -> WriteAllowance.Decision in
            if entries[userID] == nil, entries.count >= maxTrackedUsers { sweep(&entries, now: now) }
            var entry = entries[userID] ?? Entry(allowance: budget.allowance(now: now), lastCharged: now)
            let decision = entry.allowance.charge(bodyBytes: bodyBytes, now: now)
            if decision == .allowed { entry.lastCharged = now }
            entries[userID] = entry
            return decision
        }
        if case .refused(let seconds) = decision { throw .rateLimited(retryAfterSeconds: seconds) }
    }

    /// Users currently tracked (≤ `maxTrackedUsers`).
    public var trackedUsers: Int { entries.withLock { $0.count } }

    /// Shrinks `entries` to at most ¾ of the bound: full allowances first, then least recently charged.
    private func sweep(_ entries: inout [String: Entry], now: Int64) {
        entries = entries.filter { !$0.value.allowance.isFull(now: now) }
        let target = maxTrackedUsers * 3 / 4
        guard entries.count > target else { return }
        let oldest = entries.sorted { $0.value.lastCharged < $1.value.lastCharged }.prefix(entries.count - target)
        for (userID, _) in oldest { entries[userID] = nil }
    }
}
