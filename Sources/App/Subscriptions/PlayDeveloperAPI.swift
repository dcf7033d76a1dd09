import Domain
import Foundation
public import Outbound
import Store

/// The Google Play Developer API's subscription calls (docs/subscriptions.md#google-play):
/// `purchases.subscriptionsv2.get` to read a purchase token's state, and `purchases.subscriptions.acknowledge`.
/// Authorised with the service account's OAuth2 grant (`GoogleAccessGrant`, scope androidpublisher).
public final class PlayDeveloperAPI: Sendable {
    /// The OAuth2 scope both calls need.
    public static let scope = "https://www.googleapis.com/auth/androidpublisher"
    /// The API's origin (`--play-api-url` replaces it for a fake).
    public static let defaultBaseURL = "https://androidpublisher.googleapis.com"
    /// Deadline of one API request.
    public static let requestTimeout: Duration = .seconds(15)
    /// Longest purchase token accepted: Google's are about 150–200 characters of `[A-Za-z0-9._-]`;
    /// the token goes into the request path, so anything longer or other is refused before a request.
    public static let maxPurchaseTokenLength = 512

    /// Why the API gave no answer to use.
    public enum Failure: Error, Sendable, Equatable {
        /// 404 (or 400/410): Google does not know the token for this package.
        case notFound
        /// Unreachable, 429, 5xx, a refused grant, or an unreadable answer: try again later.
        case unavailable(String)
    }

    /// The app's package name (`--play-package-name`): every call is made for it.
    public let packageName: String
    private let baseURL: String
    private let client: OutboundClient
    private let grant: GoogleAccessGrant

    /// A client for `packageName` posting to `baseURL` through `client` (the caller owns and closes it).
    public init(
        account: GoogleServiceAccount, packageName: String, baseURL: String = PlayDeveloperAPI.defaultBaseURL, client: OutboundClient
    ) throws(GoogleServiceAccountError) {
        grant = try GoogleAccessGrant(account: account, scope: Self.scope, client: client)
        self.packageName = packageName
        self.baseURL = baseURL
        self.client = client
    }

    /// Whether `token` can be a purchase token (length and alphabet; see `maxPurchaseTokenLength`).
    public static func isPlausibleToken(_ token: String) -> Bool {
        (1...maxPurchaseTokenLength).contains(token.utf8.count)
            && token.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c == 0x2e || c == 0x5f || c == 0x2d
            }
    }

    /// `GET …/applications/{package}/purchases/subscriptionsv2/tokens/{token}` (`SubscriptionPurchaseV2`).
    public func subscription(token: String, now: Int64) async -> Result<PlaySubscription, Failure> {
        let url = "\(baseURL)/androidpublisher/v3/applications/\(packageName)/purchases/subscriptionsv2/tokens/\(token)"
        switch await call(.get, url, body: [], now: now) {
        case .failure(let failure): return .failure(failure)
        case .success(let body):
            guard let subscription = PlaySubscription(json: body) else { return .failure(.unavailable("malformed SubscriptionPurchaseV2")) }
            return .success(subscription)
        }
    }

    /// `POST …/purchases/subscriptions/{productId}/tokens/{token}:acknowledge` (Google refunds a purchase
    /// not acknowledged within three days).
    public func acknowledge(productID: String, token: String, now: Int64) async -> Result<Void, Failure> {
        let url =
            "\(baseURL)/androidpublisher/v3/applications/\(packageName)/purchases/subscriptions/\(productID)/tokens/\(token):acknowledge"
        return await call(.post, url, body: Array("{}".utf8), now: now).map { _ in () }
    }

    /// One authorised request; a 401 drops the cached access token and is retried once with a fresh one.
    private func call(_ method: OutboundRequest.Method, _ url: String, body: [UInt8], now: Int64, retried: Bool = false) async -> Result<
        [UInt8], Failure
    > {
        let accessToken: String
        switch await grant.token(now: now) {
        case .success(let token): accessToken = token
        case .failure(let failure): return .failure(.unavailable("oauth: \(failure)"))
        }
        let response: OutboundResponse
        do {
            response = try await client.send(.bearer(method, url, token: accessToken, body: body, timeout: Self.requestTimeout))
        } catch {
            return .failure(.unavailable("\(error)"))
        }
        switch response.status {
        case 200...299: return .success(response.body)
        case 401 where !retried:
            await grant.discard(accessToken)
            return await call(method, url, body: body, now: now, retried: true)
        case 400, 404, 410: return .failure(.notFound)
        default: return .failure(.unavailable("play api \(response.status)"))
        }
    }
}

