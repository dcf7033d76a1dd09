public import Domain
import Foundation
public import Storage

/// SQL for accounts, sessions and failed-login records. Every function runs on a `Connection` the
/// caller owns, inside the caller's transaction (`Database.write`/`read`), so the API and the admin CLI
/// share one copy of these rules.
public enum AccountStore {
    /// The statement that locks the account's `users` row until COMMIT (`SQLConnection.forUpdate`):
    /// what serialises the `.concurrent` writes of one account's own data (personal sync, settings) and
    /// its shared alarm creations (whose rate window counts that account's). Send it before the reads
    /// the write decides on, in the same round trip (`queryEach`).
    static func accountLock(userID: String, on db: any SQLConnection) -> (sql: String, bindings: [SQLValue]) {
        ("SELECT 1 AS one FROM users WHERE id = ?1" + db.forUpdate, [.text(userID)])
    }

    /// Columns `userFromRow` reads, optionally qualified by a table alias (`u.id, u.email, …`).
    static func userColumns(_ alias: String = "") -> String {
        switch alias {
        case "": unqualifiedUserColumns
        case "u": userColumnsAliasU
        default: qualify(alias)
        }
    }

    /// Built once: the session lookup behind every authenticated request uses these.
    static let unqualifiedUserColumns = qualify("")
    static let userColumnsAliasU = qualify("u")

    private static func qualify(_ alias: String) -> String {
        let prefix = alias.isEmpty ? "" : alias + "."
        let names = [
            "id", "email", "email_verified_ms", "display_name", "timezone", "locale", "avatar_url", "last_seen_ms", "tier", "status",
            "version", "created_ms", "updated_ms", "anonymous_ms", "migrated_ms",
        ]
        return names.map { prefix + $0 }.joined(separator: ", ")
    }

    /// Creates an account and its change-log row. Throws `DomainError.emailTaken` when the
    /// normalised email already exists. `actor` defaults to the new user (self-registration).
    /// `passwordHash` empty: an account without a password (Sign in with Apple/Google only;
    /// docs/sign-in.md). `emailVerifiedAt`: the address is verified from the start (a provider vouched for it).
    public static func register(
        email: String, displayName: String, passwordHash: String, tier: Tier, timezone: String? = nil, at now: Int64,
        on db: any SQLConnection, actor: Actor? = nil, emailVerifiedAt: Int64? = nil
    ) throws -> User {
        let id = UUID().uuidString.lowercased()
        do {
            try db.run(
                """
                INSERT INTO users (id, email, display_name, password_hash, tier, status, version, created_ms, updated_ms,
                    email_verified_ms, timezone)
                VALUES (?1, ?2, ?3, ?4, ?5, 'active', 1, ?6, ?6, ?7, ?8)
                """,
                [
                    .text(id), .text(email), .text(displayName), .text(passwordHash), .text(tier.rawValue), .integer(now),
                    emailVerifiedAt.map { .integer($0) } ?? .null, SQLValue(timezone),
                ])
        } catch {
            // A separate `if` rather than `catch where`: the latter crashes the 6.3 compiler here.
            if error.storageFailure?.isUniqueViolation == true { throw DomainError.emailTaken }
            throw error
        }
        if tier != .free {
            // The server's --default-tier is an operator grant without expiry (docs/subscriptions.md#operator-grants).
            try db.run(
                """
                INSERT INTO operator_grants (user_id, tier, expires_ms, ended, reason, created_ms)
                VALUES (?1, ?2, NULL, 0, 'default tier', ?3)
                """,
                [.text(id), .text(tier.rawValue), .integer(now)])
        }
        let user = User(
            id: id, email: email, displayName: displayName, timezone: timezone, tier: tier, status: .active, version: 1,
            createdAt: Timestamp(milliseconds: now), updatedAt: Timestamp(milliseconds: now), emailVerified: emailVerifiedAt != nil)
        try ChangeLog.append(
            [
                Change(
                    topic: ChangeLog.userTopic(id), kind: .user, op: .added, entityID: id,
                    document: user.documentBytes)
            ], event: .userRegistered, actor: actor ?? .user(id), at: now, on: db)
        return user
    }

    /// The placeholder address of an anonymous account: unique, never mailable (`.invalid`, RFC 2606),
    /// never shown (its document's `email` is null).
    static func anonymousPlaceholder(_ id: String) -> String { "anonymous+\(id)@invalid" }

