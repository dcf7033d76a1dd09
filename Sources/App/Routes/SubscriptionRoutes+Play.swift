import Domain
import Foundation
import Hashing
import Logging
import Storage
import Store
import Wire

/// Google Play (docs/subscriptions.md#google-play): a purchase token is never trusted as posted — the
/// server reads its state from the Play Developer API (`purchases.subscriptionsv2.get`) and acts on that,
/// for a purchase the app posts and for every Real-time developer notification alike.
extension SubscriptionRoutes {
    /// `POST /v1/me/purchases/google`: what Play Billing's `Purchase` holds.
    struct GooglePurchaseBody: Decodable, Sendable {
        var purchaseToken: String
        var productID: String
        enum CodingKeys: String, CodingKey {
            case purchaseToken = "purchase_token"
            case productID = "product_id"
        }
    }

    /// A Pub/Sub push (`{"message":{"data","messageId"},"subscription"}`).
    struct PubSubPush: Decodable, Sendable {
        struct Message: Decodable, Sendable {
            var data: String?
            var messageID: String
            enum CodingKeys: String, CodingKey {
                case data
                case messageID = "messageId"
            }
        }
        var message: Message
    }

    /// The RTDN `DeveloperNotification` inside `message.data` (base64 JSON).
    struct DeveloperNotification: Decodable, Sendable {
        struct Subscription: Decodable, Sendable {
            var notificationType: Int
            var purchaseToken: String
        }
        struct Voided: Decodable, Sendable {
            var purchaseToken: String
            var productType: Int?
        }
        var packageName: String
        var subscriptionNotification: Subscription?
        var voidedPurchaseNotification: Voided?
    }

    /// → 200 with the entitlement. 404 CA074 without Play configuration; 422 CA070 when Google does not
    /// know the token (or it is for another product); 422 CA078 while its payment is pending; 422 CA073
    /// for a product the catalogue does not list; 403 CA072 when `obfuscatedExternalAccountId` names
    /// another account; 409 CA071 when the purchase is another account's; 503 when Google cannot be reached.
    static func googlePurchase(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let play = try playAPI(services)
        let user = try await services.authenticate(request).user
        let body = try JSONBody.decode(GooglePurchaseBody.self, from: request)
        guard PlayDeveloperAPI.isPlausibleToken(body.purchaseToken) else {
            throw APIError(.purchaseInvalid, "purchase_token refused: not a purchase token", field: "purchase_token")
        }
        let readAt = services.clock.nowMilliseconds()
        let subscription = try await read(play, token: body.purchaseToken, at: readAt, services)
        guard subscription.productID == body.productID else {
            throw APIError(.purchaseInvalid, "purchase_token refused: product_mismatch", field: "product_id")
        }
        if let account = subscription.obfuscatedAccountID, account.lowercased() != user.id.lowercased() {
            throw APIError(.purchaseAccountMismatch, "the purchase was made for another account (obfuscatedExternalAccountId)")
        }
        guard subscription.state != "PENDING" else {
            throw APIError(.purchasePending, "the payment is pending: the purchase counts once Google Play completes it")
        }
        let catalogue = services.config.subscriptions.catalogue
        let transfer = services.config.subscriptions.purchaseTransfer
        let token = body.purchaseToken
        let answer = try await services.database.write { db -> Entitlement in
            let now = services.clock.nowMilliseconds()
            let revoked = try EntitlementStore.revokedAt(source: .play, storeID: token, on: db)
            guard
                let update = PlaySubscriptionRules.update(subscription, token: token, revokedAt: revoked, catalogue: catalogue, at: readAt)
            else { throw APIError(.productUnknown, "\(subscription.productID) is not a product of this server", field: "product_id") }
            // The purchase it replaced is this account's too: one bound elsewhere is refused as a claim of it would be.
            let linked = subscription.linkedPurchaseToken.flatMap { PlayDeveloperAPI.isPlausibleToken($0) ? $0 : nil }
            if let linked, let previous = try EntitlementStore.owner(source: .play, storeID: linked, on: db).userID, previous != user.id,
                transfer == .refuse
            {
                throw APIError(.purchaseOwnedElsewhere, "the purchase this one replaces belongs to another account")
            }
            try claim(update, userID: user.id, transfer: transfer, cause: .purchase, at: now, on: db)
            if let linked, linked != token {
                try EntitlementStore.supersede(source: .play, storeID: linked, by: token, actor: .user(user.id), at: now, on: db)
            }
            return try EntitlementStore.entitlement(userID: user.id, at: now, on: db)
        }
        await acknowledgeIfNeeded(play, subscription, token: token, services)
        return JSONBody.response(answer)
    }

