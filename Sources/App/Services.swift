public import Domain
import Hashing
public import Logging
public import Storage
import Store
import Wire

/// The shared dependencies route handlers capture: one instance per server process.
public struct Services: Sendable {
    public var config: AppConfiguration
    public var database: any SQLDatabase
    public var clock: any WallClock
    /// Blocking work that must stay quick: static files, migration checks. Never password hashing.
    public var workers: WorkerPool
    /// Password hashing (scrypt) only: bounded (`AppConfiguration.maxQueuedHashes`); full → `Saturated` → 503.
    public var hashing: WorkerPool
    /// Attachment decodes (`MediaProcessor`) only: `AttachmentConfiguration.decodeThreads` wide, bounded by
    /// `maxQueuedDecodes`; full → `Saturated` → 503. Never `workers`, so a costly decode cannot hold a
    /// static file or a health check.
    public var decoding: WorkerPool
    /// Registrations per hour per client network and in total (`AppConfiguration.registrationLimits`).
    public var registrations: RegistrationLimiter
    /// Password-reset confirms hashing at once per client network
    /// (`PasswordResetRoutes.confirmsInFlightPerNetwork`).
    public let resetConfirms = AddressQuota(limit: PasswordResetRoutes.confirmsInFlightPerNetwork)
    public var logger: Logger
    /// The server's keyed-hash secret (`ServerSecret`): invite codes are stored as HMAC-SHA-256 under it.
    public var secret: [UInt8]
    /// The metrics this instance records and `/metrics` exposes (its own registry).
    public var metrics: ChronirMetrics
    /// The VAPID public key `GET /v1/push/vapid-public-key` serves (`VAPIDKey.publicKeyText`); nil
    /// when Web Push is not configured, and the route answers 404.
    public var vapidPublicKey: String?
    /// Sign in with Apple/Google (`POST /v1/auth/oidc`): the token verifier with its key-set cache;
    /// nil when no provider is configured (the route answers 404 OIDC_PROVIDER_DISABLED).
    public var oidc: OIDCService?
    /// The apps' configuration (`--app-config-file`, reloaded on SIGHUP): minimum versions, feature flags,
    /// deep-link app identities (docs/apps.md).
    public var apps: AppsConfigurationSource
    /// Every signed-in user's write budget (`config.writeBudget`), charged by `authenticate`.
    public let writeBudgets: WriteBudgets
    /// A hash of a random password with the configured cost, verified when a login names an unknown
    /// email so that a miss takes as long as a wrong password (no account enumeration by timing).
    let decoyPasswordHash: String

    /// `hashing` nil makes the bounded pool `config` describes (tests pass one to fill it).
    public init(
        config: AppConfiguration, database: any SQLDatabase, clock: any WallClock, workers: WorkerPool, hashing: WorkerPool? = nil,
        logger: Logger, secret: [UInt8], metrics: ChronirMetrics = ChronirMetrics(), vapidPublicKey: String? = nil,
        oidc: OIDCService? = nil, apps: AppsConfigurationSource = AppsConfigurationSource()
    ) {
        self.config = config
        self.apps = apps
        self.oidc = oidc
        self.vapidPublicKey = vapidPublicKey
        self.metrics = metrics
        self.secret = secret
        self.database = database
        self.clock = clock
        self.workers = workers
        self.hashing =
            hashing ?? WorkerPool(width: config.hashingThreads, maxQueued: config.maxQueuedHashes, label: "chronir.hashing")
        decoding = WorkerPool(
            width: config.attachments.decodeThreads, maxQueued: config.attachments.maxQueuedDecodes, label: "chronir.decoding")
        self.registrations = RegistrationLimiter(limits: config.registrationLimits, clock: clock, database: database)
        self.logger = logger
        writeBudgets = WriteBudgets(budget: config.writeBudget)
        decoyPasswordHash = PasswordHash.make(
            password: Base64URL.encode(SecureRandom.bytes(16)), parameters: Self.scrypt(config.passwordHashing))
    }

    /// The methods that change data (RFC 9110 §9.2.1: the unsafe ones the API serves).
    static let writeMethods: Set<HTTPMethod> = [.post, .put, .patch, .delete]

    /// scrypt parameters for new password hashes.
    var scrypt: ScryptParameters { Self.scrypt(config.passwordHashing) }

    /// A new password hash (scrypt at `scrypt`), made on the hashing pool. When the pool is full it runs
    /// `undo` (giving back what the caller counted before hashing) and rethrows `WorkerPool.Saturated`
    /// (503 with `Retry-After`).
    func hashPassword(_ password: String, undo: () async throws -> Void = {}) async throws -> String {
        let scrypt = self.scrypt
        do {
            return try await hashing.run { PasswordHash.make(password: password, parameters: scrypt) }
        } catch let error as WorkerPool.Saturated {
            try await undo()
            throw error
        }
    }

    static func scrypt(_ cost: PasswordHashingCost) -> ScryptParameters {
        switch cost {
        case .interactive: .interactive
        case .fast: .testing
        }
    }

