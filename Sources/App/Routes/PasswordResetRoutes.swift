import Domain
import Hashing
import Logging
import Storage
import Store
import Transport
import Wire

/// Password reset by mail (docs/mail.md#password-reset): asking answers the same for every
/// address; the mailed token (1 h, one use) sets a new password and signs out everywhere.
enum PasswordResetRoutes {
    struct RequestBody: Decodable {
        var email: String
    }

    struct ConfirmBody: Decodable {
        var token: String
        var password: String
    }

    /// The one answer to every reset request that passes the limits.
    struct Accepted: Encodable {
        var status = "accepted"
    }

    /// Reset requests per address per hour, and per client network per hour: counted whether or not
    /// the address has an account (a limit only known addresses hit would tell which ones exist).
    static let perAddress = AttemptWindow(maxAttempts: 3, windowMilliseconds: 3_600_000)
    static let perNetwork = AttemptWindow(maxAttempts: 20, windowMilliseconds: 3_600_000)

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.post, "/v1/auth/password-reset", .async { request in try await ask(request, services) })
        router.add(.post, "/v1/auth/password-reset/confirm", .async { request in try await confirm(request, services) })
    }

    /// `POST /v1/auth/password-reset {email}` → 202 `{"status":"accepted"}` for every well-formed
    /// address; a mail with a link goes to it only when it has an active account (and mail is
    /// configured). Over the limits → 429 for known and unknown addresses alike.
    ///
    /// Equal writes: the answer waits for one transaction that is the same for every
    /// address — the limits, and one `password_reset` request row in the mail outbox
    /// (`MailOutbox.enqueueRequest`, no text yet). Whether the address has an account is looked up
    /// only by the mail dispatcher on its own tick (`MailDispatcher.prepareRequests`: a token and the
    /// mail's text for an active account, the row settled `failed` for any other), never in the
    /// request. Before, a known address answered after a token and a mail were written (1.43 ms vs
    /// 0.74 ms median: one request told known from unknown ~90 % of the time).
    static func ask(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let body = try JSONBody.decode(RequestBody.self, from: request)
        let email = try AccountRules.normalizeEmail(body.email)
        let ip = request.context.remoteAddress
        let now = services.clock.nowMilliseconds()
        let sendable = services.config.mail.isConfigured
        try await services.database.write { db in
            let subjects = [LoginFailureStore.resetSubject(email), "reset:" + LoginFailureStore.ipSubject(ip)]
            let windows = [perAddress, perNetwork]
            for (subject, window) in zip(subjects, windows) {
                let times = try LoginFailureStore.failureTimes(subject: subject, window: window, at: now, on: db)
                if case .refused(let seconds) = window.evaluate(failureTimes: times, now: now) {
                    throw DomainError.rateLimited(retryAfterSeconds: seconds)
                }
            }
            try LoginFailureStore.record(subjects: subjects, at: now, on: db)
            try MailOutbox.enqueueRequest(
                kind: .passwordReset, recipient: email, subject: MailTemplates.passwordResetSubject,
                expiresAt: now + MailTemplates.resetLifetimeMilliseconds, sendable: sendable, at: now, on: db)
        }
        return JSONBody.response(Accepted(), status: .accepted)
    }

    /// Confirms one client network may have hashing at once: 2 — a person resets one password; a
    /// network cannot hold more than this share of the hashing pool (docs/security.md).
    static let confirmsInFlightPerNetwork = 2

    /// `POST /v1/auth/password-reset/confirm {token, password}` → 204: the password is set, every
    /// session is revoked (open sockets close 4003, as on logout). Bad token → 400 CA040; bad password → 422.
    /// Order (scrypt ran before the token was looked up, so 40 anonymous
    /// connections starved every login): the body, the token looked up (a read; unknown, used or
    /// expired → 400 CA040 with no hashing), the network's share of the hashing pool
    /// (`confirmsInFlightPerNetwork`, else 429), then scrypt, then the token consumed in the write.
    static func confirm(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let body = try JSONBody.decode(ConfirmBody.self, from: request)
        guard let tokenHash = TokenHashing.hash(token: body.token) else { throw DomainError.tokenInvalid }
        try AccountRules.validatePassword(body.password)
        let looked = services.clock.nowMilliseconds()
        guard try await services.database.read({ try EmailTokens.isUsable(.passwordReset, tokenHash: tokenHash, at: looked, on: $0) })
        else { throw DomainError.tokenInvalid }
        guard let slot = services.resetConfirms.acquire(clientAddress: request.context.remoteAddress) else {
            throw DomainError.rateLimited(retryAfterSeconds: 1)
        }
        defer { slot.release() }
        let hash = try await services.hashPassword(body.password)
        let now = services.clock.nowMilliseconds()
        let result = try await services.database.write { db in
            try AccountStore.resetPassword(tokenHash: tokenHash, passwordHash: hash, at: now, on: db)
        }
        services.logger.notice(
            "password reset; every session revoked",
            metadata: ["user_id": "\(result.userID)", "sessions": "\(result.revoked)", "request_id": "\(request.requestID)"])
        return HTTPResponse(status: .noContent)
    }
}