    /// A Real-time developer notification (Pub/Sub push), authenticated by `?token=` (`--play-rtdn-token-file`,
    /// compared in constant time) and/or Pub/Sub's OIDC bearer token (`--play-rtdn-audience`; both when both
    /// are set). The message only says that something changed: the subscription is read
    /// again from the API. Recorded by `messageId` (a redelivery changes nothing) and answered 200 (Pub/Sub's
    /// acknowledgement) once handled; 503 when Google cannot be reached, so Pub/Sub delivers it again; 401
    /// without the right token; 422 for a body that is not a push.
    static func googleNotification(_ request: Request, _ services: Services) async throws -> HTTPResponse {
        let play = try playAPI(services)
        let secret = services.config.subscriptions.playRTDNToken
        let pushAuthenticator = services.config.subscriptions.playRTDNAuthenticator
        guard secret != nil || pushAuthenticator != nil else {
            throw APIError(
                .storeNotConfigured,
                "Google Play notifications are not configured on this server (--play-rtdn-token-file, --play-rtdn-audience)")
        }
        if let secret {
            guard let given = QueryParameters(request)["token"], ConstantTime.equals(Array(given.utf8), Array(secret.utf8)) else {
                services.metrics.storeNotification(source: .play, outcome: "refused")
                throw APIError(.authRequired, "the push's token is missing or wrong")
            }
        }
        if let pushAuthenticator {
            switch await pushAuthenticator.authenticate(bearer: request.bearerToken) {
            case .success: break
            case .failure(.keysUnavailable):
                services.logger.warning("play: RTDN not handled, Google's key set unavailable")
                throw APIError(.serviceUnavailable, "Google's key set could not be fetched", retryAfterSeconds: 60)
            case .failure(.invalid(let why)):
                services.metrics.storeNotification(source: .play, outcome: "refused")
                services.logger.notice("play: RTDN push refused", metadata: ["reason": "\(why)"])
                throw APIError(.authRequired, "the push's bearer token is missing or not Google's for this audience")
            }
        }
        let push = try JSONBody.decode(PubSubPush.self, from: request)
        let messageID = push.message.messageID
        guard !messageID.isEmpty, messageID.utf8.count <= maxMessageIDLength,
            let data = push.message.data.flatMap({ Data(base64Encoded: $0) }),
            let notification = try? JSONDecoder().decode(DeveloperNotification.self, from: data)
        else {
            services.metrics.storeNotification(source: .play, outcome: "refused")
            throw APIError(.validationFailed, "message.data is not a Play developer notification", field: "message")
        }
        let duplicate = try await services.database.read { db in try EntitlementStore.hasEvent(source: .play, eventID: messageID, on: db) }
        if duplicate {
            services.metrics.storeNotification(source: .play, outcome: "duplicate")
            return HTTPResponse(status: .ok)
        }
        let (type, token, revoked): (String, String?, Bool)
        if let s = notification.subscriptionNotification {
            (type, token, revoked) = (
                PlaySubscriptionRules.notificationName(s.notificationType), s.purchaseToken,
                s.notificationType == PlaySubscriptionRules.revokedType
            )
        } else if let v = notification.voidedPurchaseNotification {
            (type, token, revoked) = ("VOIDED_PURCHASE", v.purchaseToken, true)
        } else {
            (type, token, revoked) = ("OTHER", nil, false)
        }
        var subscription: PlaySubscription?
        // When Google's answer was current: its data counts as signed then (older reads are stale).
        let readAt = services.clock.nowMilliseconds()
        if notification.packageName == play.packageName, let known = token, PlayDeveloperAPI.isPlausibleToken(known) {
            switch await play.subscription(token: known, now: readAt) {
            case .success(let read): subscription = read
            case .failure(.notFound): break
            case .failure(.unavailable(let why)):
                services.logger.warning("play: RTDN not handled, Google Play unreachable", metadata: ["error": "\(why)"])
                throw APIError(.serviceUnavailable, "Google Play could not be reached", retryAfterSeconds: 60)
            }
        }
        let catalogue = services.config.subscriptions.catalogue
        let read = subscription
        let result = try await services.database.write { db -> (outcome: String, owner: String?) in
            let now = services.clock.nowMilliseconds()
            guard !(try EntitlementStore.hasEvent(source: .play, eventID: messageID, on: db)) else { return ("duplicate", nil) }
            var outcome = "ignored"
            var purchaseID: String?
            var owner: String?
            if let read, let token {
                let wasRevoked = try EntitlementStore.revokedAt(source: .play, storeID: token, on: db)
                if let update = PlaySubscriptionRules.update(
                    read, token: token, revokedAt: wasRevoked ?? (revoked ? now : nil), catalogue: catalogue, at: readAt)
                {
                    purchaseID = "\(EntitlementSource.play.rawValue):\(token)"
                    // A purchase nobody claimed is bound by its obfuscatedExternalAccountId when that names an account.
                    let known = try EntitlementStore.owner(source: .play, storeID: token, on: db)
                    var bindTo: String?
                    if known.userID == nil, let account = read.obfuscatedAccountID?.lowercased(),
                        try AccountStore.user(id: account, on: db) != nil
                    {
                        bindTo = account
                    }
                    // An upgrade's new token belongs to the account of the purchase it replaced, which ends.
                    let linked = read.linkedPurchaseToken.flatMap { PlayDeveloperAPI.isPlausibleToken($0) && $0 != token ? $0 : nil }
                    if known.userID == nil, bindTo == nil, let linked {
                        bindTo = try EntitlementStore.owner(source: .play, storeID: linked, on: db).userID
                    }
                    let applied = try EntitlementStore.apply(update, bindTo: bindTo, cause: .notification, actor: .system, at: now, on: db)
                    owner = applied.userID
                    if let linked, applied.applied {
                        try EntitlementStore.supersede(source: .play, storeID: linked, by: token, actor: .system, at: now, on: db)
                    }
                    outcome = !applied.applied ? "stale" : (owner == nil ? "unbound" : "applied")
                }
            }
            _ = try EntitlementStore.recordEvent(
                source: .play, eventID: messageID, type: type, subtype: nil, purchaseID: purchaseID, userID: owner, outcome: outcome,
                signedAt: nil, at: now, on: db)
            return (outcome, owner)
        }
        services.metrics.storeNotification(source: .play, outcome: result.outcome)
        if let read, let token, result.owner != nil { await acknowledgeIfNeeded(play, read, token: token, services) }
        return HTTPResponse(status: .ok)
    }

