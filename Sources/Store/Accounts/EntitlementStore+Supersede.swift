public import Domain
public import Storage

extension EntitlementStore {
    /// Ends a purchase another replaced — Google Play's `linkedPurchaseToken`: an upgrade, a downgrade or a
    /// re-subscription gives a new purchase token and the old one stops (docs/subscriptions.md#google-play).
    /// Its period ends at `now` (if later), it no longer renews, grace and billing retry are cleared, and its
    /// account is refreshed (with the new purchase already applied, the tier does not dip). Returns the
    /// account it is bound to (nil: none, or no such purchase).
    @discardableResult
    public static func supersede(
        source: EntitlementSource, storeID: String, by newStoreID: String, actor: Actor, at now: Int64, on db: any SQLConnection
    ) throws -> String? {
        let id = "\(source.rawValue):\(storeID)"
        guard let row = try db.queryOne("SELECT user_id FROM purchases WHERE id = ?1", [.text(id)]) else { return nil }
        let owner = row.string("user_id")
        let before = try owner.map { try entitlement(userID: $0, at: now, on: db) }
        try db.run(
            """
            UPDATE purchases SET expires_ms = CASE WHEN expires_ms IS NULL OR expires_ms > ?2 THEN ?2 ELSE expires_ms END,
                grace_expires_ms = NULL, billing_retry = 0, auto_renewing = 0, updated_ms = ?2
            WHERE id = ?1
            """, [.text(id), .integer(now)])
        if let owner {
            try refresh(
                userID: owner, cause: .purchase, detail: "\(id) superseded by \(source.rawValue):\(newStoreID)", actor: actor, at: now,
                unlessStill: before, on: db)
        }
        return owner
    }
}
