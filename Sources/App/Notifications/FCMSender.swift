public import Domain
import Foundation
import Hashing
public import Logging
public import Outbound
import Push
public import Store

/// Firebase Cloud Messaging HTTP v1 (docs/notifications.md#fcm--built): a service account's RS256
/// assertion buys an OAuth2 access token (RFC 7523 JWT-bearer grant), cached until 5 minutes before
/// it expires; each delivery is one `POST …/v1/projects/<project>/messages:send` with it.
public final class FCMSender: NotificationSender {
    /// A Google service account (its JSON key file).
    public typealias ServiceAccount = GoogleServiceAccount
    /// Why a service account could not be used.
    public typealias ConfigurationError = GoogleServiceAccountError

    /// The OAuth2 scope messages:send needs.
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// FCM's API origin.
    public static let defaultBaseURL = "https://fcm.googleapis.com"
    /// An access token is replaced this long before Google's `expires_in` runs out.
    public static let refreshMarginMilliseconds = GoogleAccessGrant.refreshMarginMilliseconds
    /// Deadline of one request to the token endpoint or to FCM.
    public static let requestTimeout: Duration = .seconds(15)

    /// Serves FCM devices.
    public var provider: Device.Provider? { .fcm }

    private let account: ServiceAccount
    private let baseURL: String
    private let client: OutboundClient
    private let logger: Logger
    private let grant: GoogleAccessGrant

    /// A sender for `account`, posting to `baseURL` (FCM's unless a test overrides it) through
    /// `client` (the caller owns and closes it); throws when the key or the token URI is unusable.
    public init(
        account: ServiceAccount, baseURL: String = FCMSender.defaultBaseURL, client: OutboundClient, logger: Logger
    ) throws(ConfigurationError) {
        grant = try GoogleAccessGrant(account: account, scope: Self.scope, client: client)
        // Google project ids are 6–30 of a-z, 0-9 and '-'; it goes into the request path unescaped.
        guard (1...64).contains(account.projectID.utf8.count),
            account.projectID.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2d })
        else { throw .malformed("project_id is not a Google project id") }
        self.account = account
        self.baseURL = baseURL
        self.client = client
        self.logger = logger
    }

    /// A sender for the service-account JSON key file at `serviceAccountFile`.
    public convenience init(serviceAccountFile: String, baseURL: String = FCMSender.defaultBaseURL, client: OutboundClient, logger: Logger)
        throws
    {
        try self.init(account: try GoogleServiceAccount(file: serviceAccountFile), baseURL: baseURL, client: client, logger: logger)
    }

    /// One messages:send (after a grant when no fresh access token is cached); the answer mapped as
    /// docs/notifications.md#fcm--built tabulates.
    public func send(_ delivery: NotificationDeliveries.Delivery, now: Int64) async -> SendOutcome {
        guard case .device(_, let device) = delivery.target, case .token(let registrationToken) = device.address else {
            return .rejected(reason: "fcm: not an FCM device")
        }
        let accessToken: String
        switch await grant.token(now: now) {
        case .success(let token): accessToken = token
        case .failure(let failure): return outcome(of: failure)
        }
        let request = OutboundRequest(
            method: .post, url: "\(baseURL)/v1/projects/\(account.projectID)/messages:send",
            headers: [
                HTTPField(name: "authorization", value: "Bearer \(accessToken)"),
                HTTPField(name: "content-type", value: "application/json; charset=utf-8"),
            ],
            body: Self.message(delivery, token: registrationToken, now: now), timeout: Self.requestTimeout)
        let response: OutboundResponse
        do {
            response = try await client.send(request)
        } catch {
            return ProviderExchange.outcome(of: error, provider: "fcm")
        }
        return await outcome(of: response, accessToken: accessToken, now: now)
    }

    /// The messages:send body: notification, string data, Android priority/TTL/collapse key, and
    /// the APNs priority for iOS devices reached through FCM.
    /// A silent type is a data-only message (no `notification`: the app's messaging service handles it
    /// without showing anything) and, for iOS through FCM, an APNs background push.
    static func message(_ delivery: NotificationDeliveries.Delivery, token: String, now: Int64) -> [UInt8] {
        let policy = delivery.type.policy
        let ttlSeconds = max(0, (delivery.expiresAt - now) / 1_000)
        var message: [String: Any] = [
            "token": token,
            "data": delivery.content.data,
            "android": [
                "priority": policy.priority == .high && !policy.silent ? "HIGH" : "NORMAL",
                "ttl": "\(ttlSeconds)s",
                "collapse_key": ProviderExchange.collapseKey(delivery.key),
            ],
        ]
        if policy.silent {
            message["apns"] = [
                "headers": ["apns-priority": "5", "apns-push-type": "background"],
                "payload": ["aps": ["content-available": 1]],
            ]
        } else {
            let words = NotificationText.words(delivery.content)
            message["notification"] = ["title": words.title, "body": words.body]
            message["apns"] = ["headers": ["apns-priority": policy.priority == .high ? "10" : "5"]]
        }
        return ProviderExchange.json(["message": message])
    }

    /// FCM's answer as an outcome (FCM HTTP v1 `ErrorCode`s).
    private func outcome(of response: OutboundResponse, accessToken: String, now: Int64) async -> SendOutcome {
        let error = ProviderExchange.jsonObject(response.body)?["error"] as? [String: Any]
        let status = error?["status"] as? String ?? ""
        let details = error?["details"] as? [[String: Any]] ?? []
        let errorCode = details.compactMap { $0["errorCode"] as? String }.first ?? status
        let described = "fcm \(response.status)" + (errorCode.isEmpty ? "" : " \(errorCode)")
        switch response.status {
        case 404:
            return .deviceGone(reason: described)
        case 400 where errorCode == "UNREGISTERED":
            return .deviceGone(reason: described)
        case 401:
            await grant.discard(accessToken)
            return .retry(reason: described, retryAfterMilliseconds: 0)
        default:
            let outcome = ProviderExchange.outcome(ofStatus: response, described: described, now: now)
            if case .rejected = outcome {
                logger.warning(
                    "fcm refused a notification",
                    metadata: ["status": "\(response.status)", "error": "\(errorCode)", "message": "\(error?["message"] as? String ?? "")"])
            }
            return outcome
        }
    }

    /// A failed grant as the outcome of the delivery waiting on it.
    private func outcome(of failure: GoogleAccessGrant.Failure) -> SendOutcome {
        switch failure {
        case .transport(let error):
            return ProviderExchange.outcome(of: error, provider: "fcm oauth")
        case .unavailable(let status, let retryAfter):
            return .retry(reason: "fcm oauth \(status)", retryAfterMilliseconds: retryAfter)
        case .refused(let status, let error):
            logger.error("fcm: the token endpoint refused the service account", metadata: ["status": "\(status)", "error": "\(error)"])
            return .rejected(reason: "fcm oauth \(status)" + (error.isEmpty ? "" : " \(error)"))
        case .malformed:
            return .retry(reason: "fcm oauth: malformed token response", retryAfterMilliseconds: nil)
        }
    }
}
