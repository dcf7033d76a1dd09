import Domain
import Hashing
import Logging
import Storage
import Store
import Transport
import Wire

/// What the landing pages `/join/<CODE>` and `/invite/<token>` show before anyone joins: the group's
/// name, colour, icon and member count, and who invited (docs/api.md#landing-previews).
enum LandingPreviewRoutes {
    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.get, "/v1/join/{code}", .async { request in try await codePreview(request, services) })
        router.add(.get, "/v1/invitations/{ref}", .async { request in try await invitationPreview(request, services) })
    }

    /// `GET /v1/join/{code}`: no sign-in needed (the landing page is opened signed out), but a preview
    /// is a join attempt to the limiter (docs/security.md#invite-code-previews): with credentials they
    /// must be valid and the caller's budget counts too; the IP's always does. Every unusable code
    /// gets the join's 404 INVITE_CODE_INVALID; a spent budget 429 with `Retry-After`.
    static func codePreview(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let hasCredentials =
            try request.bearerToken != nil || SessionCookie.token(in: request, secure: SessionCookie.secure(services.config)) != nil
        let userID = hasCredentials ? try await services.authenticate(request).user.id : nil
        let hash = InviteCode(normalizing: try request.parameter("code"))?.hash(secret: services.secret)
        let now = services.clock.nowMilliseconds()
        let ip = request.context.remoteAddress
        let outcome = try await services.database.write { db in
            try InviteCodeStore.preview(codeHash: hash, userID: userID, clientIP: ip, at: now, on: db)
        }
        switch outcome {
        case .preview(let preview):
            return JSONBody.response(preview)
        case .invalid(let lockedCode):
            services.metrics.inviteCodes.refused(lockedCode: lockedCode)
            services.logger.notice(
                "invite code preview refused",
                metadata: ["user_id": "\(userID ?? "-")", "client_ip": "\(ip)", "request_id": "\(request.requestID)"])
            throw DomainError.inviteCodeInvalid
        case .rateLimited(let seconds):
            services.metrics.inviteCodes.budgetSpent()
            throw DomainError.rateLimited(retryAfterSeconds: seconds)
        }
    }

    /// `GET /v1/invitations/{token}`: a link invitation's preview, open to whoever holds the link
    /// (docs/security.md#invitation-previews). An invitation id, or anything not a token, is 404.
    static func invitationPreview(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let ref = try request.parameter("ref")
        guard ref.utf8.count != 36, let hash = TokenHashing.hash(token: ref) else { throw DomainError.notFound("invitation") }
        let now = services.clock.nowMilliseconds()
        let preview = try await services.database.read { db in try InvitationStore.preview(tokenHash: hash, at: now, on: db) }
        return JSONBody.response(preview)
    }
}
