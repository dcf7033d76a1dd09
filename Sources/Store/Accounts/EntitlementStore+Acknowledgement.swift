public import Storage

/// Google Play acknowledgements to try again (migration 0040; docs/subscriptions.md#google-play): Google
/// refunds a purchase not acknowledged within three days, so one that failed is not left to chance.
extension EntitlementStore {
    /// A Play purchase whose acknowledgement is due again.
    public struct AcknowledgementDue: Sendable, Equatable {
        /// The purchase token.
        public var token: String
        /// Its product (the acknowledge call names it).
        public var productID: String
    }

    /// Play purchases whose acknowledgement is due at `now`, oldest first, at most `limit`.
    public static func playAcknowledgementsDue(at now: Int64, limit: Int, on db: any SQLConnection) throws -> [AcknowledgementDue] {
        try db.query(
            "SELECT store_id, product_id FROM purchases WHERE source = 'play' AND ack_due_ms <= ?1 ORDER BY ack_due_ms, store_id LIMIT ?2",
            [.integer(now), .integer(Int64(limit))]
        ).compactMap { row in
            guard let token = row.string("store_id"), let product = row.string("product_id") else { return nil }
            return AcknowledgementDue(token: token, productID: product)
        }
    }

    /// Schedules (a time) or clears (nil) the next acknowledgement attempt of the Play purchase `token`.
    public static func setPlayAcknowledgementDue(token: String, at due: Int64?, on db: any SQLConnection) throws {
        try db.run(
            "UPDATE purchases SET ack_due_ms = ?2 WHERE source = 'play' AND store_id = ?1", [.text(token), SQLValue(due)])
    }
}
