/// Per-user write budgets (docs/security-budgets.md): how many writes, and how
/// many request-body bytes, one signed-in user may send. A flood guard, not a quota: the defaults sit
/// far above what a household or team client sends, and bound what one account can add to the
/// database per hour (a member PATCHing a 2,000-character note in a loop grew it by ≈ 6 GB an hour).
///
/// Two token buckets per user, both must have room for a write to proceed:
/// - writes: `writesPerMinute` refill, `burst` capacity — the request count;
/// - bytes: `bytesPerHour` refill and capacity — each write costs its body size, at least
///   `minimumChargedBytes` (a tiny PATCH can still re-write a large document into the change log).
/// A zero rate disables that bucket.
public struct WriteBudget: Sendable, Equatable {
    /// Writes a user may make per minute, sustained; 0: no count budget.
    public var writesPerMinute: Int
    /// Writes a user may make at once after being idle (the count bucket's capacity, ≥ 1).
    public var burst: Int
    /// Request-body bytes a user may send in writes per hour (also the byte bucket's capacity);
    /// 0: no byte budget.
    public var bytesPerHour: Int64

    /// The least a write costs in the byte budget, whatever its body: a small PATCH (or a DELETE)
    /// still writes a whole document — up to a few KiB — into the table and the change log. 1 KiB
    /// keeps the byte budget a bound on the write count too (5 MiB / hour ⇒ ≤ 5,120 writes an hour
    /// sustained), while every ordinary body (a few hundred bytes) counts the same.
    public static let minimumChargedBytes: Int64 = 1024

    /// The defaults (README "Limits", docs/security-budgets.md): 120 writes a minute with a burst of
    /// 60, and 5 MiB of bodies an hour. A person editing alarms by hand makes a few writes a minute;
    /// a burst of 60 covers a scripted set-up of a group (the group, its alarms, its invitations) and
    /// 2 a second sustained a busy shared screen. 5 MiB/hour is thousands of ordinary writes (an
    /// alarm body is a few hundred bytes, 2.2 KiB with a full 2,000-character note).
    public static let standard = WriteBudget(writesPerMinute: 120, burst: 60, bytesPerHour: 5 * 1024 * 1024)

    /// No budget at all (benchmarks and soak scripts that write as one user on purpose).
    public static let unlimited = WriteBudget(writesPerMinute: 0, burst: 0, bytesPerHour: 0)

    /// `burst` is ignored (and may be 0) when `writesPerMinute` is 0.
    public init(writesPerMinute: Int, burst: Int, bytesPerHour: Int64) {
        precondition(writesPerMinute >= 0 && bytesPerHour >= 0, "negative write budget")
        precondition(writesPerMinute == 0 || burst >= 1, "a write budget needs a burst of at least 1")
        self.writesPerMinute = writesPerMinute
        self.burst = burst
        self.bytesPerHour = bytesPerHour
    }

    /// Whether any bucket is enabled.
    public var isEnabled: Bool { writesPerMinute > 0 || bytesPerHour > 0 }

    /// A fresh (full) allowance for one user at `now`.
    public func allowance(now: Int64) -> WriteAllowance {
        WriteAllowance(
            writes: writesPerMinute > 0
                ? TokenBucket(capacity: Int64(burst), refillUnits: Int64(writesPerMinute), perMilliseconds: 60_000, now: now)
                : nil,
            bytes: bytesPerHour > 0
                ? TokenBucket(capacity: bytesPerHour, refillUnits: bytesPerHour, perMilliseconds: 3_600_000, now: now)
                : nil)
    }
}

/// One user's remaining write budget: the state `WriteBudget` describes. Pure: `now` is passed in.
public struct WriteAllowance: Sendable, Equatable {
    /// The count bucket (nil: disabled).
    public private(set) var writes: TokenBucket?
    /// The byte bucket (nil: disabled).
    public private(set) var bytes: TokenBucket?

    init(writes: TokenBucket?, bytes: TokenBucket?) {
        self.writes = writes
        self.bytes = bytes
    }

    /// Charges one write whose request body is `bodyBytes` long, at `now`. Either both buckets pay or
    /// neither does: a refused write costs nothing, so a client that honours `Retry-After` gets in.
    /// Refused: `retryAfterSeconds` is when both buckets will have room (≥ 1).
    public mutating func charge(bodyBytes: Int, now: Int64) -> Decision {
        let byteCost = max(Int64(bodyBytes), WriteBudget.minimumChargedBytes)
        let waitMs = max(writes?.wait(for: 1, now: now) ?? 0, bytes?.wait(for: byteCost, now: now) ?? 0)
        guard waitMs == 0 else { return .refused(retryAfterSeconds: Int(max(1, (waitMs + 999) / 1000))) }
        let tookWrite = writes?.take(1, now: now) ?? true
        let tookBytes = bytes?.take(byteCost, now: now) ?? true
        assert(tookWrite && tookBytes, "a bucket with room refused its charge")
        return .allowed
    }

    /// Whether every bucket is full at `now`: the allowance is then the same as a fresh one.
    public func isFull(now: Int64) -> Bool {
        (writes?.isFull(now: now) ?? true) && (bytes?.isFull(now: now) ?? true)
    }

    /// The outcome of `charge`.
    public enum Decision: Sendable, Equatable {
        case allowed
        case refused(retryAfterSeconds: Int)
    }
}
