public import Domain
import Hashing
import IPAddresses
public import Storage

/// Bearer-token sessions. Only SHA-256(token) is stored; a token expires after `idleLifetime`
/// without use and is revoked by logout. `last_used_ms` is refreshed at most once per
/// `touchInterval`, so authenticating a request is a read, not a write, almost always. Logout and
/// the other revocations: `SessionStore+Management.swift`.
public enum SessionStore {
    /// A session expires after 30 days without use.
    public static let idleLifetimeMilliseconds: Int64 = 30 * 24 * 3600 * 1000
    /// How stale `last_used_ms` may get before a request refreshes it.
    public static let touchIntervalMilliseconds: Int64 = 3600 * 1000

    /// Records a new session for `userID` under a fresh public id (`newPublicID`), which it returns.
    /// Signing in is being seen: the account's `last_seen_ms` becomes `now`.
    @discardableResult
    public static func create(
        tokenHash: [UInt8], userID: String, userAgent: String?, clientIP: String?, at now: Int64, on db: any SQLConnection
    ) throws -> String {
        let publicID = newPublicID()
        try db.run(
            """
            INSERT INTO sessions (token_hash, user_id, created_ms, last_used_ms, expires_ms, user_agent, client_ip, public_id)
            VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6, ?7)
            """,
            [
                .blob(tokenHash), .text(userID), .integer(now), .integer(now + idleLifetimeMilliseconds),
                userAgent.map { .text(String($0.prefix(256))) } ?? .null, clientIP.map { .text($0) } ?? .null,
                .text(publicID),
            ])
        try db.run(
            "UPDATE users SET last_seen_ms = ?2 WHERE id = ?1 AND (last_seen_ms IS NULL OR last_seen_ms < ?2)",
            [.text(userID), .integer(now)])
        return publicID
    }

    /// A session's public id: 128 random bits as 32 lowercase hex characters (the form migration
    /// 0016 gave existing sessions). It names the session to its owner and to operators; unlike the
    /// token hash it says nothing about the token.
    public static func newPublicID() -> String { Hex.encode(SecureRandom.bytes(16)) }

    /// What a token currently grants.
    public struct Lookup: Sendable {
        public var user: User
        /// The session's public id (`newPublicID`).
        public var sessionID: String
        /// Whether the caller should call `touch` (last use is older than the touch interval).
        public var needsTouch: Bool
        /// When the session lapses unless it is used (touched) before then.
        public var expiresAt: Int64
    }

    /// The active user behind a live session, or nil for unknown, revoked, expired tokens and
    /// deleted accounts. Suspended users are returned; the caller refuses them with `accountSuspended`.
    /// One statement: callers may run it as a `.statement` read (`SQLDatabase.readStatement`).
    public static func lookup(tokenHash: [UInt8], at now: Int64, on db: any SQLConnection) throws -> Lookup? {
        try lookup(db.queryOne(lookupSQL, lookupBindings(tokenHash: tokenHash, at: now)), at: now)
    }

    /// `lookup` started with `SQLConnection.prefetch` inside a write, so it travels with the write's
    /// first statement (`Services.writeAsUser`); its `result()` is read before the write ends.
    public static func prefetchLookup(tokenHash: [UInt8], at now: Int64, on db: any SQLConnection) throws -> PendingLookup {
        PendingLookup(row: try db.prefetch(lookupSQL, lookupBindings(tokenHash: tokenHash, at: now)), now: now)
    }

    /// A `lookup` on its way (`prefetchLookup`). Confined to the write that started it.
    public struct PendingLookup {
        let row: PrefetchedRow
        let now: Int64

        /// What `lookup` would answer; sends the read first when nothing carried it yet.
        public func result() throws -> Lookup? { try lookup(row.row(), at: now) }
    }

    /// What the row of `lookupSQL` grants (nil for none), as `lookup` answers.
    private static func lookup(_ row: Row?, at now: Int64) throws -> Lookup? {
        guard let row else { return nil }
        let lastUsed = row.int("last_used_ms") ?? 0
        guard let sessionID = row.string("public_id") else { throw StoreError.corruptRow(table: "sessions") }
        return Lookup(
            user: try AccountStore.userFromRow(row), sessionID: sessionID, needsTouch: now - lastUsed >= touchIntervalMilliseconds,
            expiresAt: row.int("expires_ms") ?? now)
    }

    private static let lookupSQL = """
        SELECT s.last_used_ms AS last_used_ms, s.expires_ms AS expires_ms, s.public_id AS public_id,
            \(AccountStore.userColumns("u"))
        FROM sessions s JOIN users u ON u.id = s.user_id
        WHERE s.token_hash = ?1 AND s.revoked_ms IS NULL AND s.expires_ms > ?2 AND u.deleted_ms IS NULL
        """

    private static func lookupBindings(tokenHash: [UInt8], at now: Int64) -> [SQLValue] { [.blob(tokenHash), .integer(now)] }

