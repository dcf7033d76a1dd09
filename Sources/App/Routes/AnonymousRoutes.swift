import Domain
import Hashing
import Logging
import Storage
import Store
import Transport
import Wire

/// Anonymous start and upgrade in place (docs/apps.md#anonymous-start): `POST /v1/auth/anonymous`
/// opens a session for a new account with no email or password; `POST /v1/me/upgrade` gives it an
/// email and password, keeping its id and everything it holds.
enum AnonymousRoutes {
    /// `POST /v1/auth/anonymous` body: every field optional; an empty body is `{}`.
    struct StartBody: StrictBody {
        var displayName: String?
        var timezone: String?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case timezone
            case displayName = "display_name"
        }
    }

    /// `POST /v1/me/upgrade` body.
    struct UpgradeBody: StrictBody {
        var email: String
        var password: String
        var displayName: String?
        /// `true`: the address has an account and `password` is that account's — merge into it.
        var merge: Bool?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case email, password, merge
            case displayName = "display_name"
        }
    }

    /// The display name an anonymous account starts with when the app sends none.
    static let defaultDisplayName = "Guest"

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.post, "/v1/auth/anonymous", .async { request in try await start(request, services) })
        router.add(.post, "/v1/me/upgrade", .async { request in try await upgrade(request, services) })
    }

    /// 201 `{token, user}` (the user document with `anonymous: true`, `email: null`), like a
    /// registration; counted by the per-address registration limit (429 CA020 past it).
    static func start(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let body = request.http.body.isEmpty ? StartBody() : try JSONBody.decode(StartBody.self, from: request)
        let displayName = try AccountRules.normalizeDisplayName(body.displayName ?? defaultDisplayName)
        let timezone = try body.timezone.map { zone throws(DomainError) in try AccountRules.validateTimezone(zone) }
        switch try await services.registrations.admit(clientAddress: request.context.remoteAddress) {
        case .admitted:
            break
        case .refused(let seconds):
            throw DomainError.rateLimited(retryAfterSeconds: seconds)
        }
        let now = services.clock.nowMilliseconds()
        let tier = services.config.defaultTier
        let session = SessionOpening(for: request, at: now)
        let user = try await services.database.write { db in
            var user = try AccountStore.registerAnonymous(displayName: displayName, tier: tier, timezone: timezone, at: now, on: db)
            try session.store(userID: user.id, on: db)
            user.lastSeenAt = Timestamp(milliseconds: now)
            return user
        }
        services.logger.info("anonymous account started", metadata: ["user_id": "\(user.id)", "request_id": "\(request.requestID)"])
        return session.response(user: user, status: .created, secureCookie: SessionCookie.secure(services.config))
    }

    /// 200 the user document (`anonymous: false`, `migrated_at` set, same `id`); the session stays
    /// valid. 403 CA007 for an account that is not anonymous; 409 CA022 EMAIL_TAKEN when the address
    /// has an account and `merge` is not `true` (nothing changes: docs/apps.md#anonymous-start); with
    /// `merge: true` the merge into that account (`merge(_:email:password:_:_:)`). With
    /// mail configured a verification link goes to the address, as after a registration.
    static func upgrade(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let principal = try await services.authenticate(request)
        guard principal.user.anonymous else { throw DomainError.permissionDenied("the account is not anonymous") }
        let body = try JSONBody.decode(UpgradeBody.self, from: request)
        let email = try AccountRules.normalizeEmail(body.email)
        if body.merge == true, try await services.database.read({ db in try AccountStore.user(email: email, on: db) }) != nil {
            return try await merge(principal.user.id, email: email, password: body.password, request, services)
        }
        try AccountRules.validatePassword(body.password)
        let displayName = try body.displayName.map { name throws(DomainError) in try AccountRules.normalizeDisplayName(name) }
        let hash = try await services.hashPassword(body.password)
        let userID = principal.user.id
        let user = try await services.database.write { [now = services.clock.nowMilliseconds()] db in
            let user: User
            do {
                user = try AccountStore.upgrade(
                    userID: userID, email: email, passwordHash: hash, displayName: displayName, at: now, on: db)
            } catch DomainError.emailTaken {
                throw APIError(
                    .emailTaken, "this email already has an account: send merge: true with that account's password to merge into it",
                    field: "email")
            }
            _ = try services.queueVerification(userID: userID, email: email, change: false, at: now, on: db)
            return user
        }
        services.logger.info("anonymous account upgraded", metadata: ["user_id": "\(userID)", "request_id": "\(request.requestID)"])
        return JSONBody.response(user)
    }

    /// `POST /v1/me/upgrade {email, password, merge: true}` when `email` has an account: `password`
    /// is checked as a login is (the same throttle; wrong, or a suspended account → 401 CA019), then
    /// one transaction merges the anonymous account into that one (`AccountMerge.merge`: alarms,
    /// settings, devices, memberships; the anonymous account deleted) and opens a session of it →
    /// 200 `{user, token, expires_at}` as a login.
    static func merge(
        _ anonymousID: String, email: String, password: String, _ request: Request, _ services: Services
    ) async throws -> HTTPResponse {
        let attempt = try await PasswordAttempt.verify(
            password: password, email: email, clientIP: request.context.remoteAddress, services: services)
        guard let attempt, attempt.user.status == .active else { throw DomainError.invalidCredentials }
        let now = services.clock.nowMilliseconds()
        let session = SessionOpening(for: request, at: now)
        let targetID = attempt.user.id
        let user = try await services.database.write { db -> User in
            _ = try AccountMerge.merge(anonymous: anonymousID, into: targetID, at: now, on: db)
            try session.store(userID: targetID, on: db)
            try attempt.succeeded(on: db)
            guard var user = try AccountStore.user(id: targetID, on: db) else { throw DomainError.notFound("user") }
            user.lastSeenAt = Timestamp(milliseconds: now)
            return user
        }
        services.logger.info(
            "anonymous account merged",
            metadata: ["user_id": "\(targetID)", "anonymous_id": "\(anonymousID)", "request_id": "\(request.requestID)"])
        return session.response(user: user, secureCookie: SessionCookie.secure(services.config))
    }
}