    /// The signed-in user behind the request's bearer token. Throws 401 AUTH_REQUIRED for a missing,
    /// malformed, unknown, expired or revoked token, 403 ACCOUNT_SUSPENDED for a suspended account.
    ///
    /// The one place write budgets are charged: for a write method (POST, PUT, PATCH, DELETE) it
    /// charges the user's `WriteBudgets` entry with the request body and throws 429 RATE_LIMITED
    /// (`Retry-After`) when it is spent — before the handler, and before this function's own session
    /// touch, writes anything. Every route that changes data resolves its principal here, so every
    /// such route is budgeted; `exemptFromWriteBudget` is for logout only (ending a session must
    /// always work, and it only shrinks what is stored).
    ///
    /// `chargeBodyBytes` false charges the write but not its body's bytes: attachment uploads, whose
    /// bodies are files with limits of their own (size, count per alarm, uploads per minute).
    public func authenticate(_ request: Request, exemptFromWriteBudget: Bool = false, chargeBodyBytes: Bool = true)
        async throws -> AuthenticatedUser
    {
        // A bearer token first (apps); else the web client's session cookie, whose writes must pass the
        // CSRF check before anything else is looked at (SessionCookie).
        let cookie = request.bearerToken == nil ? try SessionCookie.token(in: request, secure: SessionCookie.secure(config)) : nil
        guard let token = request.bearerToken ?? cookie, let tokenHash = TokenHashing.hash(token: token) else {
            throw DomainError.authenticationRequired
        }
        if cookie != nil { try SessionCookie.checkCSRF(request, config: config) }
        let now = clock.nowMilliseconds()
        let lookup = try await database.readStatement { db in try SessionStore.lookup(tokenHash: tokenHash, at: now, on: db) }
        guard var lookup else { throw DomainError.authenticationRequired }
        guard lookup.user.status == .active else { throw DomainError.accountSuspended }
        if !exemptFromWriteBudget, Self.writeMethods.contains(request.method) {
            try writeBudgets.charge(
                userID: lookup.user.id, bodyBytes: chargeBodyBytes ? request.http.body.count : 0, now: now)
        }
        if lookup.needsTouch {
            do {
                // Bookkeeping, not the request's write: it never carries the request's Idempotency-Key claim.
                try await IdempotencyKey.$current.withValue(nil) {
                    try await database.write { db in try SessionStore.touch(tokenHash: tokenHash, at: now, on: db) }
                }
                lookup.user.lastSeenAt = max(lookup.user.lastSeenAt ?? Timestamp(milliseconds: now), Timestamp(milliseconds: now))
            } catch let error as any StorageFailure where error.isStorageUnavailable {
                // Sliding the expiry is bookkeeping: a full or read-only disk must not turn reads into 503s.
                // The next request after the touch interval tries again.
                logger.warning("session touch skipped: storage unavailable", metadata: ["error": "\(error)"])
            }
        }
        return AuthenticatedUser(user: lookup.user, tokenHash: tokenHash, sessionID: lookup.sessionID)
    }
    /// The id of the active account the request's credentials name (bearer token, or the session cookie
    /// with its CSRF check), or nil for none, an unknown or expired one, or a suspended account: one read,
    /// no write, no write-budget charge (`Idempotency-Key` scoping; the handler authenticates as always).
    func accountID(of request: Request) async throws -> String? {
        let cookie = request.bearerToken == nil ? try SessionCookie.token(in: request, secure: SessionCookie.secure(config)) : nil
        guard let token = request.bearerToken ?? cookie, let tokenHash = TokenHashing.hash(token: token) else { return nil }
        if cookie != nil { try SessionCookie.checkCSRF(request, config: config) }
        let now = clock.nowMilliseconds()
        let lookup = try await database.readStatement { db in try SessionStore.lookup(tokenHash: tokenHash, at: now, on: db) }
        guard let lookup, lookup.user.status == .active else { return nil }
        return lookup.user.id
    }
}

/// A request's authenticated principal.
public struct AuthenticatedUser: Sendable {
    public var user: User
    /// SHA-256 of the bearer token (to revoke this session on logout).
    public var tokenHash: [UInt8]
    /// The session's public id (`GET /v1/me/sessions` marks it `current`).
    public var sessionID: String
}

/// Bearer tokens: 256 random bits, base64url without padding (43 characters); stored as SHA-256.
public enum TokenHashing {
    /// Bytes of randomness in a token.
    public static let tokenBytes = 32

    /// A fresh token and its stored hash.
    public static func generate() -> (token: String, hash: [UInt8]) {
        let raw = SecureRandom.bytes(tokenBytes)
        return (Base64URL.encode(raw), SHA256.hash(raw))
    }

    /// The stored hash of a presented token, or nil when it cannot be one of ours.
    public static func hash(token: String) -> [UInt8]? {
        guard token.utf8.count == 43, let raw = Base64URL.decode(token), raw.count == tokenBytes else { return nil }
        return SHA256.hash(raw)
    }
}
