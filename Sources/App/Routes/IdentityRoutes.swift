import Domain
import IPAddresses
import Identity
import Logging
import Storage
import Store
import Transport
import Wire

/// Sign in with Apple and Google (docs/sign-in.md): `POST /v1/auth/oidc` signs in (or up)
/// with a provider's ID token; `GET /v1/me/identities` and `DELETE /v1/me/identities/{provider}`
/// show and unlink the account's identities.
enum IdentityRoutes {
    /// The request's bounds, checked before anything is verified.
    enum Limits {
        /// Longest raw nonce accepted: clients make 16–64 random bytes, hex or base64url (Apple's and
        /// Google's samples use 32); the nonce is hashed before it is stored, so this only bounds work.
        static let maxNonceBytes = 256
        /// Longest ID token accepted (`IDTokenVerifier.Limits.maxTokenBytes`, 16 KiB).
        static let maxTokenBytes = IDTokenVerifier.Limits().maxTokenBytes
    }

    /// `POST /v1/auth/oidc`.
    struct SignInBody: Decodable {
        var provider: String
        var idToken: String
        /// The raw nonce the client generated (Apple's token carries its SHA-256 hex; Google's the nonce itself).
        var nonce: String
        /// With an anonymous session: `true` merges it into the account the identity already has.
        var merge: Bool?
        enum CodingKeys: String, CodingKey {
            case provider, nonce, merge
            case idToken = "id_token"
        }
    }

    /// One identity in `GET /v1/me/identities`. Every key present: an identity linked without an
    /// email shows `"email": null`.
    struct IdentityDocument: Encodable {
        var provider: String
        @ExplicitNull var email: String?
        var createdAt: Timestamp
        enum CodingKeys: String, CodingKey {
            case provider, email
            case createdAt = "created_at"
        }
    }

