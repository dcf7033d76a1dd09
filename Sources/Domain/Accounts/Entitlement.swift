import Foundation

extension Tier: Comparable {
    /// free < plus < premium: the account's tier is the highest its active entitlements grant.
    public static func < (lhs: Tier, rhs: Tier) -> Bool { lhs.rank < rhs.rank }

    private var rank: Int {
        switch self {
        case .free: 0
        case .plus: 1
        case .premium: 2
        }
    }
}

/// Where an entitlement comes from (`source` of `GET /v1/me/entitlement`; docs/subscriptions.md).
public enum EntitlementSource: String, Sendable, Codable {
    /// A verified App Store purchase.
    case appStore = "app_store"
    /// A verified Google Play purchase.
    case play
    /// An operator's grant (`chronir-admin users set-tier`, or the server's `--default-tier` at registration).
    case `operator`

    /// The platform a store's products belong to (data-schema §4.9: `ios` | `android`); nil for an operator grant.
    public var platform: String? {
        switch self {
        case .appStore: "ios"
        case .play: "android"
        case .operator: nil
        }
    }
}

/// A store product and the tier it grants (API seed §9.1).
public struct Product: Sendable, Equatable, Codable {
    public var source: EntitlementSource
    public var productID: String
    public var tier: Tier

    public init(source: EntitlementSource, productID: String, tier: Tier) {
        self.source = source
        self.productID = productID
        self.tier = tier
    }

    enum CodingKeys: String, CodingKey {
        case source = "store"
        case productID = "product_id"
        case tier
    }
}

/// The products the server knows: a store product id that is not here grants nothing (its purchase is
/// refused). The default is the seeds' eight (API seed §9.1); `--products-file` replaces it.
public struct ProductCatalogue: Sendable, Equatable {
    public var products: [Product]

    public init(products: [Product]) { self.products = products }

    /// API seed §9.1: plus and premium, monthly and annual, on each store.
    public static let standard = ProductCatalogue(products: [
        Product(source: .appStore, productID: "com.chronir.plus.monthly", tier: .plus),
        Product(source: .appStore, productID: "com.chronir.plus.annual", tier: .plus),
        Product(source: .appStore, productID: "com.chronir.premium.monthly", tier: .premium),
        Product(source: .appStore, productID: "com.chronir.premium.annual", tier: .premium),
        Product(source: .play, productID: "chronir_plus_monthly", tier: .plus),
        Product(source: .play, productID: "chronir_plus_annual", tier: .plus),
        Product(source: .play, productID: "chronir_premium_monthly", tier: .premium),
        Product(source: .play, productID: "chronir_premium_annual", tier: .premium),
    ])

    /// The product with this id in this store, if known.
    public func product(_ source: EntitlementSource, _ productID: String) -> Product? {
        products.first { $0.source == source && $0.productID == productID }
    }

    /// Parses a products file: `{"products":[{"store":"app_store","product_id":"…","tier":"plus"},…]}`.
    /// Throws a message naming the problem: no products, a store other than app_store/play, a tier
    /// `free`, or the same product twice.
    public init(json: [UInt8]) throws(ProductCatalogueError) {
        struct File: Decodable { var products: [Product] }
        guard let file = try? JSONDecoder().decode(File.self, from: Data(json)) else {
            throw ProductCatalogueError(message: "products file: expected {\"products\":[{\"store\",\"product_id\",\"tier\"}]}")
        }
        guard !file.products.isEmpty else { throw ProductCatalogueError(message: "products file: no products") }
        var seen = Set<String>()
        for product in file.products {
            guard product.source != .operator else {
                throw ProductCatalogueError(message: "products file: store must be app_store or play")
            }
            guard product.tier != .free else { throw ProductCatalogueError(message: "products file: \(product.productID) grants free") }
            guard !product.productID.isEmpty, seen.insert("\(product.source.rawValue)/\(product.productID)").inserted else {
                throw ProductCatalogueError(message: "products file: \(product.productID) is empty or listed twice")
            }
        }
        products = file.products
    }
}

/// Why a products file was refused (chronir-server reports the message and does not start).
public struct ProductCatalogueError: Error, Sendable, Equatable {
    public var message: String
}

/// Where an entitlement is in its life at an instant (docs/subscriptions.md#states).
public enum EntitlementState: String, Sendable, Codable {
    /// Paid (or granted) and within its period.
    case active
    /// The period ended and renewal failed, but the store's grace period keeps access.
    case grace
    /// Renewal failed, the store is still retrying, and there is no grace: no access.
    case billingRetry = "billing_retry"
    /// Ended: no access.
    case expired
    /// Refunded or revoked (family sharing withdrawn): no access.
    case revoked
    /// The account has never had an entitlement.
    case none

    /// Whether this state grants the entitlement's tier.
    public var grantsAccess: Bool { self == .active || self == .grace }
}

/// One entitlement as stored: a store purchase's current period, or an operator grant.
public struct EntitlementRecord: Sendable, Equatable {
    public var source: EntitlementSource
    public var productID: String?
    public var tier: Tier
    /// End of the paid period (nil: no end — an operator grant without `--until`).
    public var expiresAt: Int64?
    /// End of the store's grace period, when it granted one.
    public var graceExpiresAt: Int64?
    /// The store is retrying a failed renewal.
    public var billingRetry: Bool
    public var autoRenewing: Bool
    /// Refunded or revoked at this instant.
    public var revokedAt: Int64?

