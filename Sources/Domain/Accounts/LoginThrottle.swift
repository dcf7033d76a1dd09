/// The brute-force bound on password login, designed so that an attacker cannot use it to lock a
/// chosen person out. Pure: the caller supplies the failure times it recorded.
///
/// Failures are counted under three subjects (see `LoginFailureStore`):
/// - the client network (`ip:`, an IPv4 address or an IPv6 /64): `perNetwork`, whatever the email —
///   one network cannot guess many accounts;
/// - the pair (email, client network): `perNetwork` — one network cannot guess one account;
/// - the email alone, from everywhere: `perAccount`, a larger backstop against guessing spread over
///   many networks. When it is exhausted, only networks that have no failure for this email inside the
///   window are still let through: the account's owner, logging in from their usual network, is never
///   locked out by someone else's guesses, and a distributed attacker needs a fresh network per guess.
///
/// So wrong guesses for a victim from one address refuse that address only (429 + Retry-After); the
/// victim's right password from any other network is accepted.
public struct LoginThrottle: Sendable, Equatable {
    /// Failures per client network (any email) and per (email, client network).
    public var perNetwork: AttemptWindow
    /// Failures per email from all networks together, before only failure-free networks pass.
    public var perAccount: AttemptWindow

    public init(perNetwork: AttemptWindow, perAccount: AttemptWindow) {
        self.perNetwork = perNetwork
        self.perAccount = perAccount
    }

    /// 10 failures per 15 minutes per network and per (email, network); 50 per 15 minutes per email.
    public static let standard = LoginThrottle(
        perNetwork: .login, perAccount: AttemptWindow(maxAttempts: 50, windowMilliseconds: 15 * 60 * 1000))

    /// The failure times recorded under each subject.
    public struct Failures: Sendable, Equatable {
        public var network: [Int64]
        public var emailFromNetwork: [Int64]
        public var email: [Int64]

        public init(network: [Int64], emailFromNetwork: [Int64], email: [Int64]) {
            self.network = network
            self.emailFromNetwork = emailFromNetwork
            self.email = email
        }
    }

    /// Whether this attempt may be evaluated; when refused, the longest applicable wait.
    public func evaluate(_ failures: Failures, now: Int64) -> AttemptWindow.Decision {
        var decisions = [
            perNetwork.evaluate(failureTimes: failures.network, now: now),
            perNetwork.evaluate(failureTimes: failures.emailFromNetwork, now: now),
        ]
        let fromThisNetwork = failures.emailFromNetwork.contains { $0 > perNetwork.windowStart(now: now) && $0 <= now }
        if fromThisNetwork {
            decisions.append(perAccount.evaluate(failureTimes: failures.email, now: now))
        }
        let waits = decisions.compactMap { decision -> Int? in
            if case .refused(let seconds) = decision { return seconds }
            return nil
        }
        return waits.max().map { .refused(retryAfterSeconds: $0) } ?? .allowed
    }
}
