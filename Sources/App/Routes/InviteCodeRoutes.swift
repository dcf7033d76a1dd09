import Domain
import Logging
import Storage
import Store
import Transport
import Wire

/// `/v1/groups/{id}/invite-code` and `POST /v1/join` (docs/design.md#invite-codes).
enum InviteCodeRoutes {
    struct JoinBody: StrictBody {
        var code: String
        enum CodingKeys: String, CodingKey, CaseIterable { case code }
    }

    /// The answer of a create/rotate: the code, shown this once.
    struct CodeBody: Encodable {
        var code: String
        var joinURL: String
        var createdAt: Timestamp
        var expiresAt: Timestamp
        enum CodingKeys: String, CodingKey {
            case code
            case joinURL = "join_url"
            case createdAt = "created_at"
            case expiresAt = "expires_at"
        }
    }

    /// `GET …/invite-code`: the code's facts, and the code itself while it is live (null when disabled,
    /// expired, or made before codes were kept sealed).
    struct CurrentBody: Encodable {
        @ExplicitNull var code: String?
        @ExplicitNull var joinURL: String?
        var createdAt: Timestamp
        var expiresAt: Timestamp
        @ExplicitNull var disabledAt: Timestamp?
        enum CodingKeys: String, CodingKey {
            case code
            case joinURL = "join_url"
            case createdAt = "created_at"
            case expiresAt = "expires_at"
            case disabledAt = "disabled_at"
        }
    }

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.get, "/v1/groups/{id}/invite-code", .async { request in try await current(request, services) })
        router.add(.post, "/v1/groups/{id}/invite-code", .async { request in try await rotate(request, services) })
        router.add(.delete, "/v1/groups/{id}/invite-code", .async { request in try await disable(request, services) })
        router.add(.post, "/v1/join", .async { request in try await join(request, services) })
    }

    /// Owner or admin (any tier: it shows what exists); a group that never had a code → 404.
    static func current(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let (userID, groupID) = try await services.groupCaller(request)
        let now = services.clock.nowMilliseconds()
        let secret = services.secret
        let (code, record) = try await services.database.read { db in
            try InviteCodeStore.current(groupID: groupID, actorID: userID, secret: secret, at: now, on: db)
        }
        return JSONBody.response(
            CurrentBody(
                code: code?.text, joinURL: code.map { Links.url(services, "join", $0.text) }, createdAt: record.createdAt,
                expiresAt: record.expiresAt, disabledAt: record.disabledAt))
    }

    static func rotate(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let user = try await services.authenticate(request).user
        let groupID = try request.parameter("id")
        let now = services.clock.nowMilliseconds()
        let secret = services.secret
        let (code, record) = try await services.database.write { db in
            _ = try GroupStore.managerAccess(groupID: groupID, userID: user.id, on: db)
            guard user.tier == .premium else {
                throw try EntitlementStore.tierError(
                    userID: user.id, needed: .premium, what: "invite codes need the premium tier", at: now, on: db)
            }
            return try InviteCodeStore.rotate(groupID: groupID, actorID: user.id, secret: secret, at: now, on: db)
        }
        return JSONBody.response(
            CodeBody(
                code: code.text, joinURL: Links.url(services, "join", code.text), createdAt: record.createdAt,
                expiresAt: record.expiresAt),
            status: .created)
    }

    static func disable(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        try await services.writeToGroup(request) { userID, groupID, now, db in
            try InviteCodeStore.disable(groupID: groupID, actorID: userID, at: now, on: db)
        }
        return HTTPResponse(status: .noContent)
    }

    /// Any tier may join. Every unusable code gets the same 404 INVITE_CODE_INVALID; a spent per-user
    /// or per-IP failure budget gets 429 with `Retry-After`.
    static func join(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let user = try await services.authenticate(request).user
        let body = try JSONBody.decode(JoinBody.self, from: request)
        let hash = InviteCode(normalizing: body.code)?.hash(secret: services.secret)
        let now = services.clock.nowMilliseconds()
        let ip = request.context.remoteAddress
        let outcome = try await services.database.write { db in
            try InviteCodeStore.join(codeHash: hash, user: user, clientIP: ip, at: now, on: db)
        }
        switch outcome {
        case .joined(let detail), .alreadyMember(let detail):
            return JSONBody.response(detail)
        case .needsNewInvite(let left):
            services.metrics.inviteCodes.refused(lockedCode: false)
            throw DomainError.rejoinNeedsNewInvite(left: left)
        case .invalid(let lockedCode):
            services.metrics.inviteCodes.refused(lockedCode: lockedCode)
            services.logger.notice(
                "invite code refused", metadata: ["user_id": "\(user.id)", "client_ip": "\(ip)", "request_id": "\(request.requestID)"])
            throw DomainError.inviteCodeInvalid
        case .rateLimited(let seconds):
            services.metrics.inviteCodes.budgetSpent()
            throw DomainError.rateLimited(retryAfterSeconds: seconds)
        }
    }
}

/// Links the server hands out, under `public_base_url`.
enum Links {
    /// `{public_base_url}/{kind}/{value}`.
    static func url(_ services: Services, _ kind: String, _ value: String) -> String {
        var base = services.config.publicBaseURL
        while base.hasSuffix("/") { base.removeLast() }
        return "\(base)/\(kind)/\(value)"
    }
}