    public init(
        source: EntitlementSource, productID: String?, tier: Tier, expiresAt: Int64?, graceExpiresAt: Int64? = nil,
        billingRetry: Bool = false, autoRenewing: Bool = false, revokedAt: Int64? = nil
    ) {
        self.source = source
        self.productID = productID
        self.tier = tier
        self.expiresAt = expiresAt
        self.graceExpiresAt = graceExpiresAt
        self.billingRetry = billingRetry
        self.autoRenewing = autoRenewing
        self.revokedAt = revokedAt
    }

    /// The state at `now`, by the store's own dates: revoked beats everything; within the period is
    /// active; past it, the grace date keeps access; past that, billing retry or expired.
    public func state(at now: Int64) -> EntitlementState {
        if revokedAt != nil { return .revoked }
        if let expiresAt, expiresAt <= now {
            if let graceExpiresAt, graceExpiresAt > now { return .grace }
            return billingRetry ? .billingRetry : .expired
        }
        return .active
    }

    /// The first instant after `now` at which `state(at:)` changes (nil: never) — when the expiry sweep looks again.
    public func nextChange(after now: Int64) -> Int64? {
        [expiresAt, graceExpiresAt].compactMap { $0 }.filter { $0 > now }.min()
    }
}

/// What `GET /v1/me/entitlement` answers and the `entitlement` change carries (docs/subscriptions.md#the-entitlement).
/// Every key is always written (`ExplicitNull`: null, not absent).
public struct Entitlement: Sendable, Equatable, Encodable {
    public var tier: Tier
    public var state: EntitlementState
    @ExplicitNull public var platform: String?
    @ExplicitNull public var productID: String?
    @ExplicitNull public var expiresAt: Timestamp?
    @ExplicitNull public var graceExpiresAt: Timestamp?
    public var autoRenewing: Bool
    @ExplicitNull public var source: EntitlementSource?

    enum CodingKeys: String, CodingKey {
        case tier, state, platform, source
        case productID = "product_id"
        case expiresAt = "expires_at"
        case graceExpiresAt = "grace_expires_at"
        case autoRenewing = "auto_renewing"
    }

    /// The account's entitlement at `now`: its tier is the highest among the records that grant
    /// access (free when none does); the record shown is that one (ties: the later expiry; no expiry
    /// counts as latest), else the most recently ended one, else `none`.
    public static func derive(from records: [EntitlementRecord], at now: Int64) -> Entitlement {
        let granting = records.filter { $0.state(at: now).grantsAccess }
        let shown: EntitlementRecord?
        if let best = granting.max(by: { order($0, $1) }) {
            shown = best
        } else {
            shown = records.max { endOf($0) < endOf($1) }
        }
        guard let shown else {
            return Entitlement(
                tier: .free, state: .none, platform: nil, productID: nil, expiresAt: nil, graceExpiresAt: nil, autoRenewing: false,
                source: nil)
        }
        let state = shown.state(at: now)
        return Entitlement(
            tier: state.grantsAccess ? shown.tier : .free, state: state, platform: shown.source.platform, productID: shown.productID,
            expiresAt: shown.expiresAt.map(Timestamp.init(milliseconds:)),
            graceExpiresAt: shown.graceExpiresAt.map(Timestamp.init(milliseconds:)), autoRenewing: shown.autoRenewing,
            source: shown.source)
    }

    /// When a record stopped granting access, for picking the most recently ended one.
    private static func endOf(_ record: EntitlementRecord) -> Int64 {
        record.revokedAt ?? record.graceExpiresAt ?? record.expiresAt ?? 0
    }

    /// Higher tier first, then the later end (no end counts as latest).
    private static func order(_ a: EntitlementRecord, _ b: EntitlementRecord) -> Bool {
        if a.tier != b.tier { return a.tier < b.tier }
        return (a.expiresAt ?? .max) < (b.expiresAt ?? .max)
    }

    /// The highest tier among records that no longer grant access (nil: none) — whether a refusal is
    /// `SUBSCRIPTION_EXPIRED` (the account had it) rather than `TIER_REQUIRED`.
    public static func lapsedTier(of records: [EntitlementRecord], at now: Int64) -> Tier? {
        records.filter { !$0.state(at: now).grantsAccess }.map(\.tier).max()
    }
}

/// The `group_owner_subscription` document on a group's topic (docs/subscriptions.md#downgrade): whether
/// the group takes new members and new shared alarms, which its owner's premium decides.
public struct GroupOwnerSubscription: Sendable, Equatable, Encodable {
    /// The group.
    public var groupID: String
    /// `lapsed` (paused until renewed or handed to a premium member) or `active`.
    public var state: String
    /// Whether joins (by code or invitation) are accepted.
    public var acceptsNewMembers: Bool
    /// Whether new shared alarms are accepted.
    public var acceptsNewSharedAlarms: Bool

    /// The document for `groupID` when the owner's premium has `lapsed` or not.
    public init(groupID: String, lapsed: Bool) {
        self.groupID = groupID
        state = lapsed ? "lapsed" : "active"
        acceptsNewMembers = !lapsed
        acceptsNewSharedAlarms = !lapsed
    }

    enum CodingKeys: String, CodingKey {
        case state
        case groupID = "group_id"
        case acceptsNewMembers = "accepts_new_members"
        case acceptsNewSharedAlarms = "accepts_new_shared_alarms"
    }
}
