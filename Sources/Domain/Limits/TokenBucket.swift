/// A token bucket: holds up to `capacity` units and refills continuously at `refillUnits` per
/// `refillPeriodMilliseconds`; taking units empties it. Pure value: the caller passes `now` (epoch
/// milliseconds) to every call, the bucket keeps no clock.
///
/// The level is kept in integer "unit-milliseconds" (units × `refillPeriodMilliseconds`), so refills
/// add `elapsed × refillUnits` exactly and nothing drifts. A clock that steps backwards refills
/// nothing and restarts the refill from the earlier time (it never leaves a user waiting for the old
/// time to come back).
public struct TokenBucket: Sendable, Equatable {
    /// The most units the bucket holds; a new bucket starts full.
    public let capacity: Int64
    /// Units added per `refillPeriodMilliseconds` (> 0).
    public let refillUnits: Int64
    /// The refill period (> 0).
    public let refillPeriodMilliseconds: Int64
    /// Available units × `refillPeriodMilliseconds`, at `updatedAt`.
    private var scaledLevel: Int64
    /// When `scaledLevel` was last brought up to date.
    private var updatedAt: Int64

    /// A full bucket at `now`. `capacity`, `refillUnits` and `refillPeriodMilliseconds` must be ≥ 1.
    public init(capacity: Int64, refillUnits: Int64, perMilliseconds refillPeriodMilliseconds: Int64, now: Int64) {
        precondition(capacity >= 1 && refillUnits >= 1 && refillPeriodMilliseconds >= 1, "empty token bucket")
        self.capacity = capacity
        self.refillUnits = refillUnits
        self.refillPeriodMilliseconds = refillPeriodMilliseconds
        let (full, overflow) = capacity.multipliedReportingOverflow(by: refillPeriodMilliseconds)
        precondition(!overflow, "token bucket capacity × period overflows")
        scaledLevel = full
        updatedAt = now
    }

    private var scaledCapacity: Int64 { capacity * refillPeriodMilliseconds }

    /// Units available at `now` (whole units, rounded down).
    public func available(now: Int64) -> Int64 { refilled(now: now).scaledLevel / refillPeriodMilliseconds }

    /// Whether the bucket is full at `now`: it then behaves exactly like a new bucket, so an owner
    /// may forget it.
    public func isFull(now: Int64) -> Bool { refilled(now: now).scaledLevel >= scaledCapacity }

    /// The cost actually charged for `units`: at least 0, at most `capacity` (a request larger than
    /// the whole bucket is admitted once the bucket is full, rather than never).
    public func clampedCost(_ units: Int64) -> Int64 { min(max(units, 0), capacity) }

    /// Milliseconds from `now` until `units` (clamped, see `clampedCost`) are available; 0 if they are.
    public func wait(for units: Int64, now: Int64) -> Int64 {
        let bucket = refilled(now: now)
        let deficit = clampedCost(units) * refillPeriodMilliseconds - bucket.scaledLevel
        guard deficit > 0 else { return 0 }
        return (deficit + refillUnits - 1) / refillUnits
    }

    /// Takes `units` (clamped) at `now` if they are available; otherwise changes nothing but the
    /// refill bookkeeping. Returns whether they were taken.
    public mutating func take(_ units: Int64, now: Int64) -> Bool {
        self = refilled(now: now)
        let cost = clampedCost(units) * refillPeriodMilliseconds
        guard scaledLevel >= cost else { return false }
        scaledLevel -= cost
        return true
    }

    /// The bucket brought up to `now`.
    private func refilled(now: Int64) -> TokenBucket {
        var bucket = self
        guard now > updatedAt else {
            bucket.updatedAt = now  // the clock stepped back (or stood still): refill from here
            return bucket
        }
        let (added, overflow) = (now - updatedAt).multipliedReportingOverflow(by: refillUnits)
        let room = scaledCapacity - scaledLevel
        bucket.scaledLevel = overflow || added >= room ? scaledCapacity : scaledLevel + added
        bucket.updatedAt = now
        return bucket
    }
}
