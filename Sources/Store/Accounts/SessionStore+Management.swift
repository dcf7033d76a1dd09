import Domain
import IPAddresses
public import Storage

/// A user's sessions as they see them (`GET /v1/me/sessions`, `chronir-admin users sessions`), and
/// revoking them one at a time or all but one.
///
/// Every revocation appends one change-log batch in the same transaction (event `sessions_revoked`):
/// one row per session on the `system` topic — kind `session`, op `removed`, entity id the public
/// id, no document — which no client subscribes to. Each server process's realtime feed reads the
/// log and closes those sessions' sockets (4003): this process's, another instance's, and a live
/// server's when chronir-admin revoked. A revoked session's devices are dropped as at logout (the
/// phone signed out gets no more pushes).
extension SessionStore {
    /// One live session, without its token hash.
    public struct Record: Sendable, Equatable {
        /// The public id (`newPublicID`).
        public var id: String
        public var createdAt: Int64
        public var lastUsedAt: Int64
        /// When it lapses unless used before then.
        public var expiresAt: Int64
        /// The `User-Agent` of the request that signed in (at most 256 characters).
        public var userAgent: String?
        /// The client address that signed in; shown to users only coarsened (`network`).
        public var clientIP: String?

        /// What the session's user is shown of `clientIP`: `ClientNetwork.coarse` of it — where, not
        /// exactly where; nil when unknown.
        public var network: String? { clientIP.flatMap(ClientNetwork.coarse) }
    }

    /// Most sessions `live(userID:)` returns, most recently used first (named bound: the answer
    /// stays one page however often an account signed in within the idle lifetime; older ones are
    /// still revoked by `revokeAll`).
    public static let maxListedSessions = 200

    /// Why sessions were revoked: the change-log row's `reason` (audit trail only).
    public struct RevocationReason: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The session logged itself out (`POST /v1/auth/logout`).
        public static let loggedOut = RevocationReason(rawValue: "logged_out")
        /// The user signed one session out (`DELETE /v1/me/sessions/{id}`).
        public static let signedOut = RevocationReason(rawValue: "signed_out")
        /// The user signed out every other session.
        public static let signedOutElsewhere = RevocationReason(rawValue: "signed_out_elsewhere")
        /// The password changed: every other session ends.
        public static let passwordChanged = RevocationReason(rawValue: "password_changed")
        /// The password was reset through a mailed link: every session ends.
        public static let passwordReset = RevocationReason(rawValue: "password_reset")
        /// An operator revoked them (chronir-admin).
        public static let operatorRevoked = RevocationReason(rawValue: "operator")
        /// The account was suspended (`AccountModeration.setStatus`): every session ends.
        public static let accountSuspended = RevocationReason(rawValue: "account_suspended")
    }

    /// The user's live sessions (not revoked, not lapsed at `now`), most recently used first, at
    /// most `maxListedSessions`.
    public static func live(userID: String, at now: Int64, on db: any SQLConnection) throws -> [Record] {
        try db.query(
            """
            SELECT public_id, created_ms, last_used_ms, expires_ms, user_agent, client_ip FROM sessions
            WHERE user_id = ?1 AND revoked_ms IS NULL AND expires_ms > ?2
            ORDER BY last_used_ms DESC, public_id LIMIT ?3
            """, [.text(userID), .integer(now), .integer(Int64(maxListedSessions))]
        ).map { row in
            guard let id = row.string("public_id"), let created = row.int("created_ms"),
                let lastUsed = row.int("last_used_ms"), let expires = row.int("expires_ms")
            else { throw StoreError.corruptRow(table: "sessions") }
            return Record(
                id: id, createdAt: created, lastUsedAt: lastUsed, expiresAt: expires, userAgent: row.string("user_agent"),
                clientIP: row.string("client_ip"))
        }
    }

    /// Revokes the live session `sessionID` of `userID`. False — and nothing written — when there is
    /// none: unknown, another user's, already revoked or lapsed (the caller answers 404 for all
    /// alike, so nobody learns whether another user's session exists).
    @discardableResult
    public static func revoke(
        sessionID: String, userID: String, actor: Actor, reason: RevocationReason, at now: Int64, on db: any SQLConnection
    ) throws -> Bool {
        let revoked = try db.query(
            """
            UPDATE sessions SET revoked_ms = ?3
            WHERE public_id = ?1 AND user_id = ?2 AND revoked_ms IS NULL AND expires_ms > ?3
            RETURNING token_hash, public_id
            """, [.text(sessionID), .text(userID), .integer(now)])
        return try ended(revoked, actor: actor, reason: reason, at: now, on: db) > 0
    }

    /// Revokes every session of `userID` that is not yet revoked, except the one whose token hash is
    /// `keeping` (the caller's own, when given). Returns how many were revoked.
    @discardableResult
    public static func revokeAll(
        userID: String, keeping: [UInt8]?, actor: Actor, reason: RevocationReason, at now: Int64, on db: any SQLConnection
    ) throws -> Int {
        let revoked: [Row]
        if let keeping {
            revoked = try db.query(
                """
                UPDATE sessions SET revoked_ms = ?2 WHERE user_id = ?1 AND revoked_ms IS NULL AND token_hash <> ?3
                RETURNING token_hash, public_id
                """, [.text(userID), .integer(now), .blob(keeping)])
        } else {
            revoked = try db.query(
                "UPDATE sessions SET revoked_ms = ?2 WHERE user_id = ?1 AND revoked_ms IS NULL RETURNING token_hash, public_id",
                [.text(userID), .integer(now)])
        }
        return try ended(revoked, actor: actor, reason: reason, at: now, on: db)
    }

    /// After the `UPDATE … RETURNING token_hash, public_id` of a revocation: drops the sessions'
    /// devices and appends the `sessions_revoked` batch. Returns how many sessions ended.
    private static func ended(
        _ rows: [Row], actor: Actor, reason: RevocationReason, at now: Int64, on db: any SQLConnection
    ) throws -> Int {
        var changes: [Change] = []
        // Sorted: the batch's rows (and so the log's hash chain) do not depend on the scan order.
        for row in rows.sorted(by: { ($0.string("public_id") ?? "") < ($1.string("public_id") ?? "") }) {
            guard let hash = row.blob("token_hash"), let id = row.string("public_id") else {
                throw StoreError.corruptRow(table: "sessions")
            }
            try DeviceStore.deleteRegistered(bySession: hash, on: db)
            changes.append(
                Change(
                    topic: ChangeLog.systemTopic, kind: .session, op: .removed, entityID: id, document: nil,
                    reason: reason.rawValue))
        }
        guard !changes.isEmpty else { return 0 }
        try ChangeLog.append(changes, event: .sessionsRevoked, actor: actor, at: now, on: db)
        return changes.count
    }
}
