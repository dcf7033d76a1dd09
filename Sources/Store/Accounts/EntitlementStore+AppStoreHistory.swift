public import Storage

/// Where the App Store Get Notification History catch-up stands (migration 0041;
/// docs/subscriptions.md#app-store-server-api).
extension EntitlementStore {
    /// The catch-up's state.
    public struct AppStoreHistoryCursor: Sendable, Equatable {
        /// End of the last catch-up that read every page; nil: never caught up.
        public var caughtUpMilliseconds: Int64?
        /// A catch-up in progress (stopped at its page cap): its window and the next page's token.
        public var pending: (start: Int64, end: Int64, pageToken: String)?

        /// A cursor; see the properties.
        public init(caughtUpMilliseconds: Int64?, pending: (start: Int64, end: Int64, pageToken: String)?) {
            self.caughtUpMilliseconds = caughtUpMilliseconds
            self.pending = pending
        }

        /// Equal when every field is.
        public static func == (a: Self, b: Self) -> Bool {
            a.caughtUpMilliseconds == b.caughtUpMilliseconds && a.pending?.start == b.pending?.start
                && a.pending?.end == b.pending?.end && a.pending?.pageToken == b.pending?.pageToken
        }
    }

    /// The stored cursor (empty before the first catch-up).
    public static func appStoreHistoryCursor(on db: any SQLConnection) throws -> AppStoreHistoryCursor {
        guard let row = try db.queryOne("SELECT * FROM appstore_history WHERE id = 1") else {
            return AppStoreHistoryCursor(caughtUpMilliseconds: nil, pending: nil)
        }
        var pending: (start: Int64, end: Int64, pageToken: String)?
        if let start = row.int("window_start_ms"), let end = row.int("window_end_ms"), let token = row.string("page_token") {
            pending = (start, end, token)
        }
        return AppStoreHistoryCursor(caughtUpMilliseconds: row.int("caught_up_ms"), pending: pending)
    }

    /// Every page of the window up to `end` was applied: the next catch-up starts from `end`; none in progress.
    public static func appStoreHistoryCaughtUp(until end: Int64, on db: any SQLConnection) throws {
        try db.run(
            """
            INSERT INTO appstore_history (id, caught_up_ms) VALUES (1, ?1)
            ON CONFLICT (id) DO UPDATE SET caught_up_ms = ?1, window_start_ms = NULL, window_end_ms = NULL, page_token = NULL
            """, [.integer(end)])
    }

    /// The window `start`..<`end` was applied up to the page `pageToken` names: the next pass goes on from it.
    public static func appStoreHistoryPending(start: Int64, end: Int64, pageToken: String, on db: any SQLConnection) throws {
        try db.run(
            """
            INSERT INTO appstore_history (id, window_start_ms, window_end_ms, page_token) VALUES (1, ?1, ?2, ?3)
            ON CONFLICT (id) DO UPDATE SET window_start_ms = ?1, window_end_ms = ?2, page_token = ?3
            """, [.integer(start), .integer(end), .text(pageToken)])
    }
}
