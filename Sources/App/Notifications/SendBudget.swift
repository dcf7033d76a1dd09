/// Who pays for a send (one client's cost stays with that client). Sans-I/O: the
/// dispatcher holds one in a mutex, asks `admit` before it starts a send and calls `release` when the
/// send is settled; it never reads a clock (`now` comes in). A round `reserve`s the slots it may
/// claim before it claims and ends the reservation when it admits what it claimed, so rounds that
/// claim at once never claim more together than `maxInFlight` leaves room for.
///
/// A send is charged to its destination origin (the `https://host:port` a user chose for a Web Push
/// endpoint; an operator-fixed provider — APNs, FCM, the webhook — is one origin the per-origin cap
/// does not apply to) and to its account (the recipient whose device it is). A send over any cap is
/// not started: the dispatcher postpones it (`NotificationDispatcher.Limits.overBudgetDeferMilliseconds`)
/// without counting an attempt. A device whose user-chosen endpoint times out
/// `timeoutsBeforeDrop` times in a row, over at least `timeoutStreakMilliseconds`, is dropped like one
/// the push service called gone.
struct SendBudget: Sendable {
    /// What a send is charged to.
    struct Charge: Hashable, Sendable {
        /// The user-chosen origin; nil for an operator-fixed provider.
        var origin: String?
        /// The recipient's account; nil for the webhook.
        var account: String?
    }

    /// What `admit` decided.
    enum Admission: Equatable, Sendable {
        /// Start it (its slots are taken until `release`).
        case admitted
        /// Over a cap: postpone it (which cap, for the log).
        case overBudget(String)
    }

    private let limits: NotificationDispatcher.Limits
    /// Sends started and not yet released.
    private(set) var inFlight = 0
    /// Slots rounds reserved for the claims they are making (`reserve`).
    private(set) var reserved = 0
    private var perOrigin: [String: Int] = [:]
    private var perAccount: [String: Int] = [:]
    /// Per device (`user/device`): consecutive timeouts and when the first of them was settled.
    private var streaks: [String: (count: Int, since: Int64)] = [:]

    init(limits: NotificationDispatcher.Limits) { self.limits = limits }

    /// Slots free under `maxInFlight`: neither in flight nor reserved.
    var free: Int { max(0, limits.maxInFlight - inFlight - reserved) }

    /// Reserves up to `wanted` free slots for a claim that is about to run and returns how many (the
    /// most the claim may take). The round ends the reservation (`endReservation`) when it admits
    /// what it claimed, or when the claim failed.
    mutating func reserve(upTo wanted: Int) -> Int {
        let granted = min(max(0, wanted), free)
        reserved += granted
        return granted
    }

    /// Gives back `count` reserved slots (`reserve`).
    mutating func endReservation(_ count: Int) {
        reserved = max(0, reserved - count)
    }

    /// Takes a slot of every budget `charge` is under, or none when one is full (other rounds'
    /// reservations count as taken).
    mutating func admit(_ charge: Charge) -> Admission {
        if inFlight + reserved >= limits.maxInFlight { return .overBudget("in flight") }
        if let origin = charge.origin, perOrigin[origin, default: 0] >= limits.maxInFlightPerOrigin {
            return .overBudget("origin")
        }
        if let account = charge.account, perAccount[account, default: 0] >= limits.maxInFlightPerAccount {
            return .overBudget("account")
        }
        inFlight += 1
        if let origin = charge.origin { perOrigin[origin, default: 0] += 1 }
        if let account = charge.account { perAccount[account, default: 0] += 1 }
        return .admitted
    }

    /// Gives back the slots `admit` took for `charge`.
    mutating func release(_ charge: Charge) {
        inFlight = max(0, inFlight - 1)
        if let origin = charge.origin { perOrigin[origin] = perOrigin[origin].flatMap { $0 > 1 ? $0 - 1 : nil } }
        if let account = charge.account { perAccount[account] = perAccount[account].flatMap { $0 > 1 ? $0 - 1 : nil } }
    }

    /// Records whether a send to `device`'s user-chosen endpoint timed out, settled at `now`; true
    /// when its streak reached `timeoutsBeforeDrop` over at least `timeoutStreakMilliseconds` (the
    /// streak is then forgotten: the device is dropped). Any other outcome ends the streak. At most
    /// `maxTrackedStreaks` devices are tracked; past that the table is cleared (streaks restart, so a
    /// device is only ever dropped later, never sooner).
    mutating func recordTimeout(device: String, timedOut: Bool, now: Int64) -> Bool {
        guard timedOut else {
            streaks[device] = nil
            return false
        }
        var streak = streaks[device] ?? (0, now)
        streak.count += 1
        if streak.count >= limits.timeoutsBeforeDrop && now - streak.since >= limits.timeoutStreakMilliseconds {
            streaks[device] = nil
            return true
        }
        if streaks[device] == nil && streaks.count >= limits.maxTrackedStreaks { streaks.removeAll() }
        streaks[device] = streak
        return false
    }
}
