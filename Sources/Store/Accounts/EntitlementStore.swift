public import Domain
public import Storage

/// Purchases, operator grants and the account's derived tier (migration 0030; docs/subscriptions.md).
/// Every mutation ends in `refresh`, in the same transaction: the tier written to `users.tier` is
/// always the highest tier among the account's entitlements that grant access at `now`, a changed
/// tier appends its `user_tier_changed` batch and a `tier_changes` row, and every change appends an
/// `entitlement` row on the user's topic and queues an `entitlement_changed` push.
public enum EntitlementStore {
    /// Why a tier changed (`tier_changes.cause`).
    public struct Cause: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The app posted a verified purchase.
        public static let purchase = Cause(rawValue: "purchase")
        /// A store notification (App Store Server Notification, Play RTDN).
        public static let notification = Cause(rawValue: "notification")
        /// A period or grace period ran out (the expiry sweep).
        public static let expiry = Cause(rawValue: "expiry")
        /// chronir-admin users set-tier.
        public static let `operator` = Cause(rawValue: "operator")
        /// A purchase moved to another account (`--purchase-transfer transfer`).
        public static let transfer = Cause(rawValue: "transfer")
        /// The server read the subscription's status from the store's server API (App Store Server API).
        public static let refresh = Cause(rawValue: "refresh")
    }

    /// What a store's verified data says about one subscription (one purchase row).
    public struct PurchaseUpdate: Sendable, Equatable {
        public var source: EntitlementSource
        /// originalTransactionId / purchase token.
        public var storeID: String
        public var transactionID: String
        public var productID: String
        public var tier: Tier
        public var environment: String
        public var startsAt: Int64?
        public var expiresAt: Int64?
        public var graceExpiresAt: Int64?
        public var billingRetry: Bool
        /// nil: not known from this data (no renewal info) — a new purchase assumes it renews, a known
        /// one keeps what it had.
        public var autoRenewing: Bool?
        public var revokedAt: Int64?
        /// The store's signedDate: older data than what was applied is not applied again.
        public var signedAt: Int64

        public init(
            source: EntitlementSource, storeID: String, transactionID: String, productID: String, tier: Tier, environment: String,
            startsAt: Int64?, expiresAt: Int64?, graceExpiresAt: Int64?, billingRetry: Bool, autoRenewing: Bool?, revokedAt: Int64?,
            signedAt: Int64
        ) {
            self.source = source
            self.storeID = storeID
            self.transactionID = transactionID
            self.productID = productID
            self.tier = tier
            self.environment = environment
            self.startsAt = startsAt
            self.expiresAt = expiresAt
            self.graceExpiresAt = graceExpiresAt
            self.billingRetry = billingRetry
            self.autoRenewing = autoRenewing
            self.revokedAt = revokedAt
            self.signedAt = signedAt
        }

        var purchaseID: String { "\(source.rawValue):\(storeID)" }
    }

    /// A stored purchase as `chronir-admin purchases` shows it.
    public struct Purchase: Sendable, Equatable, Encodable {
        public var id: String
        public var source: String
        public var storeID: String
        public var userID: String?
        public var productID: String
        public var tier: String
        public var environment: String
        public var state: String
        public var expiresMs: Int64?
        public var graceExpiresMs: Int64?
        public var autoRenewing: Bool
        public var revokedMs: Int64?
        public var updatedMs: Int64

        enum CodingKeys: String, CodingKey {
            case id, source, tier, environment, state
            case storeID = "store_id"
            case userID = "user_id"
            case productID = "product_id"
            case expiresMs = "expires_ms"
            case graceExpiresMs = "grace_expires_ms"
            case autoRenewing = "auto_renewing"
            case revokedMs = "revoked_ms"
            case updatedMs = "updated_ms"
        }
    }

    // MARK: Reads

    /// The account's entitlements: its bound purchases and its operator grant.
    public static func records(userID: String, on db: any SQLConnection) throws -> [EntitlementRecord] {
        let purchases = try db.query(
            """
            SELECT source, product_id, tier, expires_ms, grace_expires_ms, billing_retry, auto_renewing, revoked_ms
            FROM purchases WHERE user_id = ?1
            """, [.text(userID)]
        ).map { row in
            EntitlementRecord(
                source: EntitlementSource(rawValue: row.string("source") ?? "") ?? .appStore, productID: row.string("product_id"),
                tier: Tier(rawValue: row.string("tier") ?? "") ?? .free, expiresAt: row.int("expires_ms"),
                graceExpiresAt: row.int("grace_expires_ms"), billingRetry: row.int("billing_retry") == 1,
                autoRenewing: row.int("auto_renewing") == 1, revokedAt: row.int("revoked_ms"))
        }
        let grants = try db.query("SELECT tier, expires_ms FROM operator_grants WHERE user_id = ?1", [.text(userID)]).map { row in
            EntitlementRecord(
                source: .operator, productID: nil, tier: Tier(rawValue: row.string("tier") ?? "") ?? .free,
                expiresAt: row.int("expires_ms"))
        }
        return purchases + grants
    }

    /// The account's entitlement at `now` (`GET /v1/me/entitlement`).
    public static func entitlement(userID: String, at now: Int64, on db: any SQLConnection) throws -> Entitlement {
        Entitlement.derive(from: try records(userID: userID, on: db), at: now)
    }

    /// The error for an account below `needed`: `subscriptionExpired` when it held that tier through an
    /// entitlement that has lapsed, else `tierRequired` (docs/subscriptions.md#downgrade).
    public static func tierError(userID: String, needed: Tier, what: String, at now: Int64, on db: any SQLConnection) throws
        -> DomainError
    {
        if let lapsed = Entitlement.lapsedTier(of: try records(userID: userID, on: db), at: now), lapsed >= needed {
            return .subscriptionExpired("\(what) (the subscription has ended)")
        }
        return .tierRequired(what)
    }

    /// Premium → lower (docs/subscriptions.md#downgrade): a group whose owner's premium came from an
    /// entitlement that has lapsed takes no new members and no new shared alarms — 403
    /// `subscriptionExpired` naming `what` — until the owner is premium again. An owner who never had
    /// it through an entitlement (an operator took a grant away) is not refused here.
    static func checkOwnerSubscription(groupID: String, what: String, at now: Int64, on db: any SQLConnection) throws {
        guard
            let row = try db.queryOne(
                "SELECT u.id, u.tier FROM groups g JOIN users u ON u.id = g.owner_id WHERE g.id = ?1", [.text(groupID)]),
            let ownerID = row.string("id"), row.string("tier") != Tier.premium.rawValue
        else { return }
        if case .subscriptionExpired = try tierError(userID: ownerID, needed: .premium, what: what, at: now, on: db) {
            throw DomainError.subscriptionExpired("\(what): the owner's premium subscription has ended")
        }
    }

    /// The purchases bound to an account (or every purchase when `userID` is nil), newest first.
    public static func purchases(userID: String?, limit: Int = 200, on db: any SQLConnection) throws -> [Purchase] {
        try db.query(
            """
            SELECT id, source, store_id, user_id, product_id, tier, environment, state, expires_ms, grace_expires_ms,
                auto_renewing, revoked_ms, updated_ms
            FROM purchases WHERE CAST(?1 AS TEXT) IS NULL OR user_id = ?1 ORDER BY updated_ms DESC, id LIMIT ?2
            """, [SQLValue(userID), .integer(Int64(limit))]
        ).map { row in
            Purchase(
                id: row.string("id") ?? "", source: row.string("source") ?? "", storeID: row.string("store_id") ?? "",
                userID: row.string("user_id"), productID: row.string("product_id") ?? "", tier: row.string("tier") ?? "",
                environment: row.string("environment") ?? "", state: row.string("state") ?? "", expiresMs: row.int("expires_ms"),
                graceExpiresMs: row.int("grace_expires_ms"), autoRenewing: row.int("auto_renewing") == 1,
                revokedMs: row.int("revoked_ms"), updatedMs: row.int("updated_ms") ?? 0)
        }
    }

    /// The account a purchase is bound to (nil: unknown purchase or unbound).
    public static func owner(source: EntitlementSource, storeID: String, on db: any SQLConnection) throws -> (known: Bool, userID: String?)
    {
        guard let row = try db.queryOne("SELECT user_id FROM purchases WHERE id = ?1", [.text("\(source.rawValue):\(storeID)")]) else {
            return (false, nil)
        }
        return (true, row.string("user_id"))
    }

    /// A store subscription of the account that the store will go on renewing (auto-renewal on, not
    /// revoked, not expired): what deleting the account cannot cancel (docs/subscriptions.md#account-deletion).
    public struct RenewingSubscription: Sendable, Equatable, Encodable {
        public var store: EntitlementSource
        public var platform: String?
        public var productID: String
        public var expiresAt: Timestamp?
        /// Where the user cancels it: the store's subscription management page.
        public var manageURL: String

        enum CodingKeys: String, CodingKey {
            case store, platform
            case productID = "product_id"
            case expiresAt = "expires_at"
            case manageURL = "manage_url"
        }
    }

    /// The account's store subscriptions that renew on (`RenewingSubscription`); `playPackage` names the
    /// app in Google Play's management link.
    public static func renewingSubscriptions(userID: String, playPackage: String?, on db: any SQLConnection) throws
        -> [RenewingSubscription]
    {
        try db.query(
            """
            SELECT source, product_id, expires_ms FROM purchases
            WHERE user_id = ?1 AND auto_renewing = 1 AND revoked_ms IS NULL AND state IN ('active', 'grace', 'billing_retry')
            ORDER BY id
            """, [.text(userID)]
        ).compactMap { row in
            guard let source = EntitlementSource(rawValue: row.string("source") ?? ""), let product = row.string("product_id") else {
                return nil
            }
            let manage =
                source == .play
                ? "https://play.google.com/store/account/subscriptions?sku=\(product)"
                    + (playPackage.map { "&package=\($0)" } ?? "")
                : "https://apps.apple.com/account/subscriptions"
            return RenewingSubscription(
                store: source, platform: source.platform, productID: product,
                expiresAt: row.int("expires_ms").map(Timestamp.init(milliseconds:)), manageURL: manage)
        }
    }

    /// When the purchase was revoked (refunded), if it is known and was: a store that re-reads state
    /// (Google Play) keeps a revocation the state it reads no longer shows.
    public static func revokedAt(source: EntitlementSource, storeID: String, on db: any SQLConnection) throws -> Int64? {
        try db.queryOne("SELECT revoked_ms FROM purchases WHERE id = ?1", [.text("\(source.rawValue):\(storeID)")])?.int("revoked_ms")
    }

    /// The tier changes of an account, oldest first (audit; chronir-admin purchases show).
    public static func tierChanges(userID: String, on db: any SQLConnection) throws -> [(
        from: String, to: String, cause: String, detail: String?, at: Int64
    )] {
        try db.query(
            "SELECT from_tier, to_tier, cause, detail, at_ms FROM tier_changes WHERE user_id = ?1 ORDER BY at_ms, id", [.text(userID)]
        ).map {
            ($0.string("from_tier") ?? "", $0.string("to_tier") ?? "", $0.string("cause") ?? "", $0.string("detail"), $0.int("at_ms") ?? 0)
        }
    }

    // MARK: Writes

    /// Records what a store says about a purchase and binds it to `userID` (nil: keep the current
    /// binding, for notifications). Data older (`signedAt`) than what was applied leaves the period
    /// alone (the transaction is still recorded). Refreshes the bound account — and the account it
    /// was bound to before, on a transfer — publishing only what changed (posting the same transaction
    /// again, or stale data, tells nobody anything). Returns the account now bound (nil: none) and
    /// whether the store data was applied (false: older than what the purchase has).
    @discardableResult
    public static func apply(
        _ update: PurchaseUpdate, bindTo userID: String?, cause: Cause, actor: Actor, at now: Int64, on db: any SQLConnection
    ) throws -> (userID: String?, applied: Bool) {
        let existing = try db.queryOne("SELECT user_id, signed_ms FROM purchases WHERE id = ?1", [.text(update.purchaseID)])
        let previousOwner = existing?.string("user_id")
        let owner = userID ?? previousOwner
        let before = try Dictionary(
            [previousOwner, owner].compactMap { $0 }.map { ($0, try entitlement(userID: $0, at: now, on: db)) },
            uniquingKeysWith: { first, _ in first })
        let fresh = existing == nil || update.signedAt >= (existing?.int("signed_ms") ?? 0)
        if existing == nil {
            try db.run(
                """
                INSERT INTO purchases (id, source, store_id, user_id, product_id, tier, environment, expires_ms, grace_expires_ms,
                    billing_retry, auto_renewing, revoked_ms, state, next_check_ms, signed_ms, created_ms, updated_ms)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, COALESCE(?11, 1), ?12, 'none', NULL, ?13, ?14, ?14)
                """, values(update, owner: owner) + [.integer(update.signedAt), .integer(now)])
        } else if fresh {
            try db.run(
                """
                UPDATE purchases SET user_id = ?4, product_id = ?5, tier = ?6, environment = ?7, expires_ms = ?8,
                    grace_expires_ms = ?9, billing_retry = ?10, auto_renewing = COALESCE(?11, auto_renewing), revoked_ms = ?12,
                    signed_ms = ?13, updated_ms = ?14
                WHERE id = ?1 AND source = ?2 AND store_id = ?3
                """, values(update, owner: owner) + [.integer(update.signedAt), .integer(now)])
        } else if userID != nil, userID != previousOwner {
            try bind(source: update.source, storeID: update.storeID, to: owner, at: now, on: db)
        }
        try db.run(
            """
            INSERT INTO entitlement_periods (purchase_id, transaction_id, product_id, starts_ms, expires_ms, revoked_ms, recorded_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            ON CONFLICT (purchase_id, transaction_id) DO UPDATE SET revoked_ms = excluded.revoked_ms, expires_ms = excluded.expires_ms
            """,
            [
                .text(update.purchaseID), .text(update.transactionID), .text(update.productID), SQLValue(update.startsAt),
                SQLValue(update.expiresAt), SQLValue(update.revokedAt), .integer(now),
            ])
        let detail = "\(update.purchaseID) \(update.productID)"
        if let previousOwner, previousOwner != owner {
            try refresh(
                userID: previousOwner, cause: .transfer, detail: detail, actor: actor, at: now, unlessStill: before[previousOwner], on: db)
        }
        if let owner {
            // A purchase that just became this account's is news even when the entitlement shown is the same.
            let unchanged = previousOwner == owner ? before[owner] : nil
            try refresh(userID: owner, cause: cause, detail: detail, actor: actor, at: now, unlessStill: unchanged, on: db)
        }
        return (owner, fresh)
    }

    private static func values(_ u: PurchaseUpdate, owner: String?) -> [SQLValue] {
        [
            .text(u.purchaseID), .text(u.source.rawValue), .text(u.storeID), SQLValue(owner), .text(u.productID), .text(u.tier.rawValue),
            .text(u.environment), SQLValue(u.expiresAt), SQLValue(u.graceExpiresAt), .integer(u.billingRetry ? 1 : 0),
            u.autoRenewing.map { .integer($0 ? 1 : 0) } ?? .null, SQLValue(u.revokedAt),
        ]
    }

    /// Binds a purchase to an account (nil: unbinds it).
    static func bind(source: EntitlementSource, storeID: String, to userID: String?, at now: Int64, on db: any SQLConnection) throws {
        try db.run(
            "UPDATE purchases SET user_id = ?2, updated_ms = ?3 WHERE id = ?1",
            [.text("\(source.rawValue):\(storeID)"), SQLValue(userID), .integer(now)])
    }

    /// The operator's grant: `tier` until `until` (nil: until changed); `free` removes the grant (the
    /// account keeps what its purchases give). Then refreshes the account.
    public static func setOperatorGrant(
        userID: String, tier: Tier, until: Int64?, reason: String?, actor: Actor, at now: Int64, on db: any SQLConnection
    ) throws {
        let before = try entitlement(userID: userID, at: now, on: db)
        if tier == .free {
            try db.run("DELETE FROM operator_grants WHERE user_id = ?1", [.text(userID)])
        } else {
            try db.run(
                """
                INSERT INTO operator_grants (user_id, tier, expires_ms, ended, reason, created_ms) VALUES (?1, ?2, ?3, 0, ?4, ?5)
                ON CONFLICT (user_id) DO UPDATE SET tier = excluded.tier, expires_ms = excluded.expires_ms, ended = 0,
                    reason = excluded.reason, created_ms = excluded.created_ms
                """, [.text(userID), .text(tier.rawValue), SQLValue(until), SQLValue(reason), .integer(now)])
        }
        try refresh(userID: userID, cause: .operator, detail: reason, actor: actor, at: now, unlessStill: before, on: db)
    }

    /// Unbinds every purchase of an account being deleted (data-schema §8.1 steps 6–7); the store
    /// subscription itself continues until cancelled in the store.
    public static func unbindAll(userID: String, at now: Int64, on db: any SQLConnection) throws {
        try db.run("UPDATE purchases SET user_id = NULL, updated_ms = ?2 WHERE user_id = ?1", [.text(userID), .integer(now)])
        try db.run("DELETE FROM operator_grants WHERE user_id = ?1", [.text(userID)])
    }

    /// Re-derives the account's entitlement at `now` and publishes it: the `entitlement` row on the
    /// user's topic and a push; when the tier changed, `users.tier`, its `user` row and a
    /// `tier_changes` row with `cause`. Also stores each purchase's state and when the clock alone
    /// changes it next (the expiry sweep's cue). With `unlessStill`, nothing is published when the
    /// entitlement is still exactly that one.
    public static func refresh(
        userID: String, cause: Cause, detail: String?, actor: Actor, at now: Int64, unlessStill previous: Entitlement? = nil,
        on db: any SQLConnection
    ) throws {
        guard let user = try AccountStore.user(id: userID, on: db) else { return }
        let records = try records(userID: userID, on: db)
        let entitlement = Entitlement.derive(from: records, at: now)
        for row in try db.query(
            "SELECT id, expires_ms, grace_expires_ms, billing_retry, revoked_ms FROM purchases WHERE user_id = ?1", [.text(userID)])
        {
            let record = EntitlementRecord(
                source: .appStore, productID: nil, tier: .plus, expiresAt: row.int("expires_ms"),
                graceExpiresAt: row.int("grace_expires_ms"),
                billingRetry: row.int("billing_retry") == 1, revokedAt: row.int("revoked_ms"))
            try db.run(
                "UPDATE purchases SET state = ?2, next_check_ms = ?3 WHERE id = ?1",
                [
                    .text(row.string("id") ?? ""), .text(record.state(at: now).rawValue),
                    SQLValue(record.revokedAt == nil ? record.nextChange(after: now) : nil),
                ])
        }
        if let previous, previous == entitlement, entitlement.tier == user.tier { return }
        // Members of the owner's groups are told when the owner's premium lapses and when it returns.
        let lapsedPremium = Entitlement.lapsedTier(of: records, at: now) == .premium
        if user.tier == .premium, entitlement.tier < .premium, lapsedPremium {
            try NotificationOutbox.ownerSubscriptionChanged(ownerID: userID, ownerName: user.displayName, lapsed: true, at: now, on: db)
            try publishOwnerSubscription(ownerID: userID, lapsed: true, actor: actor, at: now, on: db)
        } else if user.tier < .premium, entitlement.tier == .premium, try wasLimited(userID: userID, on: db) {
            try NotificationOutbox.ownerSubscriptionChanged(ownerID: userID, ownerName: user.displayName, lapsed: false, at: now, on: db)
            try publishOwnerSubscription(ownerID: userID, lapsed: false, actor: actor, at: now, on: db)
        }
        if entitlement.tier != user.tier {
            _ = try AccountStore.setTier(userID: userID, tier: entitlement.tier, actor: actor, reason: cause.rawValue, at: now, on: db)
            try db.run(
                "INSERT INTO tier_changes (user_id, from_tier, to_tier, cause, detail, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                [
                    .text(userID), .text(user.tier.rawValue), .text(entitlement.tier.rawValue), .text(cause.rawValue), SQLValue(detail),
                    .integer(now),
                ])
        }
        try ChangeLog.append(
            [
                Change(
                    topic: ChangeLog.userTopic(userID), kind: .entitlement, op: .modified, entityID: userID,
                    document: DocumentCoding.encode(entitlement), reason: cause.rawValue)
            ], event: .entitlementChanged, actor: actor, at: now, on: db)
        try NotificationOutbox.entitlementChanged(entitlement, userID: userID, previousTier: user.tier, at: now, on: db)
    }

    /// One `group_owner_subscription` change on the topic of every group `ownerID` owns, in one batch:
    /// members' sockets see at once that the group takes new members and shared alarms again, or not.
    private static func publishOwnerSubscription(ownerID: String, lapsed: Bool, actor: Actor, at now: Int64, on db: any SQLConnection)
        throws
    {
        let changes = try db.query(
            "SELECT id FROM groups WHERE owner_id = ?1 AND deleted_ms IS NULL ORDER BY id", [.text(ownerID)]
        ).compactMap { row -> Change? in
            guard let groupID = row.string("id") else { return nil }
            return Change(
                topic: ChangeLog.groupTopic(groupID), kind: .groupOwnerSubscription, op: .modified, entityID: groupID,
                document: DocumentCoding.encode(GroupOwnerSubscription(groupID: groupID, lapsed: lapsed)))
        }
        guard !changes.isEmpty else { return }
        try ChangeLog.append(changes, event: .groupOwnerSubscriptionChanged, actor: actor, at: now, on: db)
    }

    /// Whether the account's last tier change took premium away (its groups were limited since).
    private static func wasLimited(userID: String, on db: any SQLConnection) throws -> Bool {
        let last = try db.queryOne(
            "SELECT from_tier, cause FROM tier_changes WHERE user_id = ?1 ORDER BY at_ms DESC, id DESC LIMIT 1", [.text(userID)])
        return last?.string("from_tier") == Tier.premium.rawValue && last?.string("cause") != Cause.operator.rawValue
    }

    /// The expiry sweep: refreshes every account whose purchase or operator grant changed state by
    /// the clock alone at `now` (period over → grace or expired; grace over → expired), at most
    /// `limit` accounts. Returns how many it refreshed.
    public static func sweepExpiries(at now: Int64, limit: Int, on db: any SQLConnection) throws -> Int {
        var users = Set<String>()
        for row in try db.query(
            "SELECT user_id FROM purchases WHERE next_check_ms <= ?1 AND user_id IS NOT NULL ORDER BY next_check_ms LIMIT ?2",
            [.integer(now), .integer(Int64(limit))])
        {
            if let id = row.string("user_id") { users.insert(id) }
        }
        // A purchase without an account still moves on (its state is shown by chronir-admin).
        try db.run(
            "UPDATE purchases SET next_check_ms = NULL WHERE next_check_ms <= ?1 AND user_id IS NULL", [.integer(now)])
        for row in try db.query(
            "SELECT user_id FROM operator_grants WHERE ended = 0 AND expires_ms <= ?1 LIMIT ?2", [.integer(now), .integer(Int64(limit))])
        {
            guard let id = row.string("user_id") else { continue }
            users.insert(id)
            try db.run("UPDATE operator_grants SET ended = 1 WHERE user_id = ?1", [.text(id)])
        }
        for userID in users.sorted() {
            try refresh(userID: userID, cause: .expiry, detail: nil, actor: .system, at: now, on: db)
        }
        return users.count
    }

    /// Records a store message; false when its id was already recorded (a redelivery: do nothing).
    public static func recordEvent(
        source: EntitlementSource, eventID: String, type: String, subtype: String?, purchaseID: String?, userID: String?,
        outcome: String, signedAt: Int64?, at now: Int64, on db: any SQLConnection
    ) throws -> Bool {
        try db.run(
            """
            INSERT INTO store_events (source, event_id, type, subtype, purchase_id, user_id, outcome, signed_ms, received_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (source, event_id) DO NOTHING
            """,
            [
                .text(source.rawValue), .text(eventID), .text(type), SQLValue(subtype), SQLValue(purchaseID), SQLValue(userID),
                .text(outcome), SQLValue(signedAt), .integer(now),
            ]) > 0
    }

    /// Whether a store message with this id was recorded.
    public static func hasEvent(source: EntitlementSource, eventID: String, on db: any SQLConnection) throws -> Bool {
        try db.queryOne("SELECT 1 AS one FROM store_events WHERE source = ?1 AND event_id = ?2", [.text(source.rawValue), .text(eventID)])
            != nil
    }

    /// Entitlements by tier, state and platform (`ios`, `android`, `operator`) — the
    /// `chronir_entitlements` gauge: purchases bound to an account, in the state last evaluated (the
    /// expiry sweep keeps it current), and operator grants (`expired` once ended).
    public static func entitlementCounts(at now: Int64, on db: any SQLConnection) throws -> [(
        tier: String, state: String, platform: String, count: Int64
    )] {
        let purchases = try db.query(
            "SELECT tier, state, source, COUNT(*) AS n FROM purchases WHERE user_id IS NOT NULL GROUP BY tier, state, source"
        ).map { row in
            let source = EntitlementSource(rawValue: row.string("source") ?? "")
            return (row.string("tier") ?? "", row.string("state") ?? "", source?.platform ?? "operator", row.int("n") ?? 0)
        }
        let grants = try db.query(
            """
            SELECT tier, CASE WHEN ended = 1 OR (expires_ms IS NOT NULL AND expires_ms <= ?1) THEN 'expired' ELSE 'active' END AS state,
                COUNT(*) AS n
            FROM operator_grants GROUP BY 1, 2
            """, [.integer(now)]
        ).map { row in (row.string("tier") ?? "", row.string("state") ?? "", "operator", row.int("n") ?? 0) }
        return purchases + grants
    }

    /// Counts of store messages by outcome (metrics).
    public static func eventCounts(on db: any SQLConnection) throws -> [(source: String, outcome: String, count: Int64)] {
        try db.query("SELECT source, outcome, COUNT(*) AS n FROM store_events GROUP BY source, outcome ORDER BY source, outcome").map {
            ($0.string("source") ?? "", $0.string("outcome") ?? "", $0.int("n") ?? 0)
        }
    }
}
