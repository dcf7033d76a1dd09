import Domain
import Hashing
import Logging
import Storage
import Store
import Transport
import Wire

/// Verified email (docs/mail.md#verified-email, docs/api.md#accounts): using a verification link,
/// asking for another, and changing the address (it changes when the new address's link is used).
enum EmailRoutes {
    struct TokenBody: Decodable {
        var token: String
    }

    struct ChangeBody: Decodable {
        var email: String
        var password: String
    }

    /// What a request for a mail answers: `sent` (queued for SMTP), `unsendable` (this server has no
    /// mail: ask the operator, docs/mail.md#without-mail), `already_verified` (nothing to do).
    struct MailAnswer: Encodable {
        var status: String
        var email: String
    }

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.post, "/v1/auth/verify-email", .async { request in try await verify(request, services) })
        router.add(.post, "/v1/me/email/verification", .async { request in try await resend(request, services) })
        router.add(.put, "/v1/me/email", .async { request in try await change(request, services) })
    }

    /// `POST /v1/auth/verify-email {token}` (no session needed: the link may be opened anywhere) →
    /// 200 the user document, `email_verified: true` (with the new address for a change); a token
    /// that is unknown, used or expired → 400 CA040; a new address another account took meanwhile
    /// → 409 CA022.
    static func verify(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let body = try JSONBody.decode(TokenBody.self, from: request)
        guard let hash = TokenHashing.hash(token: body.token) else { throw DomainError.tokenInvalid }
        let user = try await services.database.write { [now = services.clock.nowMilliseconds()] db in
            try AccountStore.verifyEmail(tokenHash: hash, at: now, on: db)
        }
        services.logger.info("email verified", metadata: ["user_id": "\(user.id)", "request_id": "\(request.requestID)"])
        return JSONBody.response(user)
    }

    /// `POST /v1/me/email/verification` → 202 `{status: sent|unsendable, email}` with a new link to
    /// the account's address, or 200 `{status: already_verified}`; at most one a minute and five a
    /// day (429 CA020 with `Retry-After`).
    static func resend(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let user = try await services.authenticate(request).user
        guard !user.anonymous else { throw DomainError.permissionDenied("an anonymous account has no address: POST /v1/me/upgrade") }
        guard !user.emailVerified else { return JSONBody.response(MailAnswer(status: "already_verified", email: user.email)) }
        let answer = try await services.database.write { [now = services.clock.nowMilliseconds()] db in
            try services.queueVerification(userID: user.id, email: user.email, change: false, at: now, on: db)
        }
        return JSONBody.response(answer, status: .accepted)
    }

    /// `PUT /v1/me/email {email, password}` → 202 `{status, email}`: a link goes to the new address
    /// and the account keeps its address until it is used. The current password is required (a
    /// stolen session alone must not move the account to another mailbox), checked as sign-in checks
    /// it (`PasswordAttempt`: the login throttle's subjects and budget, so a token holder guesses no
    /// faster than an anonymous login would; a throttled account answers 429 before any scrypt).
    /// The account's own address → 422, before the password. With mail configured the answer is the
    /// same whether or not another account has the address (that owner is told by mail instead);
    /// without mail a taken address is 409 CA022.
    static func change(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let principal = try await services.authenticate(request)
        guard !principal.user.anonymous else {
            throw DomainError.permissionDenied("an anonymous account has no address to change: POST /v1/me/upgrade")
        }
        let body = try JSONBody.decode(ChangeBody.self, from: request)
        let email = try AccountRules.normalizeEmail(body.email)
        if email == principal.user.email {
            throw DomainError.invalidField(field: "email", message: "that is already the account's address")
        }
        let userID = principal.user.id
        let attempt = try await PasswordAttempt.verify(
            password: body.password, email: principal.user.email, clientIP: request.context.remoteAddress, services: services)
        guard let attempt, attempt.user.id == userID else {
            services.logger.notice(
                "email change refused: wrong password", metadata: ["user_id": "\(userID)", "request_id": "\(request.requestID)"])
            throw DomainError.invalidCredentials
        }
        let mailOn = services.config.mail.isConfigured
        let base = services.config.publicBaseURL
        let answer: MailAnswer
        do {
            answer = try await services.database.write { [now = services.clock.nowMilliseconds()] db in
                try attempt.succeeded(on: db)
                if let owner = try AccountStore.user(email: email, on: db) {
                    guard mailOn else { throw DomainError.emailTaken }
                    try MailOutbox.enqueueAccountExistsNotice(
                        MailTemplates.accountExists(to: email, userID: owner.id, base: base, now: now), at: now, on: db)
                    return MailAnswer(status: "sent", email: email)
                }
                return try services.queueVerification(userID: userID, email: email, change: true, at: now, on: db)
            }
        } catch {
            // Refused after the right password (a taken address, the mail limit): not a failed guess.
            try? await attempt.giveBack(services)
            throw error
        }
        return JSONBody.response(answer, status: .accepted)
    }
}

extension Services {
    /// Issues a verification token for `email` (the account's own address, or the new one of a
    /// change) and queues its mail, in the caller's transaction; refused (429) past `MailLimits`.
    func queueVerification(
        userID: String, email: String, change: Bool, at now: Int64, on db: any SQLConnection
    ) throws -> EmailRoutes.MailAnswer {
        let issued = try EmailTokens.issueTimes(
            .verifyEmail, userID: userID, since: MailLimits.verificationDaily.windowStart(now: now), on: db)
        if let seconds = MailLimits.verificationRefusal(issueTimes: issued, now: now) {
            throw DomainError.rateLimited(retryAfterSeconds: seconds)
        }
        let (token, hash) = TokenHashing.generate()
        let base = config.publicBaseURL
        let mail =
            change
            ? MailTemplates.changeEmail(to: email, userID: userID, base: base, token: token, now: now)
            : MailTemplates.verifyEmail(to: email, userID: userID, base: base, token: token, now: now)
        try EmailTokens.issue(.verifyEmail, tokenHash: hash, userID: userID, email: email, at: now, expiresAt: mail.expiresAt, on: db)
        try MailOutbox.enqueue(mail, sendable: config.mail.isConfigured, at: now, on: db)
        return EmailRoutes.MailAnswer(status: config.mail.isConfigured ? "sent" : "unsendable", email: email)
    }
}
