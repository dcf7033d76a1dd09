public import Domain
public import Storage

/// One-use tokens sent by mail (migration 0015, docs/mail.md#verified-email): only SHA-256 of the
/// token is stored; a token is good for one use before `expires_ms`, for the purpose it was issued.
public enum EmailTokens {
    /// What a token is for.
    public enum Purpose: String, Sendable {
        case verifyEmail = "verify_email"
        case passwordReset = "password_reset"
    }

    /// A usable token's row.
    public struct Grant: Sendable, Equatable {
        public var userID: String
        public var email: String
    }

    /// Stores `tokenHash` for `userID` proving `email`, usable until `expiresAt`.
    public static func issue(
        _ purpose: Purpose, tokenHash: [UInt8], userID: String, email: String, at now: Int64, expiresAt: Int64,
        on db: any SQLConnection
    ) throws {
        try db.run(
            """
            INSERT INTO email_tokens (token_hash, purpose, user_id, email, created_ms, expires_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6)
            """, [.blob(tokenHash), .text(purpose.rawValue), .text(userID), .text(email), .integer(now), .integer(expiresAt)])
    }

    /// When tokens of `purpose` were issued to `userID` since `since` (the resend rate limit).
    public static func issueTimes(_ purpose: Purpose, userID: String, since: Int64, on db: any SQLConnection) throws -> [Int64] {
        try db.query(
            "SELECT created_ms FROM email_tokens WHERE user_id = ?1 AND purpose = ?2 AND created_ms > ?3 ORDER BY created_ms",
            [.text(userID), .text(purpose.rawValue), .integer(since)]
        ).compactMap { $0.int("created_ms") }
    }

    /// Uses the token: marks it used and returns its grant, or throws `tokenInvalid` when it is
    /// unknown, used, expired, or of another purpose. Every other unused token of the same purpose
    /// and user is spent with it (an older link must not undo what a newer one did).
    public static func consume(_ purpose: Purpose, tokenHash: [UInt8], at now: Int64, on db: any SQLConnection) throws -> Grant {
        guard
            let row = try db.queryOne(
                """
                UPDATE email_tokens SET used_ms = ?3
                WHERE token_hash = ?1 AND purpose = ?2 AND used_ms IS NULL AND expires_ms > ?3
                RETURNING user_id, email
                """, [.blob(tokenHash), .text(purpose.rawValue), .integer(now)]),
            let userID = row.string("user_id"), let email = row.string("email")
        else { throw DomainError.tokenInvalid }
        try db.run(
            "UPDATE email_tokens SET used_ms = ?3 WHERE user_id = ?1 AND purpose = ?2 AND used_ms IS NULL",
            [.text(userID), .text(purpose.rawValue), .integer(now)])
        return Grant(userID: userID, email: email)
    }

    /// Whether the token is one `consume` would take now (unused, unexpired, of `purpose`): a read, for
    /// callers that must not spend work on a token that cannot succeed.
    public static func isUsable(_ purpose: Purpose, tokenHash: [UInt8], at now: Int64, on db: any SQLConnection) throws -> Bool {
        try db.queryOne(
            "SELECT 1 AS one FROM email_tokens WHERE token_hash = ?1 AND purpose = ?2 AND used_ms IS NULL AND expires_ms > ?3",
            [.blob(tokenHash), .text(purpose.rawValue), .integer(now)]) != nil
    }

    /// Deletes tokens that expired before `cutoff` (retention).
    @discardableResult
    public static func purge(expiredBefore cutoff: Int64, on db: any SQLConnection) throws -> Int {
        try db.run("DELETE FROM email_tokens WHERE expires_ms < ?1", [.integer(cutoff)])
    }
}

extension AccountStore {
    /// Marks the account's current address verified (a verification link for it, or `chronir-admin
    /// users verify-email`), bumping `version` with a `user_updated` change. Idempotent: an address
    /// already verified is left as it is.
    @discardableResult
    public static func markEmailVerified(userID: String, actor: Actor, at now: Int64, on db: any SQLConnection) throws -> User {
        guard var user = try user(id: userID, on: db) else { throw DomainError.notFound("user") }
        guard !user.emailVerified else { return user }
        user.emailVerified = true
        return try saveEmail(user, actor: actor, at: now, on: db)
    }

    /// Uses a verification token: the account's address becomes verified — or, for a token issued
    /// to a new address (an address change), the account's address becomes that one, verified.
    /// Throws `tokenInvalid` for a bad token and `emailTaken` when another account took the new
    /// address meanwhile.
    public static func verifyEmail(tokenHash: [UInt8], at now: Int64, on db: any SQLConnection) throws -> User {
        let grant = try EmailTokens.consume(.verifyEmail, tokenHash: tokenHash, at: now, on: db)
        guard var user = try user(id: grant.userID, on: db) else { throw DomainError.tokenInvalid }
        if user.email == grant.email, user.emailVerified { return user }
        let changed = user.email != grant.email
        user.email = grant.email
        user.emailVerified = true
        do {
            return try saveEmail(user, actor: .user(user.id), at: now, on: db)
        } catch {
            if changed, error.storageFailure?.isUniqueViolation == true { throw DomainError.emailTaken }
            throw error
        }
    }

    /// Writes `user`'s email and its verification, bumps `version`, appends `user_updated`.
    private static func saveEmail(_ user: User, actor: Actor, at now: Int64, on db: any SQLConnection) throws -> User {
        var user = user
        user.version += 1
        user.updatedAt = Timestamp(milliseconds: now)
        try db.run(
            "UPDATE users SET email = ?2, email_verified_ms = ?3, version = ?4, updated_ms = ?5 WHERE id = ?1",
            [.text(user.id), .text(user.email), user.emailVerified ? .integer(now) : .null, .integer(user.version), .integer(now)])
        try ChangeLog.append(
            [
                Change(
                    topic: ChangeLog.userTopic(user.id), kind: .user, op: .modified, entityID: user.id,
                    document: user.documentBytes)
            ], event: .userUpdated, actor: actor, at: now, on: db)
        return user
    }

    /// The live account that has `email` as its address, if any.
    public static func user(email: String, on db: any SQLConnection) throws -> User? {
        try credentials(email: email, on: db)?.user
    }
}

extension AccountStore {
    /// Uses a password-reset token: sets `passwordHash`, revokes every session of the account (the
    /// `sessions_revoked` batch closes their sockets on every instance), and returns the account id
    /// with how many sessions it revoked.
    /// The token must still name the account's current address (an address changed since → invalid).
    public static func resetPassword(
        tokenHash: [UInt8], passwordHash: String, at now: Int64, on db: any SQLConnection
    ) throws -> (userID: String, revoked: Int) {
        let grant = try EmailTokens.consume(.passwordReset, tokenHash: tokenHash, at: now, on: db)
        guard let user = try user(id: grant.userID, on: db), user.email == grant.email, user.status == .active else {
            throw DomainError.tokenInvalid
        }
        try db.run(
            "UPDATE users SET password_hash = ?2, updated_ms = ?3 WHERE id = ?1", [.text(user.id), .text(passwordHash), .integer(now)])
        let revoked = try SessionStore.revokeAll(
            userID: user.id, keeping: nil, actor: .user(user.id), reason: .passwordReset, at: now, on: db)
        try LoginFailureStore.clearAll(email: user.email, on: db)
        return (user.id, revoked)
    }
}