    /// Slides the idle expiry forward from `now`, and sets the account's `last_seen_ms` to `now` (the
    /// user document's `last_seen_at`): one write at most per `touchInterval` per session, never one
    /// per request. `last_seen_ms` only moves forward (another session may have touched later).
    ///
    /// A `.concurrent` write: the session's row and its account's are locked first, in one statement
    /// (`SQLConnection.forUpdate`: a batch's later write that finds either taken runs again first in
    /// the next transaction), so the two updates, sent with the COMMIT, never wait inside a batch.
    public static func touch(tokenHash: [UInt8], at now: Int64, on db: any SQLConnection) throws {
        let locked = try db.queryOne(
            """
            SELECT s.user_id AS user_id FROM sessions s JOIN users u ON u.id = s.user_id
            WHERE s.token_hash = ?1 AND s.revoked_ms IS NULL
            """ + db.forUpdate,
            [.blob(tokenHash)])
        guard let userID = locked?.string("user_id") else { return }
        try db.send(
            "UPDATE sessions SET last_used_ms = ?2, expires_ms = ?3 WHERE token_hash = ?1",
            [.blob(tokenHash), .integer(now), .integer(now + idleLifetimeMilliseconds)])
        try db.send(
            "UPDATE users SET last_seen_ms = ?2 WHERE id = ?1 AND (last_seen_ms IS NULL OR last_seen_ms < ?2)",
            [.text(userID), .integer(now)])
    }
}

/// Failed-login records, counted per subject (`email:<addr>`, `email:<addr> net:<network>`,
/// `ip:<network>`) by `LoginThrottle`. Kept in the database so limits hold across restarts and across
/// server processes.
public enum LoginFailureStore {
    /// Subject key for an email address (failures from every network).
    public static func emailSubject(_ email: String) -> String { "email:\(email)" }
    /// Subject key for an email address guessed from one client network. A normalised email holds no
    /// space, so `email:<addr> net:` is a prefix no other subject shares.
    public static func emailNetworkSubject(_ email: String, ip: String) -> String {
        "\(emailNetworkPrefix(email))\(ClientNetwork.rateLimitKey(ip))"
    }
    static func emailNetworkPrefix(_ email: String) -> String { "email:\(email) net:" }
    /// Subject key for password-reset requests naming an address (`POST /v1/auth/password-reset`).
    public static func resetSubject(_ email: String) -> String { "reset:" + emailSubject(email) }
    /// Subject key for a client IP address (an IPv6 client counts as its /64).
    public static func ipSubject(_ ip: String) -> String { "ip:\(ClientNetwork.rateLimitKey(ip))" }

    /// Deletes every failure recorded for `email`, from all networks, and its password-reset requests
    /// (account deletion).
    public static func clearAll(email: String, on db: any SQLConnection) throws {
        let prefix = emailNetworkPrefix(email)
        // The range [prefix, prefix with its last character ':' raised to ';') is exactly the
        // subjects starting with `prefix`, and it searches the subject index (LIKE would not).
        try db.run(
            "DELETE FROM login_failures WHERE subject IN (?1, ?4) OR (subject >= ?2 AND subject < ?3)",
            [.text(emailSubject(email)), .text(prefix), .text(String(prefix.dropLast()) + ";"), .text(resetSubject(email))])
    }

    /// Failure times for `subject` inside the window ending at `now`.
    public static func failureTimes(
        subject: String, window: AttemptWindow, at now: Int64, on db: any SQLConnection
    ) throws -> [Int64] {
        try db.query(
            "SELECT at_ms FROM login_failures WHERE subject = ?1 AND at_ms > ?2 ORDER BY at_ms",
            [.text(subject), .integer(window.windowStart(now: now))]
        ).compactMap { $0.int("at_ms") }
    }

    /// Records one failure for each subject; returns the new rows' ids.
    @discardableResult
    public static func record(subjects: [String], at now: Int64, on db: any SQLConnection) throws -> [Int64] {
        var ids: [Int64] = []
        for subject in subjects {
            let id = try db.scalar(
                "INSERT INTO login_failures (subject, at_ms) VALUES (?1, ?2) RETURNING id", [.text(subject), .integer(now)])
            guard case .integer(let id) = id else { throw StoreError.corruptRow(table: "login_failures") }
            ids.append(id)
        }
        return ids
    }

    /// Deletes the failure rows `ids` (an attempt recorded up front that turned out to succeed).
    public static func forget(ids: [Int64], on db: any SQLConnection) throws {
        for id in ids { try db.run("DELETE FROM login_failures WHERE id = ?1", [.integer(id)]) }
    }

    /// Forgets the failures of `subject` (after a successful login for that email).
    public static func clear(subject: String, on db: any SQLConnection) throws {
        try db.run("DELETE FROM login_failures WHERE subject = ?1", [.text(subject)])
    }

    /// Deletes records older than `olderThan` (retention sweep).
    @discardableResult
    public static func purge(olderThan cutoff: Int64, on db: any SQLConnection) throws -> Int {
        try db.run("DELETE FROM login_failures WHERE at_ms < ?1", [.integer(cutoff)])
    }
}
