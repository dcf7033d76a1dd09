import Domain
import Hashing
import Storage
import Store

/// A password checked against an account's under the login throttle (`LoginThrottle.standard`
/// over `LoginFailureStore`'s subjects: the account, the account from this client network, the
/// network), so a guess through `POST /v1/me/password` costs what a guess through login costs and
/// both spend one budget. As in login, the attempt is recorded as a failure in the same write
/// transaction as the throttle check, before scrypt runs (attempts in flight at once all count), and
/// forgotten when it succeeds.
///
/// Used by login (`AccountRoutes.login`), the password change (`SessionRoutes.changePassword`) and the
/// address change (`EmailRoutes.change`).
struct PasswordAttempt: Sendable {
    /// The account the password matched — whatever its status: a caller that signs in refuses a
    /// suspended one exactly like a wrong password.
    let user: User
    /// The stored hash the password matched (a change must still find it in place).
    let verifiedHash: String
    /// The failure rows recorded up front for this attempt.
    private let pending: [Int64]
    /// The (account, network) subject a success clears.
    private let accountFromNetwork: String

    /// Checks `password` against the account of `email` (normalised, as stored). Nil for a wrong
    /// password (the failure stays counted); throws `DomainError.rateLimited` when the throttle
    /// refuses (no scrypt spent) and `WorkerPool.Saturated` when the hashing pool is full (the
    /// attempt given back).
    static func verify(
        password: String, email: String, clientIP: String, services: Services
    ) async throws -> PasswordAttempt? {
        guard password.utf8.count <= AccountRules.maxPasswordBytes else { return nil }
        let now = services.clock.nowMilliseconds()
        let subjects = [
            LoginFailureStore.emailSubject(email), LoginFailureStore.emailNetworkSubject(email, ip: clientIP),
            LoginFailureStore.ipSubject(clientIP),
        ]
        let throttle = LoginThrottle.standard
        let (decision, stored, pending) = try await services.database.write {
            db -> (AttemptWindow.Decision, (user: User, passwordHash: String)?, [Int64]) in
            func times(_ subject: String, _ window: AttemptWindow) throws -> [Int64] {
                try LoginFailureStore.failureTimes(subject: subject, window: window, at: now, on: db)
            }
            let failures = LoginThrottle.Failures(
                network: try times(subjects[2], throttle.perNetwork),
                emailFromNetwork: try times(subjects[1], throttle.perNetwork),
                email: try times(subjects[0], throttle.perAccount))
            let decision = throttle.evaluate(failures, now: now)
            guard decision == .allowed else { return (decision, nil, []) }
            let pending = try LoginFailureStore.record(subjects: subjects, at: now, on: db)
            return (decision, try AccountStore.credentials(email: email, on: db), pending)
        }
        if case .refused(let seconds) = decision { throw DomainError.rateLimited(retryAfterSeconds: seconds) }
        // An unknown email — or an account without a password (Apple/Google only) — costs the same
        // scrypt time as a wrong password (no enumeration by timing).
        let encoded = stored.flatMap { $0.passwordHash.isEmpty ? nil : $0.passwordHash } ?? services.decoyPasswordHash
        let verified: Bool
        do {
            verified = try await services.hashing.run { PasswordHash.verify(password: password, encoded: encoded) }
        } catch let error as WorkerPool.Saturated {
            try await services.database.write { db in try LoginFailureStore.forget(ids: pending, on: db) }
            throw error
        }
        guard verified, let stored, !stored.passwordHash.isEmpty else { return nil }
        return PasswordAttempt(
            user: stored.user, verifiedHash: stored.passwordHash, pending: pending, accountFromNetwork: subjects[1])
    }

    /// The attempt led to nothing after all (e.g. the new hash could not be made): forgets its failure rows.
    func giveBack(_ services: Services) async throws {
        try await services.database.write { [pending] db in try LoginFailureStore.forget(ids: pending, on: db) }
    }

    /// In the transaction that acts on the verified password: forgets this attempt's failure rows and
    /// the account's failures from this network, as a successful login does.
    func succeeded(on db: any SQLConnection) throws {
        try LoginFailureStore.forget(ids: pending, on: db)
        try LoginFailureStore.clear(subject: accountFromNetwork, on: db)
    }
}