    /// `GET /v1/me/identities`: the identities and whether the account has a password — the client
    /// can tell which removal would be the last way to sign in.
    struct IdentityList: Encodable {
        var identities: [IdentityDocument]
        var hasPassword: Bool
        enum CodingKeys: String, CodingKey {
            case identities
            case hasPassword = "has_password"
        }
    }

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.post, "/v1/auth/oidc", .async { request in try await signIn(request, services) })
        router.add(.get, "/v1/me/identities", .async { request in try await list(request, services) })
        router.add(.delete, "/v1/me/identities/{provider}", .async { request in try await unlink(request, services) })
    }

    /// What a new identity's account is made of, read from the token before the transaction.
    struct NewAccount: Sendable {
        var email: String
        var emailVerified: Bool
        var displayName: String
    }

    /// `POST /v1/auth/oidc {provider, id_token, nonce}` → 200 `{user, token, expires_at}` for an
    /// identity already linked or linked now by verified email, 201 when an account was created.
    /// The token is verified first (404 CA055 for a provider that is off, 401 CA056 for any
    /// refusal, 503 when the provider's keys cannot be had); then one write transaction records the
    /// nonce (a replay → 401 CA056), finds or links or creates the account (docs/sign-in.md#linking)
    /// and opens the session.
    static func signIn(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let body = try JSONBody.decode(SignInBody.self, from: request)
        guard let provider = SignInProvider(rawValue: body.provider) else {
            throw APIError(.validationFailed, "provider must be apple or google", field: "provider")
        }
        guard (1...Limits.maxTokenBytes).contains(body.idToken.utf8.count) else {
            throw APIError(.validationFailed, "id_token must be 1–\(Limits.maxTokenBytes) bytes", field: "id_token")
        }
        guard (1...Limits.maxNonceBytes).contains(body.nonce.utf8.count) else {
            throw APIError(.validationFailed, "nonce must be 1–\(Limits.maxNonceBytes) bytes", field: "nonce")
        }
        guard let oidc = services.oidc else { throw disabled(provider) }
        let identity: VerifiedIdentity
        switch await oidc.verify(body.idToken, provider: provider, nonce: body.nonce) {
        case .success(let verified):
            identity = verified
        case .failure(.disabled):
            throw disabled(provider)
        case .failure(.keysUnavailable):
            throw APIError(
                .serviceUnavailable, "\(provider.rawValue)'s signing keys cannot be fetched right now; try again later",
                retryAfterSeconds: Int(KeySetCache.Limits.minFetchIntervalMilliseconds / 1000))
        case .failure(.invalid(let reason)):
            services.logger.notice(
                "oidc sign-in refused",
                metadata: [
                    "provider": "\(provider.rawValue)", "reason": "\(reason)", "client_ip": "\(request.context.remoteAddress)",
                    "request_id": "\(request.requestID)",
                ])
            throw APIError(.idTokenInvalid, "the ID token was refused (signature, issuer, audience, expiry or nonce)")
        }

        // With an anonymous account's session this is its upgrade (docs/apps.md#anonymous-start); any
        // other credentials, or none that resolve, leave it a plain sign-in.
        let anonymousID: String?
        if request.bearerToken != nil, let principal = try? await services.authenticate(request), principal.user.anonymous {
            anonymousID = principal.user.id
        } else {
            anonymousID = nil
        }
        let now = services.clock.nowMilliseconds()
        let nonceHash = IdentityStore.nonceHash(provider: provider, nonce: body.nonce)
        let nonceExpiry = (identity.expiresAt + IDTokenVerifier.defaultClockSkewSeconds) * 1000
        let newAccount = Result { () throws(DomainError) in try account(from: identity) }
        let session = SessionOpening(for: request, at: now)
        let ip = session.clientIP
        let limits = services.config.registrationLimits
        let tier = services.config.defaultTier
        let subject = identity.subject
        let (user, created) = try await services.database.write { db -> (User, Bool) in
            guard try IdentityStore.useNonce(nonceHash, expiresAt: nonceExpiry, at: now, on: db) else {
                throw APIError(.idTokenInvalid, "this ID token's nonce was already used")
            }
            let user: User
            var created = false
            if let anonymousID {
                user = try upgrade(
                    anonymousID, with: identity, provider: provider, newAccount: newAccount, merge: body.merge == true, services,
                    at: now, on: db)
            } else if let linked = try IdentityStore.userID(provider: provider, subject: subject, on: db) {
                guard let found = try AccountStore.user(id: linked, on: db) else { throw StoreError.corruptRow(table: "identities") }
                user = found
            } else {
                let fields = try newAccount.get()
                if let existing = try AccountStore.user(email: fields.email, on: db) {
                    // docs/sign-in.md#linking: only a verified address on both sides proves one owner.
                    guard existing.emailVerified, fields.emailVerified else {
                        throw DomainError.identityLinkRefused(
                            reason: existing.emailVerified
                                ? "an account with this email exists, and \(provider.rawValue) does not vouch for the address"
                                : "an account with this email exists but has not verified it: "
                                    + "sign in with its password and verify the address first"
                        )
                    }
                    user = existing
                } else {
                    let network = ClientNetwork.rateLimitKey(ip)
                    let admission = try RegistrationAdmissions.admit(
                        network: network, perNetwork: limits.perNetworkPerHour, total: limits.totalPerHour,
                        windowMilliseconds: RegistrationLimits.windowMilliseconds, at: now, on: db)
                    if case .refused(let seconds) = admission { throw DomainError.rateLimited(retryAfterSeconds: seconds) }
                    user = try AccountStore.register(
                        email: fields.email, displayName: fields.displayName, passwordHash: "", tier: tier, at: now, on: db,
                        emailVerifiedAt: fields.emailVerified ? now : nil)
                    if !fields.emailVerified {
                        _ = try services.queueVerification(userID: user.id, email: user.email, change: false, at: now, on: db)
                    }
                    created = true
                }
                try IdentityStore.link(provider: provider, subject: subject, userID: user.id, email: identity.email, at: now, on: db)
            }
            guard user.status == .active else { throw DomainError.accountSuspended }
            try session.store(userID: user.id, on: db)
            return (user, created)
        }
        services.logger.info(
            created ? "account registered" : "signed in",
            metadata: ["user_id": "\(user.id)", "provider": "\(provider.rawValue)", "request_id": "\(request.requestID)"])
        return session.response(user: user, status: created ? .created : .ok, secureCookie: SessionCookie.secure(services.config))
    }

    /// Upgrades anonymous account `userID` in place with a verified identity: the same id keeps its
    /// memberships, alarms, completions, devices and settings; the token's email (verified when the
    /// provider says so, else a verification link is queued), no password, `migrated_at` now, the
    /// identity linked. When the identity is linked to an account, or its email has one: without
    /// `merge`, 409 ACCOUNT_EXISTS (CA075) and nothing changes; with it, the anonymous account is
    /// merged into that account (`AccountMerge.merge`) — an account found by email only when both
    /// addresses are verified, as for linking (else 409 CA057), and the identity is linked to it —
    /// and that account is returned (the caller opens its session).
    static func upgrade(
        _ userID: String, with identity: VerifiedIdentity, provider: SignInProvider,
        newAccount: Result<NewAccount, DomainError>, merge: Bool, _ services: Services, at now: Int64, on db: any SQLConnection
    ) throws -> User {
        let exists = APIError(
            .accountExists,
            "this \(provider.rawValue) account already has an account on this server: send merge: true to move this "
                + "anonymous account's data into it, or sign in to it without the anonymous session")
        var target: (id: String, link: Bool)?
        if let linked = try IdentityStore.userID(provider: provider, subject: identity.subject, on: db) {
            target = (linked, false)
        }
        let fields = try newAccount.get()
        if target == nil, let existing = try AccountStore.user(email: fields.email, on: db) {
            guard merge else { throw exists }
            guard existing.emailVerified, fields.emailVerified else {
                throw DomainError.identityLinkRefused(
                    reason: "an account with this email exists, and its address or \(provider.rawValue)'s is not verified")
            }
            target = (existing.id, true)
        }
        if let target {
            guard merge else { throw exists }
            _ = try AccountMerge.merge(anonymous: userID, into: target.id, at: now, on: db)
            if target.link {
                try IdentityStore.link(
                    provider: provider, subject: identity.subject, userID: target.id, email: identity.email, at: now, on: db)
            }
            guard let user = try AccountStore.user(id: target.id, on: db) else { throw StoreError.corruptRow(table: "users") }
            return user
        }
        let user = try AccountStore.upgrade(
            userID: userID, email: fields.email, passwordHash: "", displayName: nil,
            emailVerifiedAt: fields.emailVerified ? now : nil, at: now, on: db)
        if !fields.emailVerified {
            _ = try services.queueVerification(userID: userID, email: fields.email, change: false, at: now, on: db)
        }
        try IdentityStore.link(provider: provider, subject: identity.subject, userID: userID, email: identity.email, at: now, on: db)
        return user
    }

    /// The email and name a new identity's account gets: the token's email (canonical, as
    /// registration makes it; a token without one, or with one this server refuses, cannot create
    /// or link an account → 422 `id_token`), verified when the provider says so; the token's `name`,
    /// else the email's local part.
    static func account(from identity: VerifiedIdentity) throws(DomainError) -> NewAccount {
        guard let raw = identity.email else {
            throw .invalidField(field: "id_token", message: "the ID token carries no email: request the email scope")
        }
        let email: String
        do {
            email = try AccountRules.normalizeEmail(raw)
        } catch {
            throw .invalidField(field: "id_token", message: "the ID token's email is not an address this server accepts")
        }
        let localPart = String(email.prefix { $0 != "@" }.prefix(AccountRules.maxDisplayNameCharacters))
        let displayName =
            (identity.name.flatMap { try? AccountRules.normalizeDisplayName($0) })
            ?? (try? AccountRules.normalizeDisplayName(localPart)) ?? "User"
        return NewAccount(email: email, emailVerified: identity.emailVerified, displayName: displayName)
    }

    static func disabled(_ provider: SignInProvider) -> APIError {
        APIError(.oidcProviderDisabled, "sign-in with \(provider.rawValue) is not configured on this server")
    }

    /// `GET /v1/me/identities` → `{identities, has_password}`, oldest identity first.
    static func list(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        let (records, hasPassword) = try await services.database.read { db in
            (try IdentityStore.list(userID: userID, on: db), try AccountStore.hasPassword(userID: userID, on: db))
        }
        return JSONBody.response(
            IdentityList(
                identities: records.map {
                    IdentityDocument(provider: $0.provider.rawValue, email: $0.email, createdAt: Timestamp(milliseconds: $0.createdAt))
                }, hasPassword: hasPassword))
    }

    /// `DELETE /v1/me/identities/{provider}` → 204; 404 when the account has no identity of that
    /// provider (or it is no provider); 409 LAST_SIGN_IN_METHOD when it is the account's last way to
    /// sign in. The account's sessions stay (unlinking is not a sign-out).
    static func unlink(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        guard let provider = SignInProvider(rawValue: try request.parameter("provider")) else {
            throw APIError(.notFound, "no such identity")
        }
        let removed = try await services.database.write { db in try IdentityStore.unlink(provider: provider, userID: userID, on: db) }
        guard removed else { throw APIError(.notFound, "no such identity") }
        services.logger.info(
            "identity unlinked",
            metadata: ["user_id": "\(userID)", "provider": "\(provider.rawValue)", "request_id": "\(request.requestID)"])
        return HTTPResponse(status: .noContent)
    }
}