    /// Longest Pub/Sub `messageId` recorded (Google's are decimal strings of about 16 digits).
    static let maxMessageIDLength = 128

    // MARK: Helpers

    private static func playAPI(_ services: Services) throws -> PlayDeveloperAPI {
        guard let play = services.config.subscriptions.play else {
            throw APIError(.storeNotConfigured, "Google Play purchases are not configured on this server")
        }
        return play
    }

    /// The token's subscription as Google has it; unknown → 422 CA070, unreachable → 503.
    private static func read(_ play: PlayDeveloperAPI, token: String, at now: Int64, _ services: Services) async throws
        -> PlaySubscription
    {
        switch await play.subscription(token: token, now: now) {
        case .success(let subscription): return subscription
        case .failure(.notFound):
            throw APIError(.purchaseInvalid, "purchase_token refused: unknown to Google Play for this app", field: "purchase_token")
        case .failure(.unavailable(let why)):
            services.logger.warning("play: subscriptionsv2.get failed", metadata: ["error": "\(why)"])
            throw APIError(.serviceUnavailable, "Google Play could not be reached", retryAfterSeconds: 60)
        }
    }

    /// Acknowledges a purchase Google has not seen acknowledged (unacknowledged purchases are refunded
    /// after three days); a failure is retried later (`PlayAcknowledgements`).
    private static func acknowledgeIfNeeded(_ play: PlayDeveloperAPI, _ subscription: PlaySubscription, token: String, _ services: Services)
        async
    {
        await PlayAcknowledgements(play: play, services: services).acknowledge(subscription, token: token)
    }
}
