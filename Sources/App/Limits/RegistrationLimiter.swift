public import Domain
import Synchronization
import Wire

/// How many accounts may be registered per hour: per client network (`ClientNetwork`: an IPv4
/// address, an IPv6 /64; the `X-Forwarded-For` client behind a trusted proxy) and, as a backstop
/// against an attacker with many addresses, in total. Each registration costs a full scrypt hash
/// and a row that stays, so without these one address created ≈ 85,000 accounts an hour.
public struct RegistrationLimits: Sendable, Equatable {
    /// Registrations one client network may make per sliding hour (`--registrations-per-ip-per-hour`).
    /// A household or office behind one NAT signing up together fits; a script does not.
    public var perNetworkPerHour: Int
    /// Registrations the whole server accepts per sliding hour (`--registrations-per-hour`): bounds
    /// the scrypt time and database growth an address-rotating attacker can cause.
    public var totalPerHour: Int

    /// The window both limits count over.
    public static let windowMilliseconds: Int64 = 60 * 60 * 1000

    /// Defaults: 10 per network, 1,000 in total, per hour.
    public init(perNetworkPerHour: Int = 10, totalPerHour: Int = 1_000) {
        self.perNetworkPerHour = perNetworkPerHour
        self.totalPerHour = totalPerHour
    }
}

/// Admits or refuses registrations under `RegistrationLimits` (sliding windows, `AttemptWindow`).
/// An admitted registration is recorded at once, before its password is hashed, so registrations
/// running in parallel all count; a refused one is not recorded (waiting is enough to get in).
/// In memory: a restart forgets the counts, which at worst grants one more window's allowance.
///
/// Memory is bounded: only admitted registrations are stored, and at most `totalPerHour` of them
/// are inside the window, so the per-network table never holds more than that many live entries
/// (expired ones are dropped when the table outgrows that).
public final class RegistrationLimiter: Sendable {
    private let limits: RegistrationLimits
    private let clock: any Clock
    private struct State {
        /// Admission times inside the window, per network.
        var byNetwork: [String: [Int64]] = [:]
        /// Every admission time inside the window.
        var all: [Int64] = []
    }
    private let state = Mutex(State())

    public init(limits: RegistrationLimits, clock: any Clock) {
        self.limits = limits
        self.clock = clock
    }

    /// Admits (and records) a registration from `clientAddress`, or refuses it with the seconds
    /// until the window has room again (the larger wait when both limits refuse).
    public func admit(clientAddress: String) -> AttemptWindow.Decision {
        let network = ClientNetwork.rateLimitKey(clientAddress)
        let now = clock.nowMilliseconds()
        let window = RegistrationLimits.windowMilliseconds
        let perNetwork = AttemptWindow(maxAttempts: limits.perNetworkPerHour, windowMilliseconds: window)
        let total = AttemptWindow(maxAttempts: limits.totalPerHour, windowMilliseconds: window)
        return state.withLock { state in
            let start = perNetwork.windowStart(now: now)
            state.all.removeAll { $0 <= start }
            var mine = state.byNetwork[network, default: []]
            mine.removeAll { $0 <= start }
            var wait = 0
            for decision in [perNetwork.evaluate(failureTimes: mine, now: now), total.evaluate(failureTimes: state.all, now: now)] {
                if case .refused(let seconds) = decision { wait = max(wait, seconds) }
            }
            guard wait == 0 else {
                state.byNetwork[network] = mine.isEmpty ? nil : mine
                return .refused(retryAfterSeconds: wait)
            }
            mine.append(now)
            state.all.append(now)
            state.byNetwork[network] = mine
            if state.byNetwork.count > limits.totalPerHour {
                state.byNetwork = state.byNetwork.compactMapValues { times in
                    let live = times.filter { $0 > start }
                    return live.isEmpty ? nil : live
                }
            }
            return .allowed
        }
    }

    /// Gives back the latest admission of `clientAddress`'s network: its registration was never
    /// attempted (the hashing queue was full), so a client retrying after `503` keeps its budget.
    public func refund(clientAddress: String) {
        let network = ClientNetwork.rateLimitKey(clientAddress)
        state.withLock { state in
            guard let time = state.byNetwork[network]?.popLast() else { return }
            if state.byNetwork[network]?.isEmpty == true { state.byNetwork[network] = nil }
            if let index = state.all.lastIndex(of: time) { state.all.remove(at: index) }
        }
    }
}
