import Domain
import Identity
import Storage
import Store
import Wire

/// Subscriptions (docs/subscriptions.md): the caller's entitlement, App Store purchases and restore,
/// and App Store Server Notifications V2. The tier is never written by a client: only verified store
/// data and operators change entitlements, and the tier is derived from them (`EntitlementStore`).
enum SubscriptionRoutes {
    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(.get, "/v1/me/entitlement", .async { request in try await entitlement(request, services) })
        router.add(.post, "/v1/me/purchases/apple", .async { request in try await applePurchase(request, services) })
        router.add(.post, "/v1/me/purchases/restore", .async { request in try await restore(request, services) })
        router.add(.post, "/v1/store/apple/notifications", .async { request in try await appleNotification(request, services) })
        router.add(.post, "/v1/me/purchases/google", .async { request in try await googlePurchase(request, services) })
        router.add(.post, "/v1/store/google/rtdn", .async { request in try await googleNotification(request, services) })
    }

    /// `POST /v1/me/purchases/apple`: StoreKit 2's `jwsRepresentation` and, optionally, the renewal info.
    struct ApplePurchaseBody: Decodable, Sendable {
        var signedTransaction: String
        var signedRenewalInfo: String?
        enum CodingKeys: String, CodingKey {
            case signedTransaction = "signed_transaction"
            case signedRenewalInfo = "signed_renewal_info"
        }
    }

    /// `POST /v1/me/purchases/restore`: every signed transaction the app holds (`Transaction.currentEntitlements`).
    struct RestoreBody: Decodable, Sendable {
        var apple: [ApplePurchaseBody]
    }

    /// Most transactions one restore may carry: an account has a handful of subscriptions; the
    /// bound keeps one request's verification work (three signatures and a chain each) small.
    static let maxRestoreTransactions = 20

    /// App Store Server Notifications V2 (`responseBodyV2`).
    struct NotificationBody: Decodable, Sendable {
        var signedPayload: String
    }

    static func entitlement(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let userID = try await services.authenticate(request).user.id
        let now = services.clock.nowMilliseconds()
        return JSONBody.response(
            try await services.database.read { db in try EntitlementStore.entitlement(userID: userID, at: now, on: db) })
    }

    /// → 200 with the entitlement. 404 CA074 without App Store configuration; 422 CA070 when the
    /// signed data fails verification; 422 CA073 for a product the catalogue does not list; 403 CA072
    /// when `appAccountToken` names another account; 409 CA071 when the purchase is another account's.
    static func applePurchase(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let verifier = try appStore(services)
        let user = try await services.authenticate(request).user
        let body = try JSONBody.decode(ApplePurchaseBody.self, from: request)
        let update = try verifiedPurchase(body, for: user.id, verifier: verifier, catalogue: services.config.subscriptions.catalogue)
        let transfer = services.config.subscriptions.purchaseTransfer
        return try await services.writeJSON { now, db in
            try claim(update, userID: user.id, transfer: transfer, cause: .purchase, at: now, on: db)
            return try EntitlementStore.entitlement(userID: user.id, at: now, on: db)
        }
    }

    /// Restore: each transaction as `POST /v1/me/purchases/apple`, all in one transaction (one refusal refuses all).
    static func restore(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let user = try await services.authenticate(request).user
        let body = try JSONBody.decode(RestoreBody.self, from: request)
        guard body.apple.count <= maxRestoreTransactions else {
            throw APIError(.validationFailed, "at most \(maxRestoreTransactions) transactions", field: "apple")
        }
        var updates: [EntitlementStore.PurchaseUpdate] = []
        if !body.apple.isEmpty {
            let verifier = try appStore(services)
            for item in body.apple {
                updates.append(
                    try verifiedPurchase(item, for: user.id, verifier: verifier, catalogue: services.config.subscriptions.catalogue))
            }
        }
        let transfer = services.config.subscriptions.purchaseTransfer
        let claims = updates
        return try await services.writeJSON { now, db in
            for update in claims { try claim(update, userID: user.id, transfer: transfer, cause: .purchase, at: now, on: db) }
            return try EntitlementStore.entitlement(userID: user.id, at: now, on: db)
        }
    }

    /// A notification: verified, recorded by `notificationUUID` (a redelivery changes nothing), applied
    /// to its purchase. 200 for everything verified — also a type this server does not act on, or a
    /// purchase no account has claimed yet — so Apple stops retrying; 422 CA070 when verification fails.
    static func appleNotification(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let verifier = try appStore(services)
        let body = try JSONBody.decode(NotificationBody.self, from: request)
        _ = try await handleAppleNotification(body.signedPayload, verifier: verifier, services: services)
        return HTTPResponse(status: .ok)
    }

    /// Verifies, records and applies one App Store notification's `signedPayload` — the handling of
    /// `POST /v1/store/apple/notifications`, also fed by the Get Notification History catch-up
    /// (`AppStoreHistoryCatchUp`). Returns the outcome counted in `chronir_store_notifications_total`
    /// (applied, unbound, stale, ignored, duplicate); throws 422 CA070 when verification fails (counted
    /// refused), or the database's error (nothing recorded: one transaction).
    static func handleAppleNotification(_ signedPayload: String, verifier: AppStoreVerifier, services: Services) async throws -> String {
        let notification: AppStoreNotification
        switch verifier.verifyNotification(signedPayload) {
        case .success(let verified): notification = verified
        case .failure(let reason):
            services.metrics.storeNotification(source: .appStore, outcome: "refused")
            throw APIError(.purchaseInvalid, "signedPayload refused: \(reason.rawValue)", field: "signedPayload")
        }
        let catalogue = services.config.subscriptions.catalogue
        let outcome = try await services.database.write { db -> String in
            let now = services.clock.nowMilliseconds()
            guard !(try EntitlementStore.hasEvent(source: .appStore, eventID: notification.uuid, on: db)) else { return "duplicate" }
            var outcome = "ignored"
            var purchaseID: String?
            var owner: String?
            if let transaction = notification.transaction, var update = purchaseUpdate(transaction, notification.renewalInfo, catalogue) {
                AppStoreNotificationRules.apply(notification, to: &update, at: now)
                purchaseID = "\(EntitlementSource.appStore.rawValue):\(update.storeID)"
                // A purchase nobody claimed is bound by its appAccountToken when that names an account.
                let known = try EntitlementStore.owner(source: .appStore, storeID: update.storeID, on: db)
                var bindTo: String?
                if known.userID == nil, let token = transaction.appAccountToken, try AccountStore.user(id: token, on: db) != nil {
                    bindTo = token
                }
                let result = try EntitlementStore.apply(update, bindTo: bindTo, cause: .notification, actor: .system, at: now, on: db)
                owner = result.userID
                outcome = !result.applied ? "stale" : (owner == nil ? "unbound" : "applied")
            }
            _ = try EntitlementStore.recordEvent(
                source: .appStore, eventID: notification.uuid, type: notification.type, subtype: notification.subtype,
                purchaseID: purchaseID, userID: owner, outcome: outcome, signedAt: notification.signedDate, at: now, on: db)
            return outcome
        }
        services.metrics.storeNotification(source: .appStore, outcome: outcome)
        return outcome
    }

    // MARK: Helpers

    private static func appStore(_ services: Services) throws -> AppStoreVerifier {
        guard let verifier = services.config.subscriptions.appStore else {
            throw APIError(.storeNotConfigured, "App Store purchases are not configured on this server")
        }
        return verifier
    }

    /// The body's transaction (and renewal info) verified and checked against the caller and the catalogue.
    static func verifiedPurchase(
        _ body: ApplePurchaseBody, for userID: String, verifier: AppStoreVerifier, catalogue: ProductCatalogue
    ) throws -> EntitlementStore.PurchaseUpdate {
        let (transaction, renewal) = try verifiedSignedData(
            signedTransaction: body.signedTransaction, signedRenewalInfo: body.signedRenewalInfo, verifier: verifier)
        if let token = transaction.appAccountToken, token != userID {
            throw APIError(.purchaseAccountMismatch, "the purchase was made for another account (appAccountToken)")
        }
        guard let update = purchaseUpdate(transaction, renewal, catalogue) else {
            throw APIError(.productUnknown, "\(transaction.productID) is not a product of this server", field: "signed_transaction")
        }
        return update
    }

    /// A signed transaction and its optional renewal info, verified (docs/subscriptions.md#verification)
    /// and of one subscription: what a posted purchase, a restore and the App Store Server API's status
    /// refresh (`AppStoreRefresher`) all go through. 422 CA070 naming the part refused.
    static func verifiedSignedData(
        signedTransaction: String, signedRenewalInfo: String?, verifier: AppStoreVerifier
    ) throws(APIError) -> (AppStoreTransaction, AppStoreRenewalInfo?) {
        let transaction: AppStoreTransaction
        switch verifier.verifyTransaction(signedTransaction) {
        case .success(let verified): transaction = verified
        case .failure(let reason):
            throw APIError(.purchaseInvalid, "signed_transaction refused: \(reason.rawValue)", field: "signed_transaction")
        }
        var renewal: AppStoreRenewalInfo?
        if let signed = signedRenewalInfo {
            switch verifier.verifyRenewalInfo(signed) {
            case .success(let verified): renewal = verified
            case .failure(let reason):
                throw APIError(.purchaseInvalid, "signed_renewal_info refused: \(reason.rawValue)", field: "signed_renewal_info")
            }
            guard renewal?.originalTransactionID == transaction.originalTransactionID else {
                throw APIError(.purchaseInvalid, "signed_renewal_info is another subscription's", field: "signed_renewal_info")
            }
        }
        return (transaction, renewal)
    }

    /// The purchase row's new values from a transaction and its renewal info; nil for an unknown product.
    static func purchaseUpdate(
        _ transaction: AppStoreTransaction, _ renewal: AppStoreRenewalInfo?, _ catalogue: ProductCatalogue
    ) -> EntitlementStore.PurchaseUpdate? {
        guard let product = catalogue.product(.appStore, transaction.productID) else { return nil }
        return EntitlementStore.PurchaseUpdate(
            source: .appStore, storeID: transaction.originalTransactionID, transactionID: transaction.transactionID,
            productID: transaction.productID, tier: product.tier, environment: transaction.environment,
            startsAt: transaction.purchaseDate, expiresAt: transaction.expiresDate,
            graceExpiresAt: renewal?.gracePeriodExpiresDate, billingRetry: renewal?.isInBillingRetryPeriod ?? false,
            autoRenewing: renewal?.autoRenewing, revokedAt: transaction.revocationDate,
            signedAt: max(transaction.signedDate, renewal?.signedDate ?? 0))
    }

    /// Binds the purchase to the caller (refusing or transferring one bound elsewhere) and applies it.
    static func claim(
        _ update: EntitlementStore.PurchaseUpdate, userID: String, transfer: SubscriptionConfiguration.PurchaseTransfer,
        cause: EntitlementStore.Cause, at now: Int64, on db: any SQLConnection
    ) throws {
        let known = try EntitlementStore.owner(source: update.source, storeID: update.storeID, on: db)
        if let owner = known.userID, owner != userID {
            switch transfer {
            case .refuse: throw APIError(.purchaseOwnedElsewhere, "this purchase belongs to another account")
            case .transfer: break
            }
        }
        try EntitlementStore.apply(update, bindTo: userID, cause: cause, actor: .user(userID), at: now, on: db)
    }
}