/// The fields of a `SubscriptionPurchaseV2` the server uses.
public struct PlaySubscription: Sendable, Equatable {
    /// `subscriptionState` without its `SUBSCRIPTION_STATE_` prefix: ACTIVE, CANCELED, IN_GRACE_PERIOD,
    /// ON_HOLD, PAUSED, EXPIRED, PENDING, PENDING_PURCHASE_CANCELED (anything else as given).
    public var state: String
    /// The first line item's product (this server sells one product per subscription).
    public var productID: String
    /// The line items' latest `expiryTime` (Unix ms).
    public var expiresAt: Int64?
    /// `startTime` (Unix ms).
    public var startsAt: Int64?
    /// `autoRenewingPlan.autoRenewEnabled` of the line item.
    public var autoRenewing: Bool
    /// `acknowledgementState` is ACKNOWLEDGED.
    public var acknowledged: Bool
    /// `externalAccountIdentifiers.obfuscatedExternalAccountId`: the account id the app set at purchase.
    public var obfuscatedAccountID: String?
    /// `testPurchase` present: a licence tester's purchase.
    public var test: Bool
    /// `latestOrderId`: the order of the current period.
    public var latestOrderID: String?
    /// `linkedPurchaseToken`: the purchase this one replaced (an upgrade, downgrade or re-subscription).
    public var linkedPurchaseToken: String?

    /// Parses the API's JSON; nil without a state or a line item with a product.
    public init?(json: [UInt8]) {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(json))) as? [String: Any],
            let state = object["subscriptionState"] as? String,
            let items = object["lineItems"] as? [[String: Any]], let product = items.first?["productId"] as? String
        else { return nil }
        self.state = state.hasPrefix("SUBSCRIPTION_STATE_") ? String(state.dropFirst("SUBSCRIPTION_STATE_".count)) : state
        productID = product
        expiresAt = items.compactMap { ($0["expiryTime"] as? String).flatMap(Timestamp.parse) }.max()
        startsAt = (object["startTime"] as? String).flatMap(Timestamp.parse)
        autoRenewing = ((items.first?["autoRenewingPlan"] as? [String: Any])?["autoRenewEnabled"] as? Bool) ?? false
        acknowledged = object["acknowledgementState"] as? String == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
        obfuscatedAccountID = (object["externalAccountIdentifiers"] as? [String: Any])?["obfuscatedExternalAccountId"] as? String
        test = object["testPurchase"] != nil
        latestOrderID = object["latestOrderId"] as? String
        linkedPurchaseToken = object["linkedPurchaseToken"] as? String
    }
}

/// How a Play subscription's state becomes a purchase row (docs/subscriptions.md#google-play). Google
/// sends no grace end: in IN_GRACE_PERIOD the line item's `expiryTime` is the end of the grace period,
/// so the paid period is taken to have ended when the state was read.
enum PlaySubscriptionRules {
    /// The purchase row's values for `subscription` of `token` as read from Google at `now` (its
    /// `signedAt`: a read older than the one applied is stale); nil for a product the catalogue does
    /// not list. `revokedAt`: when an RTDN said the purchase was revoked or voided (a refund).
    static func update(
        _ subscription: PlaySubscription, token: String, revokedAt: Int64?, catalogue: ProductCatalogue, at now: Int64
    ) -> EntitlementStore.PurchaseUpdate? {
        guard let product = catalogue.product(.play, subscription.productID) else { return nil }
        var expires = subscription.expiresAt
        var grace: Int64?
        var retry = false
        switch subscription.state {
        case "ACTIVE", "CANCELED":
            break
        case "IN_GRACE_PERIOD":
            grace = subscription.expiresAt
            expires = min(subscription.expiresAt ?? now, now)
            retry = true
        case "ON_HOLD":
            expires = min(subscription.expiresAt ?? now, now)
            retry = true
        default:
            // PAUSED, EXPIRED, PENDING_PURCHASE_CANCELED, and any state this server does not know: no access.
            expires = min(subscription.expiresAt ?? now, now)
        }
        return EntitlementStore.PurchaseUpdate(
            source: .play, storeID: token, transactionID: subscription.latestOrderID ?? token, productID: subscription.productID,
            tier: product.tier, environment: subscription.test ? "Test" : "Production", startsAt: subscription.startsAt,
            expiresAt: expires, graceExpiresAt: grace, billingRetry: retry,
            autoRenewing: subscription.state == "ACTIVE" || subscription.state == "IN_GRACE_PERIOD" ? subscription.autoRenewing : false,
            revokedAt: revokedAt, signedAt: now)
    }

    /// RTDN `subscriptionNotification.notificationType` names (Play Billing, Real-time developer notifications reference).
    static func notificationName(_ type: Int) -> String {
        let names = [
            1: "RECOVERED", 2: "RENEWED", 3: "CANCELED", 4: "PURCHASED", 5: "ON_HOLD", 6: "IN_GRACE_PERIOD", 7: "RESTARTED",
            8: "PRICE_CHANGE_CONFIRMED", 9: "DEFERRED", 10: "PAUSED", 11: "PAUSE_SCHEDULE_CHANGED", 12: "REVOKED", 13: "EXPIRED",
            17: "ITEMS_CHANGED", 18: "CANCELLATION_SCHEDULED", 19: "PRICE_CHANGE_UPDATED", 20: "PENDING_PURCHASE_CANCELED",
        ]
        return "SUBSCRIPTION_" + (names[type] ?? "\(type)")
    }

    /// The RTDN type that revokes access at once (a refund through the Play Console or the API).
    static let revokedType = 12
}
