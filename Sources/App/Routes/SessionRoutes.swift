import Domain
import Hashing
import Logging
import Storage
import Store
import Transport
import Wire

/// `/v1/me/sessions` and `/v1/me/password`: a user's signed-in sessions, signing some of
/// them out, and changing the password.
///
/// Revocations go through the change log (`SessionStore.revoke`/`revokeAll`): every server process's
/// realtime feed closes the revoked sessions' sockets with 4003, as logout does. These routes are
/// exempt from the write budget, like logout: a user must be able to sign a thief out even when the
/// thief spent the account's budget, and each only ends sessions (the password change is bounded by
/// the login throttle instead).
enum SessionRoutes {
    /// `POST /v1/me/password`.
    struct PasswordChange: Decodable {
        var currentPassword: String
        var newPassword: String
        enum CodingKeys: String, CodingKey {
            case currentPassword = "current_password"
            case newPassword = "new_password"
        }
    }

    /// One session in `GET /v1/me/sessions`. Every key always present: an unknown user agent or
    /// network is `null`, not absent.
    struct SessionDocument: Encodable {
        var id: String
        var createdAt: Timestamp
        var lastUsedAt: Timestamp
        var expiresAt: Timestamp
        @ExplicitNull var userAgent: String?
        /// `SessionStore.Record.network`: where the session signed in, not exactly where.
        @ExplicitNull var network: String?
        /// The session of the request's own token.
        var current: Bool
        enum CodingKeys: String, CodingKey {
            case id, network, current
            case createdAt = "created_at"
            case lastUsedAt = "last_used_at"
            case expiresAt = "expires_at"
            case userAgent = "user_agent"
        }
    }

    struct SessionList: Encodable {
        var sessions: [SessionDocument]
    }

    /// The answer of `revoke-others` and of a password change: how many sessions ended.
    struct Revoked: Encodable {
        var revoked: Int
    }

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.get, "/v1/me/sessions", .async { request in try await list(request, services) })
        router.add(.delete, "/v1/me/sessions/{id}", .async { request in try await revoke(request, services) })
        router.add(
            .post, "/v1/me/sessions/revoke-others", .async { request in try await revokeOthers(request, services) })
        router.add(.post, "/v1/me/password", .async { request in try await changePassword(request, services) })
    }

    /// `GET /v1/me/sessions`: the caller's live sessions, most recently used first (at most
    /// `SessionStore.maxListedSessions`), the caller's own marked `current`.
    static func list(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let principal = try await services.authenticate(request)
        let now = services.clock.nowMilliseconds()
        let userID = principal.user.id
        let records = try await services.database.read { db in try SessionStore.live(userID: userID, at: now, on: db) }
        return JSONBody.response(
            SessionList(
                sessions: records.map { record in
                    SessionDocument(
                        id: record.id, createdAt: Timestamp(milliseconds: record.createdAt),
                        lastUsedAt: Timestamp(milliseconds: record.lastUsedAt),
                        expiresAt: Timestamp(milliseconds: record.expiresAt), userAgent: record.userAgent,
                        network: record.network, current: record.id == principal.sessionID)
                }))
    }

    /// `DELETE /v1/me/sessions/{id}` → 204; 404 for an id that is not one of the caller's live
    /// sessions (another user's included: nothing tells them apart). The caller's own id signs the
    /// caller out, like logout.
    static func revoke(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let principal = try await services.authenticate(request, exemptFromWriteBudget: true)
        let sessionID = try request.parameter("id")
        let userID = principal.user.id
        let now = services.clock.nowMilliseconds()
        let revoked = try await services.database.write { db in
            try SessionStore.revoke(
                sessionID: sessionID, userID: userID, actor: .user(userID), reason: .signedOut, at: now, on: db)
        }
        guard revoked else { throw APIError(.notFound, "no such session") }
        return HTTPResponse(status: .noContent)
    }

    /// `POST /v1/me/sessions/revoke-others` → 200 `{"revoked": n}`: signs out every session of the
    /// caller but the caller's own ("sign out everywhere else"; to end this one too, log out).
    static func revokeOthers(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let principal = try await services.authenticate(request, exemptFromWriteBudget: true)
        let userID = principal.user.id
        let keeping = principal.tokenHash
        return try await services.writeJSON { now, db in
            Revoked(
                revoked: try SessionStore.revokeAll(
                    userID: userID, keeping: keeping, actor: .user(userID), reason: .signedOutElsewhere, at: now, on: db))
        }
    }

    /// `POST /v1/me/password` → 200 `{"revoked": n}`: checks the current password under the login
    /// throttle (`PasswordAttempt`: a wrong one counts as a failed login of the account, and a
    /// throttled account answers 429 before any scrypt), stores the new hash and revokes every other
    /// session; the caller's stays signed in. A wrong current password → 401 INVALID_CREDENTIALS
    /// (the session itself is fine: AUTH_REQUIRED is the answer for that). An account without a
    /// password (Apple/Google only) → 409 PASSWORD_NOT_SET, before the throttle.
    static func changePassword(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let principal = try await services.authenticate(request, exemptFromWriteBudget: true)
        let body = try JSONBody.decode(PasswordChange.self, from: request)
        try AccountRules.validatePassword(body.newPassword)
        let user = principal.user
        // An account that signs in with Apple/Google only has no password to prove: it sets one through
        // password reset, which proves control of the address (docs/security.md#sign-in-with-applegoogle).
        guard try await services.database.read({ db in try AccountStore.hasPassword(userID: user.id, on: db) }) else {
            throw DomainError.passwordNotSet
        }
        let attempt = try await PasswordAttempt.verify(
            password: body.currentPassword, email: user.email, clientIP: request.context.remoteAddress,
            services: services)
        guard let attempt else {
            services.logger.notice(
                "password change refused: wrong current password",
                metadata: ["user_id": "\(user.id)", "request_id": "\(request.requestID)"])
            throw APIError(.invalidCredentials, "the current password is incorrect")
        }
        let newHash = try await services.hashPassword(body.newPassword) { try await attempt.giveBack(services) }
        let keeping = principal.tokenHash
        let now = services.clock.nowMilliseconds()
        let revoked = try await services.database.write { db -> Int? in
            guard
                try AccountStore.replacePasswordHash(
                    userID: user.id, current: attempt.verifiedHash, new: newHash, on: db)
            else { return nil }
            try attempt.succeeded(on: db)
            return try SessionStore.revokeAll(
                userID: user.id, keeping: keeping, actor: .user(user.id), reason: .passwordChanged, at: now, on: db)
        }
        // Another change replaced the hash after ours was verified: the password given is no longer current.
        guard let revoked else { throw APIError(.invalidCredentials, "the current password is incorrect") }
        services.logger.info(
            "password changed",
            metadata: ["user_id": "\(user.id)", "revoked_sessions": "\(revoked)", "request_id": "\(request.requestID)"])
        return JSONBody.response(Revoked(revoked: revoked))
    }
}
