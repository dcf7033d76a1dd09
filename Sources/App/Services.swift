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
    /// Every signed-in user's write budget (`config.writeBudget`), charged by `authenticate` and `writeAsUser`.
    public let writeBudgets: WriteBudgets
    /// The account of each session token this process found valid (`writeAsUser` reads the session
    /// inside the write for those).
    public let sessionOwners = SessionOwners()
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
    /// One of the two places write budgets are charged (with `writeAsUser`): for a write method (POST,
    /// PUT, PATCH, DELETE) it charges the user's `WriteBudgets` entry with the request body and throws
    /// 429 RATE_LIMITED (`Retry-After`) when it is spent — before the handler, and before this
    /// function's own session touch, writes anything. Every route that changes data resolves its
    /// principal here or in `writeAsUser`, so every such route is budgeted; `exemptFromWriteBudget` is
    /// for logout only (ending a session must always work, and it only shrinks what is stored).
    ///
    /// `chargeBodyBytes` false charges the write but not its body's bytes: attachment uploads, whose
    /// bodies are files with limits of their own (size, count per alarm, uploads per minute).
    public func authenticate(_ request: Request, exemptFromWriteBudget: Bool = false, chargeBodyBytes: Bool = true)
        async throws -> AuthenticatedUser
    {
        guard let tokenHash = try sessionTokenHash(request) else { throw DomainError.authenticationRequired }
        return try await authenticate(request, tokenHash, exemptFromWriteBudget: exemptFromWriteBudget, chargeBodyBytes: chargeBodyBytes)
    }

    /// `authenticate` once the request's token is hashed (`sessionTokenHash`).
    private func authenticate(_ request: Request, _ tokenHash: [UInt8], exemptFromWriteBudget: Bool = false, chargeBodyBytes: Bool = true)
        async throws -> AuthenticatedUser
    {
        let now = clock.nowMilliseconds()
        var lookup = try await validSession(tokenHash, at: now)
        if !exemptFromWriteBudget, Self.writeMethods.contains(request.method) {
            try writeBudgets.charge(
                userID: lookup.user.id, bodyBytes: chargeBodyBytes ? request.http.body.count : 0, now: now)
        }
        if lookup.needsTouch {
            await touchSession(tokenHash, at: now)
            lookup.user.lastSeenAt = max(lookup.user.lastSeenAt ?? Timestamp(milliseconds: now), Timestamp(milliseconds: now))
        }
        return AuthenticatedUser(user: lookup.user, tokenHash: tokenHash, sessionID: lookup.sessionID)
    }

    /// A write on behalf of the request's signed-in user, answering as `authenticate` then a write
    /// would — 401, 403, 429 before anything is kept, `prepare`'s errors (decoding, validation) only
    /// once the session is known to hold — with the write budget charged as `authenticate` charges it.
    ///
    /// For a token this process has seen (`sessionOwners`) the session is not read before the write:
    /// its read goes with the write's first statement (`SessionStore.prefetchLookup`; on PostgreSQL no
    /// round trip and no storage-queue hop of its own), and the write is undone and refused unless the
    /// session still holds and names the same account. A token not seen yet is read first, as
    /// `authenticate` reads it. `prepare` gets `now`, the instant the request is checked and written
    /// at; `write` gets `prepare`'s answer, the caller (the account and its session's token hash) and `now`.
    ///
    /// `needs`: the tier the write is for (`requireTier`), checked as `authenticate` then `requireTier`
    /// would — 403 TIER_REQUIRED after 401/403 and before `prepare`'s errors and the write's; inside
    /// the write from the same session read, the write undone when the tier falls short.
    func writeAsUser<Input: Sendable, T: Sendable>(
        _ request: Request, _ kind: TransactionKind = .immediate, needs: TierNeed? = nil, prepare: (_ now: Int64) throws -> Input,
        write: @escaping @Sendable (_ input: Input, _ caller: SessionCaller, _ now: Int64, any SQLConnection) throws -> T
    ) async throws -> T {
        guard let tokenHash = try sessionTokenHash(request) else { throw DomainError.authenticationRequired }
        guard let userID = sessionOwners.owner(of: tokenHash) else {
            let user = try await authenticate(request, tokenHash).user
            if let needs { try await requireTier(user, needs.tier, needs.what) }
            let now = clock.nowMilliseconds()
            let input = try prepare(now)
            let caller = SessionCaller(userID: user.id, tokenHash: tokenHash)
            return try await database.write(kind) { db in try write(input, caller, now, db) }
        }
        let now = clock.nowMilliseconds()
        let input: Input
        do {
            if Self.writeMethods.contains(request.method) {
                try writeBudgets.charge(userID: userID, bodyBytes: request.http.body.count, now: now)
            }
            input = try prepare(now)
        } catch {
            // 401, 403 and the tier come first, as from `authenticate` and `requireTier`: the session is
            // read before this answer.
            let lookup = try await validSession(tokenHash, at: now)
            if let needs { try await requireTier(lookup.user, needs.tier, needs.what) }
            throw error
        }
        let value: T
        let needsTouch: Bool
        do {
            (value, needsTouch) = try await database.write(kind) { db in
                let pending = try SessionStore.prefetchLookup(tokenHash: tokenHash, at: now, on: db)
                /// Throws unless the session holds for `userID` with the tier the write needs.
                func admit(_ session: SessionStore.Lookup?) throws {
                    try Self.check(session, owner: userID)
                    if let needs, let user = session?.user, user.tier < needs.tier {
                        throw try EntitlementStore.tierError(userID: userID, needed: needs.tier, what: needs.what, at: now, on: db)
                    }
                }
                let value: T
                do {
                    value = try write(input, SessionCaller(userID: userID, tokenHash: tokenHash), now, db)
                } catch {
                    // The write's own error is the answer only where the session holds (and where the
                    // session's read failed too: nothing better is known).
                    if case .success(let session) = Result(catching: pending.result) { try admit(session) }
                    throw error
                }
                let session = try pending.result()
                try admit(session)
                return (value, session?.needsTouch ?? false)
            }
        } catch let refused as SessionRefused {
            sessionOwners.forget(tokenHash)
            throw refused.error
        }
        if needsTouch { await touchSession(tokenHash, at: now) }
        return value
    }

    /// Refuses a write by `owner` unless its session `lookup` holds: `SessionRefused` 401 for none
    /// (revoked, expired, deleted) or another account's, 403 for a suspended account.
    private static func check(_ lookup: SessionStore.Lookup?, owner: String) throws(SessionRefused) {
        guard let lookup, lookup.user.id == owner else { throw SessionRefused(error: .authenticationRequired) }
        guard lookup.user.status == .active else { throw SessionRefused(error: .accountSuspended) }
    }

    /// Whom a `writeAsUser` write is for: the signed-in account and the hash of the session token the
    /// request carried (what a device registered by that session is tied to).
    struct SessionCaller: Sendable {
        let userID: String
        let tokenHash: [UInt8]
    }

    /// The tier a write is for, and what the 403 TIER_REQUIRED names (`writeAsUser`, `requireTier`).
    struct TierNeed: Sendable {
        let tier: Tier
        let what: String
    }

    /// A write undone because its session no longer holds (`writeAsUser`).
    private struct SessionRefused: Error {
        let error: DomainError
    }

    /// SHA-256 of the request's session token: a bearer token first (apps); else the web client's
    /// session cookie, whose writes must pass the CSRF check before anything else is looked at
    /// (SessionCookie). Nil when there is none or it is malformed.
    private func sessionTokenHash(_ request: Request) throws -> [UInt8]? {
        let cookie = request.bearerToken == nil ? try SessionCookie.token(in: request, secure: SessionCookie.secure(config)) : nil
        guard let token = request.bearerToken ?? cookie, let tokenHash = TokenHashing.hash(token: token) else { return nil }
        if cookie != nil { try SessionCookie.checkCSRF(request, config: config) }
        return tokenHash
    }

    /// The session behind `tokenHash`, read on its own (a reader, one statement); 401 or 403 as
    /// `authenticate` answers. Its account is remembered in `sessionOwners`.
    private func validSession(_ tokenHash: [UInt8], at now: Int64) async throws -> SessionStore.Lookup {
        let lookup = try await database.readStatement { db in try SessionStore.lookup(tokenHash: tokenHash, at: now, on: db) }
        guard let lookup else {
            sessionOwners.forget(tokenHash)
            throw DomainError.authenticationRequired
        }
        guard lookup.user.status == .active else { throw DomainError.accountSuspended }
        sessionOwners.record(tokenHash, owner: lookup.user.id)
        return lookup
    }

    /// Slides the session's idle expiry (`SessionStore.touch`): bookkeeping in a `.concurrent` write of
    /// its own (the session's and the account's rows locked first), never the request's (it carries no
    /// `Idempotency-Key` claim), and skipped when storage is unavailable — a full or read-only disk must
    /// not turn reads into 503s; the next request after the touch interval tries again.
    private func touchSession(_ tokenHash: [UInt8], at now: Int64) async {
        do {
            try await IdempotencyKey.$current.withValue(nil) {
                try await database.write(.concurrent) { db in try SessionStore.touch(tokenHash: tokenHash, at: now, on: db) }
            }
        } catch let error as any StorageFailure where error.isStorageUnavailable {
            logger.warning("session touch skipped: storage unavailable", metadata: ["error": "\(error)"])
        } catch {
            logger.error("session touch failed", metadata: ["error": "\(error)"])
        }
    }

    /// The id of the active account the request's credentials name (bearer token, or the session cookie
    /// with its CSRF check), or nil for none, an unknown or expired one, or a suspended account: one read,
    /// no write, no write-budget charge (`Idempotency-Key` scoping; the handler authenticates as always).
    func accountID(of request: Request) async throws -> String? {
        guard let tokenHash = try sessionTokenHash(request) else { return nil }
        do {
            return try await validSession(tokenHash, at: clock.nowMilliseconds()).user.id
        } catch is DomainError {
            return nil
        }
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
