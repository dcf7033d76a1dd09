import Domain
import Hashing
import Logging
import Storage
import Store
import Transport
import Wire

/// `/v1/auth/*` and `/v1/me`: registration, login, logout, profile.
enum AccountRoutes {
    struct RegisterBody: Decodable {
        var email: String
        var password: String
        var displayName: String
        /// The client's IANA zone (the web client sends the browser's), optional.
        var timezone: String?
        enum CodingKeys: String, CodingKey {
            case email, password, timezone
            case displayName = "display_name"
        }
    }

    struct LoginBody: Decodable {
        var email: String
        var password: String
    }

    /// `PATCH /v1/me`: absent fields stay; `null` clears `timezone`, `locale` and `avatar_url`.
    /// `last_seen_at` is the server's (set when a session is used), not a field a client sets.
    struct ProfilePatch: Decodable {
        var displayName: String?
        var timezone: String??
        var locale: String??
        var avatarURL: String??
        var version: Int64?
        enum CodingKeys: String, CodingKey {
            case displayName = "display_name"
            case avatarURL = "avatar_url"
            case timezone, locale, version
        }
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            displayName = try c.decodeIfPresent(String.self, forKey: .displayName)
            timezone = try StrictKeys.nullable(c, .timezone)
            locale = try StrictKeys.nullable(c, .locale)
            avatarURL = try StrictKeys.nullable(c, .avatarURL)
            version = try c.decodeIfPresent(Int64.self, forKey: .version)
        }
    }

    /// The body of a successful register/login.
    struct SessionBody: Encodable {
        var user: User
        /// Absent when the session went into a cookie (SessionCookie).
        var token: String?
        var expiresAt: Timestamp
        enum CodingKeys: String, CodingKey {
            case user, token
            case expiresAt = "expires_at"
        }
    }

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.post, "/v1/auth/register", .async { request in try await register(request, services) })
        router.add(.post, "/v1/auth/login", .async { request in try await login(request, services) })
        // The session's sockets close through the `sessions_revoked` batch, on every instance.
        router.add(.post, "/v1/auth/logout", .async { request in try await logout(request, services) })
        router.add(
            .get, "/v1/me",
            .async { request in
                JSONBody.response(try await services.authenticate(request).user)
            })
        router.add(.patch, "/v1/me", .async { request in try await patchMe(request, services) })
        router.add(.delete, "/v1/me", .async { request in try await deleteMe(request, services) })
    }

    static func register(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let body = try JSONBody.decode(RegisterBody.self, from: request)
        let email = try AccountRules.normalizeEmail(body.email)
        try AccountRules.validatePassword(body.password)
        let displayName = try AccountRules.normalizeDisplayName(body.displayName)
        let timezone = try body.timezone.map { zone throws(DomainError) in try AccountRules.validateTimezone(zone) }
        // Counted before the hash is made (parallel registrations all count); a refusal spends no scrypt.
        let admission: Int64
        switch try await services.registrations.admit(clientAddress: request.context.remoteAddress) {
        case .admitted(let id):
            admission = id
        case .refused(let seconds):
            services.logger.notice(
                "registration rate-limited",
                metadata: ["client_ip": "\(request.context.remoteAddress)", "request_id": "\(request.requestID)"])
            throw DomainError.rateLimited(retryAfterSeconds: seconds)
        }
        let hash = try await services.hashPassword(body.password) { try await services.registrations.refund(admission) }
        let now = services.clock.nowMilliseconds()
        let tier = services.config.defaultTier
        if services.config.mail.isConfigured {
            return try await registerWithoutEnumeration(
                email: email, displayName: displayName, passwordHash: hash, tier: tier, timezone: timezone, now: now,
                request: request, services)
        }
        let session = SessionOpening(for: request, at: now)
        let user = try await services.database.write { db in
            var user = try AccountStore.register(
                email: email, displayName: displayName, passwordHash: hash, tier: tier, timezone: timezone, at: now, on: db)
            try session.store(userID: user.id, on: db)
            user.lastSeenAt = Timestamp(milliseconds: now)  // what the session's creation stored
            // The verification link, queued in the registration's transaction (docs/mail.md).
            _ = try services.queueVerification(userID: user.id, email: email, change: false, at: now, on: db)
            return user
        }
        services.logger.info("account registered", metadata: ["user_id": "\(user.id)", "request_id": "\(request.requestID)"])
        return session.response(user: user, status: .created, secureCookie: SessionCookie.secure(services.config))
    }

    /// What registration answers when mail is configured, for a new and for a taken address alike.
    struct RegistrationAccepted: Encodable {
        var status = "verification_sent"
        var email: String
    }

    /// Registration when mail is configured (docs/mail.md#registration): 202 `{status:
    /// verification_sent, email}` whether or not the address has an account, after the same scrypt
    /// work — a stranger learns nothing. A new address gets its account and a verification link (no
    /// session: the client signs in with the password it chose); a taken one gets a mail telling its
    /// owner (at most one an hour per address), and nothing else changes.
    static func registerWithoutEnumeration(
        email: String, displayName: String, passwordHash: String, tier: Tier, timezone: String?, now: Int64,
        request: Request, _ services: Services
    ) async throws -> HTTPResponse {
        let base = services.config.publicBaseURL
        let created: String? = try await services.database.write { db in
            if let owner = try AccountStore.user(email: email, on: db) {
                try MailOutbox.enqueueAccountExistsNotice(
                    MailTemplates.accountExists(to: email, userID: owner.id, base: base, now: now), at: now, on: db)
                return nil
            }
            let user = try AccountStore.register(
                email: email, displayName: displayName, passwordHash: passwordHash, tier: tier, timezone: timezone, at: now,
                on: db)
            _ = try services.queueVerification(userID: user.id, email: email, change: false, at: now, on: db)
            return user.id
        }
        if let created {
            services.logger.info("account registered", metadata: ["user_id": "\(created)", "request_id": "\(request.requestID)"])
        }
        return JSONBody.response(RegistrationAccepted(email: email), status: .accepted)
    }

    static func login(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let body = try JSONBody.decode(LoginBody.self, from: request)
        let email = try AccountRules.normalizeEmail(body.email)
        let ip = request.context.remoteAddress
        // The login throttle, the failure recorded before scrypt and forgotten on success: `PasswordAttempt`.
        let attempt = try await PasswordAttempt.verify(
            password: body.password, email: email, clientIP: ip, services: services)
        // A suspended account answers exactly like a wrong password, and the attempt stays counted:
        // a guesser learns nothing from the right password of a suspended account.
        guard let attempt, attempt.user.status == .active else {
            services.logger.notice(
                attempt != nil ? "login refused: account suspended" : "login failed",
                metadata: ["client_ip": "\(ip)", "request_id": "\(request.requestID)"])
            throw DomainError.invalidCredentials
        }
        let now = services.clock.nowMilliseconds()
        var user = attempt.user
        user.lastSeenAt = max(user.lastSeenAt ?? Timestamp(milliseconds: now), Timestamp(milliseconds: now))  // as the session stores it
        let userID = user.id

        let session = SessionOpening(for: request, at: now)
        try await services.database.write { db in
            try session.store(userID: userID, on: db)
            try attempt.succeeded(on: db)
        }
        return session.response(user: user, secureCookie: SessionCookie.secure(services.config))
    }

    static func logout(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let principal = try await services.authenticate(request, exemptFromWriteBudget: true)
        // Through the change log (`sessions_revoked`), so every instance closes the session's sockets,
        // and the session's devices go with it.
        var response = try await services.writeNoContent { now, db in
            try SessionStore.revoke(
                sessionID: principal.sessionID, userID: principal.user.id, actor: .user(principal.user.id),
                reason: .loggedOut, at: now, on: db)
        }
        // The web client's cookie goes with its session (harmless for a bearer client: it has none).
        response.headers.add(name: "Set-Cookie", value: SessionCookie.clearCookie(secure: SessionCookie.secure(services.config)))
        return response
    }

    static func patchMe(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        // The session is read with the write (`writeAsUser`). Concurrent: updateProfile locks the user
        // row first and changes only what hangs off it.
        let document = try await services.writeAsUser(request, .concurrent) { _ in
            let patch = try JSONBody.decode(ProfilePatch.self, from: request)
            return (change: try profileChange(patch), version: patch.version)
        } write: { patch, caller, now, db in
            try AccountStore.updateProfile(
                userID: caller.userID, change: patch.change, expectedVersion: patch.version, actor: .user(caller.userID), at: now, on: db
            ).document
        }
        return JSONBody.response(encoded: document)
    }

    /// The profile change `patch` asks for, each field normalised or refused (422).
    private static func profileChange(_ patch: ProfilePatch) throws -> AccountStore.ProfileChange {
        let displayName = try patch.displayName.map { name throws(DomainError) in
            try AccountRules.normalizeDisplayName(name)
        }
        var change = AccountStore.ProfileChange(displayName: displayName)
        if let requested = patch.timezone {
            change.timezone = .some(try requested.map { zone throws(DomainError) in try AccountRules.validateTimezone(zone) })
        }
        if let requested = patch.locale {
            change.locale = .some(try requested.map { tag throws(DomainError) in try AccountRules.validateLocale(tag) })
        }
        if let requested = patch.avatarURL {
            change.avatarURL = .some(try requested.map { url throws(DomainError) in try AccountRules.validateAvatarURL(url) })
        }
        return change
    }

    /// `DELETE /v1/me`'s answer when a store subscription renews on: deleting the account cannot cancel
    /// it, so the app must send the user to the store (docs/subscriptions.md#account-deletion).
    struct DeletedAccount: Encodable, Sendable {
        var storeSubscriptions: [EntitlementStore.RenewingSubscription]
        enum CodingKeys: String, CodingKey { case storeSubscriptions = "store_subscriptions" }
    }

    /// `DELETE /v1/me`: deletes the account in one transaction (`GroupStore.deleteAccount`) → 204, or
    /// 200 `{"store_subscriptions":[…]}` naming the store subscriptions that renew on (the user must
    /// cancel them in the store; the account is deleted either way).
    static func deleteMe(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        let playPackage = services.config.subscriptions.play?.packageName
        let now = services.clock.nowMilliseconds()
        let renewing = try await services.database.write { db in
            let renewing = try EntitlementStore.renewingSubscriptions(userID: userID, playPackage: playPackage, on: db)
            try GroupStore.deleteAccount(userID: userID, at: now, on: db)
            return renewing
        }
        services.logger.info("account deleted", metadata: ["user_id": "\(userID)", "request_id": "\(request.requestID)"])
        guard !renewing.isEmpty else { return HTTPResponse(status: .noContent) }
        return JSONBody.response(DeletedAccount(storeSubscriptions: renewing))
    }
}