    /// Starts an anonymous account (docs/apps.md#anonymous-start): no email, no password, `anonymous_ms`
    /// set; event `user_registered`.
    public static func registerAnonymous(
        displayName: String, tier: Tier, timezone: String?, at now: Int64, on db: any SQLConnection
    ) throws -> User {
        let id = UUID().uuidString.lowercased()
        try db.run(
            """
            INSERT INTO users (id, email, display_name, password_hash, tier, status, version, created_ms, updated_ms,
                timezone, anonymous_ms)
            VALUES (?1, ?2, ?3, '', ?4, 'active', 1, ?5, ?5, ?6, ?5)
            """,
            [
                .text(id), .text(anonymousPlaceholder(id)), .text(displayName), .text(tier.rawValue), .integer(now),
                SQLValue(timezone),
            ])
        var user = User(
            id: id, email: anonymousPlaceholder(id), displayName: displayName, timezone: timezone, tier: tier, status: .active,
            version: 1, createdAt: Timestamp(milliseconds: now), updatedAt: Timestamp(milliseconds: now))
        user.anonymous = true
        try ChangeLog.append(
            [Change(topic: ChangeLog.userTopic(id), kind: .user, op: .added, entityID: id, document: user.documentBytes)],
            event: .userRegistered, actor: .user(id), at: now, on: db)
        return user
    }

    /// Makes anonymous account `userID` a real one in place (`POST /v1/me/upgrade`): same id, so its
    /// memberships, alarms, completions, devices and settings stay; `email` (normalised, unverified),
    /// `passwordHash`, optionally `displayName`; `migrated_ms` = now. Event `user_updated`. Throws
    /// `emailTaken` when another account has the address, `permissionDenied` when the account is not
    /// anonymous. `emailVerifiedAt`: the address is verified from then (Sign in with Apple/Google
    /// vouched for it); `passwordHash` empty: no password (an identity is its way to sign in).
    public static func upgrade(
        userID: String, email: String, passwordHash: String, displayName: String?, emailVerifiedAt: Int64? = nil,
        at now: Int64, on db: any SQLConnection
    ) throws -> User {
        guard var user = try user(id: userID, on: db) else { throw DomainError.notFound("user") }
        guard user.anonymous else { throw DomainError.permissionDenied("the account is not anonymous") }
        if try db.queryOne("SELECT 1 AS one FROM users WHERE email = ?1", [.text(email)]) != nil {
            throw DomainError.emailTaken
        }
        user.email = email
        user.anonymous = false
        user.migratedAt = Timestamp(milliseconds: now)
        user.emailVerified = emailVerifiedAt != nil
        if let displayName { user.displayName = displayName }
        user.version += 1
        user.updatedAt = Timestamp(milliseconds: now)
        try db.run(
            """
            UPDATE users SET email = ?2, password_hash = ?3, display_name = ?4, anonymous_ms = NULL, migrated_ms = ?5,
                version = ?6, updated_ms = ?5, email_verified_ms = ?7
            WHERE id = ?1
            """,
            [
                .text(userID), .text(email), .text(passwordHash), .text(user.displayName), .integer(now), .integer(user.version),
                SQLValue(emailVerifiedAt),
            ])
        var changes = [
            Change(topic: ChangeLog.userTopic(userID), kind: .user, op: .modified, entityID: userID, document: user.documentBytes)
        ]
        if displayName != nil { changes += try GroupStore.renamed(userID: userID, to: user.displayName, on: db) }
        try ChangeLog.append(changes, event: .userUpdated, actor: .user(userID), at: now, on: db)
        return user
    }

    /// How long an anonymous account may go unused before the retention sweep deletes it with its data
    /// (docs/apps.md#anonymous-start): 90 days since its last session use (`last_seen_ms`, else its creation).
    public static let anonymousIdleMilliseconds: Int64 = 90 * 86_400_000
    /// Anonymous accounts deleted per sweep at most: each is a whole account deletion.
    public static let anonymousPurgeBatch = 100

    /// Retention: deletes (`GroupStore.deleteAccount`, actor `system`) up to `anonymousPurgeBatch`
    /// anonymous accounts unused since before `cutoff`. Returns how many.
    public static func purgeIdleAnonymous(before cutoff: Int64, at now: Int64, on db: any SQLConnection) throws -> Int {
        let ids = try db.query(
            """
            SELECT id FROM users WHERE anonymous_ms IS NOT NULL AND deleted_ms IS NULL
                AND COALESCE(last_seen_ms, anonymous_ms) < ?1
            ORDER BY anonymous_ms LIMIT ?2
            """, [.integer(cutoff), .integer(Int64(anonymousPurgeBatch))]
        ).compactMap { $0.string("id") }
        for id in ids {
            try GroupStore.deleteAccount(userID: id, at: now, on: db, actor: .system, reason: "anonymous_idle")
        }
        return ids.count
    }

    /// The live (not deleted) account with this normalised email, and its password hash.
    public static func credentials(email: String, on db: any SQLConnection) throws -> (user: User, passwordHash: String)? {
        guard
            let row = try db.queryOne(
                "SELECT \(userColumns()), password_hash FROM users WHERE email = ?1 AND deleted_ms IS NULL",
                [.text(email)])
        else { return nil }
        return (try userFromRow(row), row.string("password_hash") ?? "")
    }

    /// The live account with this id.
    public static func user(id: String, on db: any SQLConnection) throws -> User? {
        guard
            let row = try db.queryOne(
                "SELECT \(userColumns()) FROM users WHERE id = ?1 AND deleted_ms IS NULL", [.text(id)])
        else { return nil }
        return try userFromRow(row)
    }

