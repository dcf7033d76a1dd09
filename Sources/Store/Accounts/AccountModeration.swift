public import Domain
public import Storage

/// Operator actions on accounts (chronir-admin), sharing the API's rules and change-log writes.
extension AccountStore {
    /// The live account with this id or (normalised) email.
    public static func find(_ idOrEmail: String, on db: any SQLConnection) throws -> User? {
        if let user = try user(id: idOrEmail.lowercased(), on: db) { return user }
        guard let email = try? AccountRules.normalizeEmail(idOrEmail) else { return nil }
        return try credentials(email: email, on: db)?.user
    }

    /// Live accounts ordered by creation, optionally those whose email or name contains `search`.
    public static func list(search: String?, limit: Int, on db: any SQLConnection) throws -> [User] {
        // LIKE with its wildcards escaped, so a search for "50%" means the text "50%".
        let pattern = search.map { text in
            "%" + text.lowercased().map { "%_\\".contains($0) ? "\\\($0)" : "\($0)" }.joined() + "%"
        }
        return try db.query(
            """
            SELECT \(userColumns()) FROM users
            WHERE deleted_ms IS NULL
              AND (CAST(?1 AS TEXT) IS NULL OR lower(email) LIKE ?1 ESCAPE '\\' OR lower(display_name) LIKE ?1 ESCAPE '\\')
            ORDER BY created_ms, id LIMIT ?2
            """, [pattern.map { .text($0) } ?? .null, .integer(Int64(limit))]
        ).map(userFromRow)
    }

    /// Sets the tier. Returns the updated user (unchanged when it already had that tier).
    public static func setTier(
        userID: String, tier: Tier, actor: Actor, reason: String?, at now: Int64, on db: any SQLConnection
    ) throws -> User {
        try update(userID: userID, actor: actor, reason: reason, event: .userTierChanged, at: now, on: db) {
            $0.tier = tier
        }
    }

    /// Suspends or reinstates an account. Suspension revokes every session (the `sessions_revoked`
    /// batch, as every other revocation: their devices go with them), and every pending
    /// invitation and invite code the account created (`GroupStore.revokeGrants`), in the same
    /// transaction; reinstating restores none of them.
    public static func setStatus(
        userID: String, status: UserStatus, actor: Actor, reason: String?, at now: Int64, on db: any SQLConnection
    ) throws -> User {
        let event: ChangeEvent = status == .suspended ? .userSuspended : .userUnsuspended
        let user = try update(userID: userID, actor: actor, reason: reason, event: event, at: now, on: db) {
            $0.status = status
        }
        if status == .suspended {
            try SessionStore.revokeAll(userID: userID, keeping: nil, actor: actor, reason: .accountSuspended, at: now, on: db)
            try GroupStore.revokeGrants(
                of: userID, in: nil, keeping: nil, actor: actor, reason: .creatorSuspended, at: now, on: db)
        }
        return user
    }

    /// Applies `change` to the stored user, bumps its version and appends the change-log batch.
    private static func update(
        userID: String, actor: Actor, reason: String?, event: ChangeEvent, at now: Int64, on db: any SQLConnection,
        _ change: (inout User) -> Void
    ) throws -> User {
        guard var user = try user(id: userID, on: db) else { throw DomainError.notFound("user") }
        let before = user
        change(&user)
        guard user != before else { return user }
        user.version += 1
        user.updatedAt = Timestamp(milliseconds: now)
        try db.run(
            "UPDATE users SET tier = ?2, status = ?3, version = ?4, updated_ms = ?5 WHERE id = ?1",
            [
                .text(userID), .text(user.tier.rawValue), .text(user.status.rawValue), .integer(user.version),
                .integer(now),
            ])
        try ChangeLog.append(
            [
                Change(
                    topic: ChangeLog.userTopic(userID), kind: .user, op: .modified, entityID: userID,
                    document: user.documentBytes, reason: reason)
            ], event: event, actor: actor, at: now, on: db)
        return user
    }
}
