public import Storage

/// When the server reads an App Store purchase's status from the App Store Server API (migration 0039;
/// docs/subscriptions.md#app-store-server-api): once after its period ends without data saying what
/// came next (a renewal or refund whose notification was lost), once a day while it is active, when an
/// operator asks for it, and again after a refresh that failed.
extension EntitlementStore {
    /// An App Store purchase due for a status refresh.
    public struct RefreshDue: Sendable, Equatable {
        /// The purchase's `originalTransactionId`.
        public var storeID: String
        /// The account it is bound to.
        public var userID: String
    }

    /// App Store purchases bound to an account whose refresh is due at `now`, oldest cue first, at most
    /// `limit`: one asked for or retried (`api_refresh_due_ms` reached); one not revoked whose period
    /// ended after `since` (and after the last refresh) with none pending; or, with none pending, one
    /// active (not revoked, period not ended) whose last refresh — or, never refreshed, whose creation —
    /// is `dailyEvery` or more before `now` (the daily refresh; each purchase's cue is its own last
    /// check, so purchases are spread over the day as they were bought).
    public static func appStoreRefreshesDue(
        at now: Int64, since: Int64, dailyEvery: Int64, limit: Int, on db: any SQLConnection
    ) throws -> [RefreshDue] {
        try db.query(
            """
            SELECT store_id, user_id FROM purchases
            WHERE source = 'app_store' AND user_id IS NOT NULL
              AND (api_refresh_due_ms <= ?1
                   OR (api_refresh_due_ms IS NULL AND revoked_ms IS NULL AND expires_ms <= ?1 AND expires_ms > ?2
                       AND (api_checked_ms IS NULL OR api_checked_ms < expires_ms))
                   OR (api_refresh_due_ms IS NULL AND revoked_ms IS NULL AND expires_ms > ?1
                       AND COALESCE(api_checked_ms, created_ms) <= ?1 - ?4))
            ORDER BY COALESCE(api_refresh_due_ms, CASE WHEN expires_ms <= ?1 THEN expires_ms
                                                       ELSE COALESCE(api_checked_ms, created_ms) + ?4 END), store_id
            LIMIT ?3
            """, [.integer(now), .integer(since), .integer(Int64(limit)), .integer(dailyEvery)]
        ).compactMap { row in
            guard let storeID = row.string("store_id"), let userID = row.string("user_id") else { return nil }
            return RefreshDue(storeID: storeID, userID: userID)
        }
    }

    /// Asks for a refresh of every App Store purchase bound to `userID` at `now` (chronir-admin
    /// purchases refresh); returns how many.
    public static func requestAppStoreRefresh(userID: String, at now: Int64, on db: any SQLConnection) throws -> Int {
        try db.run(
            "UPDATE purchases SET api_refresh_due_ms = ?2 WHERE user_id = ?1 AND source = 'app_store'", [.text(userID), .integer(now)])
    }

    /// The API answered for the purchase at `now`: no refresh pending until its period ends again or a
    /// day has passed.
    public static func appStoreRefreshed(storeID: String, at now: Int64, on db: any SQLConnection) throws {
        try db.run(
            "UPDATE purchases SET api_checked_ms = ?2, api_refresh_due_ms = NULL WHERE source = 'app_store' AND store_id = ?1",
            [.text(storeID), .integer(now)])
    }

    /// The refresh failed: tried again at `retryAt`.
    public static func deferAppStoreRefresh(storeID: String, until retryAt: Int64, on db: any SQLConnection) throws {
        try db.run(
            "UPDATE purchases SET api_refresh_due_ms = ?2 WHERE source = 'app_store' AND store_id = ?1",
            [.text(storeID), .integer(retryAt)])
    }
}
