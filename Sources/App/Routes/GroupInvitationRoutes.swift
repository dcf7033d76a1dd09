import Domain
import Hashing
import Storage
import Store
import Wire

/// Invitations by email or link: `/v1/groups/{id}/invitations` and `/v1/invitations…` (docs/design.md#invitations).
enum GroupInvitationRoutes {
    struct CreateBody: StrictBody {
        var inviteeEmail: String?
        var role: GroupRole
        enum CodingKeys: String, CodingKey, CaseIterable {
            case role
            case inviteeEmail = "invitee_email"
        }
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            inviteeEmail = try c.decodeIfPresent(String.self, forKey: .inviteeEmail)
            role = try c.decodeIfPresent(GroupRole.self, forKey: .role) ?? .member
        }
    }

    /// A created invitation; a link invitation's token and URL appear only in this answer.
    struct Created: Encodable {
        var invitation: Invitation
        @ExplicitNull var token: String?
        @ExplicitNull var inviteURL: String?
        enum CodingKeys: String, CodingKey {
            case invitation, token
            case inviteURL = "invite_url"
        }
    }

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.post, "/v1/groups/{id}/invitations", .async { request in try await create(request, services) })
        router.add(.get, "/v1/groups/{id}/invitations", .async { request in try await listGroup(request, services) })
        router.add(.get, "/v1/invitations", .async { request in try await listMine(request, services) })
        router.add(.post, "/v1/invitations/{ref}/accept", .async { request in try await accept(request, services) })
        router.add(.post, "/v1/invitations/{ref}/decline", .async { request in try await decline(request, services) })
        router.add(.delete, "/v1/invitations/{ref}", .async { request in try await revoke(request, services) })
    }

    static func create(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let user = try await services.authenticate(request).user
        guard !user.anonymous else {
            throw DomainError.permissionDenied("an anonymous account cannot invite: upgrade it first (POST /v1/me/upgrade)")
        }
        let groupID = try request.parameter("id")
        let body = try JSONBody.decode(CreateBody.self, from: request)
        var email: String?
        if let raw = body.inviteeEmail {
            do { email = try AccountRules.normalizeEmail(raw) } catch {
                throw DomainError.invalidField(field: "invitee_email", message: "invitee_email is not a valid address")
            }
        }
        guard body.role != .owner else {
            throw DomainError.invalidField(field: "role", message: "role must be member or admin")
        }
        let link = email == nil ? TokenHashing.generate() : nil
        // An email invitation's mail links to /invite/{token}: its own token, never shown to the inviter.
        let mailLink = email == nil ? nil : TokenHashing.generate()
        let now = services.clock.nowMilliseconds()
        let (inviteeEmail, role, tokenHash) = (email, body.role, link?.hash)
        let invitation = try await services.database.write { db in
            _ = try GroupStore.managerAccess(groupID: groupID, userID: user.id, on: db)
            guard user.tier == .premium else {
                throw try EntitlementStore.tierError(
                    userID: user.id, needed: .premium, what: "invitations need the premium tier", at: now, on: db)
            }
            if let inviteeEmail {
                // A per-recipient cap over every inviter, from the outbox itself (docs/mail.md#what-is-mailed).
                let window = MailLimits.invitationsPerRecipient
                let times = try MailOutbox.createdTimes(
                    kind: .groupInvitation, recipient: inviteeEmail, since: window.windowStart(now: now), on: db)
                if case .refused(let seconds) = window.evaluate(failureTimes: times, now: now) {
                    throw DomainError.rateLimited(retryAfterSeconds: seconds)
                }
            }
            let invitation = try InvitationStore.create(
                groupID: groupID, actor: user, inviteeEmail: inviteeEmail, role: role, tokenHash: tokenHash,
                mailTokenHash: mailLink?.hash, at: now, on: db)
            if let inviteeEmail, let mailLink {
                // The invitation mail, in the invitation's transaction (docs/mail.md#what-is-mailed).
                let mail = MailTemplates.groupInvitation(
                    to: inviteeEmail, base: services.config.publicBaseURL, token: mailLink.token,
                    expiresAt: invitation.expiresAt.milliseconds)
                try MailOutbox.enqueue(mail, sendable: services.config.mail.isConfigured, at: now, on: db)
            }
            return invitation
        }
        return JSONBody.response(
            Created(invitation: invitation, token: link?.token, inviteURL: link.map { Links.url(services, "invite", $0.token) }),
            status: .created)
    }

    static func listGroup(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let (userID, groupID) = try await services.groupCaller(request)
        let query = try ListQuery(request)
        let now = services.clock.nowMilliseconds()
        let page = try await services.database.read { db in
            try InvitationStore.list(
                groupID: groupID, actorID: userID, after: query.after, limit: query.limit, at: now, on: db)
        }
        return JSONBody.response(ListPage("invitations", page))
    }

    static func listMine(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let email = try await services.authenticate(request).user.email
        let query = try ListQuery(request)
        let now = services.clock.nowMilliseconds()
        let page = try await services.database.read { db in
            try InvitationStore.pending(forEmail: email, after: query.after, limit: query.limit, at: now, on: db)
        }
        return JSONBody.response(ListPage("invitations", page))
    }

    static func accept(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        try await answer(request, services) { reference, user, now, db in
            try InvitationStore.accept(reference, user: user, at: now, on: db)
        }
    }

    static func decline(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        try await answer(request, services) { reference, user, now, db in
            try InvitationStore.decline(reference, user: user, at: now, on: db)
        }
    }

    /// `accept` and `decline`: the signed-in user answers the invitation the path names with `write`
    /// (one write transaction); the response body is what `write` returns.
    private static func answer<Answer: Encodable & Sendable>(
        _ request: Request, _ services: Services,
        _ write: @escaping @Sendable (InvitationStore.Reference, User, _ now: Int64, any SQLConnection) throws -> Answer
    ) async throws -> HTTPResponse {
        let user = try await services.authenticate(request).user
        let reference = try reference(request)
        return try await services.writeJSON { now, db in try write(reference, user, now, db) }
    }

    static func revoke(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        let id = try request.parameter("ref")
        return try await services.writeNoContent { now, db in
            try InvitationStore.revoke(id: id, actorID: userID, at: now, on: db)
        }
    }

    /// `{ref}` is an invitation id (lowercase UUID) or a link token (43 base64url characters).
    static func reference(_ request: Request) throws -> InvitationStore.Reference {
        let ref = try request.parameter("ref")
        if ref.utf8.count == 36 { return .id(ref) }
        guard let hash = TokenHashing.hash(token: ref) else { throw DomainError.notFound("invitation") }
        return .tokenHash(hash)
    }
}
