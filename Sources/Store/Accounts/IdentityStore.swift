public import Domain
import Hashing
public import Storage

/// SQL for Sign in with Apple/Google (docs/sign-in.md, migration 0021): identities — a provider's
/// user id linked to an account — and the nonces of ID tokens already used. Every function runs in
/// the caller's transaction.
public enum IdentityStore {
    /// One linked identity.
    public struct Record: Sendable, Equatable {
        public var provider: SignInProvider
        /// The provider's stable user id (`sub`).
        public var subject: String
        public var userID: String
        /// The address the token carried when the identity was linked.
        public var email: String?
        public var createdAt: Int64
    }

    /// The account `subject` of `provider` is linked to (a live one: a deleted account's identities
    /// are deleted with it).
    public static func userID(provider: SignInProvider, subject: String, on db: any SQLConnection) throws -> String? {
        try db.queryOne(
            "SELECT user_id FROM identities WHERE provider = ?1 AND subject = ?2", [.text(provider.rawValue), .text(subject)]
        )?.string("user_id")
    }

    /// Links `subject` of `provider` to `userID`. An account has at most one identity per provider:
    /// a second one is `DomainError.identityLinkRefused`.
    public static func link(
        provider: SignInProvider, subject: String, userID: String, email: String?, at now: Int64, on db: any SQLConnection
    ) throws {
        do {
            try db.run(
                "INSERT INTO identities (provider, subject, user_id, email, created_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
                [.text(provider.rawValue), .text(subject), .text(userID), email.map { .text($0) } ?? .null, .integer(now)])
        } catch {
            if error.storageFailure?.isUniqueViolation == true {
                throw DomainError.identityLinkRefused(
                    reason: "the account with this email already signs in with another \(provider.rawValue) account")
            }
            throw error
        }
    }

    /// The identities of `userID`, oldest first.
    public static func list(userID: String, on db: any SQLConnection) throws -> [Record] {
        try db.query(
            "SELECT provider, subject, user_id, email, created_ms FROM identities WHERE user_id = ?1 ORDER BY created_ms, provider",
            [.text(userID)]
        ).map { row in
            guard let provider = row.string("provider").flatMap(SignInProvider.init(rawValue:)),
                let subject = row.string("subject"), let user = row.string("user_id"), let created = row.int("created_ms")
            else { throw StoreError.corruptRow(table: "identities") }
            return Record(provider: provider, subject: subject, userID: user, email: row.string("email"), createdAt: created)
        }
    }

    /// Unlinks the `provider` identity of `userID`: false when there is none; throws
    /// `DomainError.lastSignInMethod` when the account has no password and no other identity (it
    /// could never sign in again). The check and the delete share the caller's write transaction, so
    /// two concurrent removals cannot each leave the other as the last one and both succeed.
    public static func unlink(provider: SignInProvider, userID: String, on db: any SQLConnection) throws -> Bool {
        let identities = try list(userID: userID, on: db)
        guard identities.contains(where: { $0.provider == provider }) else { return false }
        if identities.count == 1, try !AccountStore.hasPassword(userID: userID, on: db) { throw DomainError.lastSignInMethod }
        try db.run("DELETE FROM identities WHERE user_id = ?1 AND provider = ?2", [.text(userID), .text(provider.rawValue)])
        return true
    }

    /// Deletes every identity of `userID` (account deletion).
    public static func deleteAll(userID: String, on db: any SQLConnection) throws {
        try db.run("DELETE FROM identities WHERE user_id = ?1", [.text(userID)])
    }

    /// What `oidc_nonces` stores of a nonce: SHA-256(provider ‖ 0x00 ‖ nonce).
    public static func nonceHash(provider: SignInProvider, nonce: String) -> [UInt8] {
        SHA256.hash(Array(provider.rawValue.utf8) + [0] + Array(nonce.utf8))
    }

    /// Records `nonceHash` as used until `expiresAt`; false when it is already recorded and not yet
    /// expired at `now` (a replay). An expired record is taken over (its token can no longer sign in).
    public static func useNonce(_ nonceHash: [UInt8], expiresAt: Int64, at now: Int64, on db: any SQLConnection) throws -> Bool {
        try db.run(
            """
            INSERT INTO oidc_nonces (nonce_hash, expires_ms) VALUES (?1, ?2)
            ON CONFLICT (nonce_hash) DO UPDATE SET expires_ms = excluded.expires_ms WHERE oidc_nonces.expires_ms <= ?3
            """, [.blob(nonceHash), .integer(expiresAt), .integer(now)]) == 1
    }

    /// Deletes nonce records that expired before `cutoff` (the retention sweep).
    public static func purgeNonces(expiredBefore cutoff: Int64, on db: any SQLConnection) throws -> Int {
        try db.run("DELETE FROM oidc_nonces WHERE expires_ms < ?1", [.integer(cutoff)])
    }
}

extension AccountStore {
    /// Whether the live account `userID` has a password (an empty hash: it signs in with Apple/Google only).
    public static func hasPassword(userID: String, on db: any SQLConnection) throws -> Bool {
        try db.queryOne(
            "SELECT 1 AS yes FROM users WHERE id = ?1 AND password_hash <> '' AND deleted_ms IS NULL", [.text(userID)]) != nil
    }
}