    /// The user-settable profile fields of one `PATCH /v1/me`, already validated (`AccountRules`):
    /// `nil` = leave as is; `.some(nil)` clears a nullable field.
    public struct ProfileChange: Sendable, Equatable {
        public var displayName: String?
        public var timezone: String??
        public var locale: String??
        public var avatarURL: String??
        public init(displayName: String? = nil, timezone: String?? = nil, locale: String?? = nil, avatarURL: String?? = nil) {
            self.displayName = displayName
            self.timezone = timezone
            self.locale = locale
            self.avatarURL = avatarURL
        }
    }

    /// Applies a profile change, bumping `version` and appending a change-log row on the user's own
    /// topic — and, when the display name changes, their member documents in every live group
    /// (`GroupStore.renamed`), in the same batch. `expectedVersion`, when given, must match the stored version, else
    /// `DomainError.versionConflict` carries the current document. Returns the user and its document
    /// as stored in the change log (`User.documentBytes`: the answer's body as is).
    public static func updateProfile(
        userID: String, change: ProfileChange, expectedVersion: Int64?, actor: Actor, at now: Int64, on db: any SQLConnection
    ) throws -> (user: User, document: [UInt8]) {
        // The user and, for a new name, the memberships to rename: read together (one round trip on
        // PostgreSQL); the memberships are used only when the name really changes. Safe as a
        // `.concurrent` write: the user row is locked first (`forUpdate`), so two changes of one
        // profile run one after the other, and the memberships are read after that lock; everything
        // written hangs off the user (their row, their member documents), and an `.immediate` write
        // that changes memberships never runs beside it.
        let renaming = change.displayName.map { GroupStore.membershipsToRename(userID: userID, to: $0) }
        let rows = try db.queryEach(
            [("SELECT \(userColumns()) FROM users WHERE id = ?1 AND deleted_ms IS NULL" + db.forUpdate, [.text(userID)])]
                + (renaming.map { [$0] } ?? []))
        guard var user = try rows[0].first.map(userFromRow) else { throw DomainError.notFound("user") }
        if let expectedVersion, expectedVersion != user.version {
            throw DomainError.versionConflict(current: user.documentBytes)
        }
        let renamed = change.displayName.map { $0 != user.displayName } ?? false
        if let displayName = change.displayName { user.displayName = displayName }
        if let timezone = change.timezone { user.timezone = timezone }
        if let locale = change.locale { user.locale = locale }
        if let avatarURL = change.avatarURL { user.avatarURL = avatarURL }
        user.version += 1
        user.updatedAt = Timestamp(milliseconds: now)
        // The row was just read in this transaction and no column written has a constraint to
        // catch: the UPDATE may travel with the next statement.
        try db.send(
            """
            UPDATE users SET display_name = ?2, timezone = ?3, version = ?4, updated_ms = ?5, locale = ?6, avatar_url = ?7
            WHERE id = ?1
            """,
            [
                .text(userID), .text(user.displayName), SQLValue(user.timezone), .integer(user.version), .integer(now),
                SQLValue(user.locale), SQLValue(user.avatarURL),
            ])
        let document = user.documentBytes
        let memberships = renamed ? try GroupStore.renamed(rows[1], to: user.displayName, on: db) : []
        try ChangeLog.append(
            [
                Change(
                    topic: ChangeLog.userTopic(userID), kind: .user, op: .modified, entityID: userID,
                    document: document)
            ] + memberships, event: .userUpdated, actor: actor, at: now, on: db)
        return (user, document)
    }

    static func userFromRow(_ row: Row) throws -> User {
        guard let id = row.string("id"), let email = row.string("email"),
            let displayName = row.string("display_name"),
            let tier = row.string("tier").flatMap(Tier.init(rawValue:)),
            let status = row.string("status").flatMap(UserStatus.init(rawValue:)),
            let version = row.int("version"), let created = row.int("created_ms"), let updated = row.int("updated_ms")
        else { throw StoreError.corruptRow(table: "users") }
        return User(
            id: id, email: email, displayName: displayName, timezone: row.string("timezone"), tier: tier,
            status: status, version: version, createdAt: Timestamp(milliseconds: created),
            updatedAt: Timestamp(milliseconds: updated), emailVerified: row.int("email_verified_ms") != nil,
            locale: row.string("locale"), avatarURL: row.string("avatar_url"),
            lastSeenAt: row.int("last_seen_ms").map(Timestamp.init(milliseconds:)),
            anonymous: row.int("anonymous_ms") != nil, migratedAt: row.int("migrated_ms").map(Timestamp.init(milliseconds:)))
    }
}

/// Failures inside the store that are not domain outcomes.
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A row violated an invariant the schema should guarantee (a bug or a hand-edited file).
    case corruptRow(table: String)

    public var description: String {
        switch self {
        case .corruptRow(let table): "a row in \(table) does not match the schema's invariants"
        }
    }
}