/// How each App Store Server Notification type moves a purchase beyond what its signed transaction
/// and renewal info already say (docs/subscriptions.md#app-store-notifications). The dates in the
/// signed data are Apple's and win; these rules only cover what the type itself means.
enum AppStoreNotificationRules {
    /// `now`: the server's time, when the notification is handled.
    static func apply(_ notification: AppStoreNotification, to update: inout EntitlementStore.PurchaseUpdate, at now: Int64) {
        update.signedAt = max(update.signedAt, notification.signedDate)
        switch notification.type {
        case "REFUND", "REVOKE":
            // The transaction carries revocationDate; a notification without it still ends access now.
            update.revokedAt = update.revokedAt ?? notification.signedDate
        case "EXPIRED":
            // It has ended: at the latest now, even if the transaction's period says later.
            update.expiresAt = min(update.expiresAt ?? now, now)
            update.graceExpiresAt = nil
            update.billingRetry = false
            update.autoRenewing = false
        case "GRACE_PERIOD_EXPIRED":
            update.graceExpiresAt = nil
        case "DID_FAIL_TO_RENEW":
            update.billingRetry = true
            if notification.subtype != "GRACE_PERIOD" { update.graceExpiresAt = nil }
        case "DID_RENEW", "SUBSCRIBED", "RENEWAL_EXTENDED":
            update.billingRetry = false
            update.graceExpiresAt = nil
        default:
            // DID_CHANGE_RENEWAL_STATUS / _PREF, and types this server does not act on: the signed data says it all.
            break
        }
    }
}
