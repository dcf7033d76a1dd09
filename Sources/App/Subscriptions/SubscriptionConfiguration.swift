public import Domain
public import Identity

/// Subscriptions and entitlements (docs/subscriptions.md): the product catalogue, the App Store's
/// verification settings, and what happens to a purchase another account claims.
public struct SubscriptionConfiguration: Sendable {
    /// Store product id → tier (`--products-file`; default the seeds' eight, API seed §9.1).
    public var catalogue: ProductCatalogue = .standard
    /// App Store signed-data verification; nil: `/v1/me/purchases/apple` and the notification endpoint answer 404.
    public var appStore: AppStoreVerifier? = nil
    /// A purchase already bound to another account (`--purchase-transfer`).
    public var purchaseTransfer: PurchaseTransfer = .refuse

    public init() {}

    /// What `--purchase-transfer` allows.
    public enum PurchaseTransfer: String, Sendable, CaseIterable {
        /// Refused with 409 `PURCHASE_OWNED_ELSEWHERE` (the default: one subscription, one account).
        case refuse
        /// Moved to the account that posts it; the previous account loses the entitlement.
        case transfer
    }
}
