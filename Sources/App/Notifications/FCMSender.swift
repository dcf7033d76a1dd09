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
    /// The fields of a Google service-account JSON key file this sender needs.
    public struct ServiceAccount: Sendable, Decodable {
        /// The account's address: the assertion's `iss`.
        public var clientEmail: String
        /// The RSA private key (PKCS#8 PEM).
        public var privateKey: String
        /// Google's OAuth2 token endpoint: where the assertion is posted, and its `aud`.
        public var tokenURI: String
        /// The Firebase project the messages are sent in.
        public var projectID: String
        /// The key's id (`private_key_id`), sent as the assertion's `kid` when present.
        public var privateKeyID: String?

        enum CodingKeys: String, CodingKey {
            case clientEmail = "client_email", privateKey = "private_key", tokenURI = "token_uri", projectID = "project_id"
            case privateKeyID = "private_key_id"
        }

        /// An account; see the properties.
        public init(clientEmail: String, privateKey: String, tokenURI: String, projectID: String, privateKeyID: String? = nil) {
            self.clientEmail = clientEmail
            self.privateKey = privateKey
            self.tokenURI = tokenURI
            self.projectID = projectID
            self.privateKeyID = privateKeyID
        }
    }

    /// Why a service account could not be used.
    public enum ConfigurationError: Error, Equatable, CustomStringConvertible {
        /// The JSON lacks a field or is not JSON.
        case malformed(String)
        /// `private_key` is not an RSA private key (PKCS#8 PEM, 2048 bits or more).
        case invalidPrivateKey
        /// `token_uri` is not an https URL.
        case invalidTokenURI

        /// What to tell the operator.
        public var description: String {
            switch self {
            case .malformed(let detail): "service-account JSON: \(detail)"
            case .invalidPrivateKey: "service-account JSON: private_key is not an RSA private key (PKCS#8 PEM)"
            case .invalidTokenURI: "service-account JSON: token_uri is not an https URL"
            }
        }
    }

    /// The OAuth2 scope messages:send needs.
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// FCM's API origin.
    public static let defaultBaseURL = "https://fcm.googleapis.com"
    /// Lifetime asked for an assertion (Google accepts at most an hour).
    public static let assertionLifetimeSeconds: Int64 = 3_600
    /// An access token is replaced this long before Google's `expires_in` runs out.
    public static let refreshMarginMilliseconds: Int64 = 5 * 60_000
    /// Deadline of one request to the token endpoint or to FCM.
    public static let requestTimeout: Duration = .seconds(15)

    /// Serves FCM devices.
    public var provider: Device.Provider? { .fcm }

    private let account: ServiceAccount
    private let key: RSA.PrivateKey
    private let baseURL: String
    private let client: OutboundClient
    private let logger: Logger
    private let tokens: AccessTokens

    /// A sender for `account`, posting to `baseURL` (FCM's unless a test overrides it) through
    /// `client` (the caller owns and closes it); throws when the key or the token URI is unusable.
    public init(
        account: ServiceAccount, baseURL: String = FCMSender.defaultBaseURL, client: OutboundClient, logger: Logger
    ) throws(ConfigurationError) {
        guard let key = try? RSA.PrivateKey(pemRepresentation: account.privateKey) else { throw .invalidPrivateKey }
        guard account.tokenURI.hasPrefix("https://") else { throw .invalidTokenURI }
        // Google project ids are 6–30 of a-z, 0-9 and '-'; it goes into the request path unescaped.
        guard (1...64).contains(account.projectID.utf8.count),
            account.projectID.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2d })
        else { throw .malformed("project_id is not a Google project id") }
        self.account = account
        self.key = key
        self.baseURL = baseURL
        self.client = client
        self.logger = logger
        tokens = AccessTokens()
    }

    /// A sender for the service-account JSON key file at `serviceAccountFile`.
    public convenience init(serviceAccountFile: String, baseURL: String = FCMSender.defaultBaseURL, client: OutboundClient, logger: Logger)
        throws
    {
        let data = try Data(contentsOf: URL(fileURLWithPath: serviceAccountFile))
        let account: ServiceAccount
        do {
            account = try JSONDecoder().decode(ServiceAccount.self, from: data)
        } catch {
            throw ConfigurationError.malformed("\(error)")
        }
        try self.init(account: account, baseURL: baseURL, client: client, logger: logger)
    }

    /// One messages:send (after a grant when no fresh access token is cached); the answer mapped as
    /// docs/notifications.md#fcm--built tabulates.
    public func send(_ delivery: NotificationDeliveries.Delivery, now: Int64) async -> SendOutcome {
        guard case .device(_, let device) = delivery.target, case .token(let registrationToken) = device.address else {
            return .rejected(reason: "fcm: not an FCM device")
        }
        let accessToken: String
        switch await tokens.token(now: now, fetch: { await self.fetchAccessToken(now: now) }) {
        case .success(let token): accessToken = token
        case .failure(let failure): return failure.outcome
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
        case 200:
            return .delivered
        case 404:
            return .deviceGone(reason: described)
        case 400 where errorCode == "UNREGISTERED":
            return .deviceGone(reason: described)
        case 401:
            await tokens.discard(accessToken)
            return .retry(reason: described, retryAfterMilliseconds: 0)
        case 429, 500, 503:
            return .retry(reason: described, retryAfterMilliseconds: ProviderExchange.retryAfterMilliseconds(response.headers, now: now))
        case 500...599:
            return .retry(reason: described, retryAfterMilliseconds: nil)
        default:
            logger.warning(
                "fcm refused a notification",
                metadata: ["status": "\(response.status)", "error": "\(errorCode)", "message": "\(error?["message"] as? String ?? "")"])
            return .rejected(reason: described)
        }
    }

    /// One JWT-bearer grant (RFC 7523 §2.1) at `now`: the assertion `{iss, scope, aud, iat, exp}`
    /// posted form-encoded to `token_uri`.
    private func fetchAccessToken(now: Int64) async -> Result<AccessTokens.Token, AccessTokens.Failure> {
        let issuedAt = now / 1_000
        let assertion = JWT.signRS256(
            claims: [
                JWT.Claim("iss", .string(account.clientEmail)), JWT.Claim("scope", .string(Self.scope)),
                JWT.Claim("aud", .string(account.tokenURI)), JWT.Claim("iat", .integer(issuedAt)),
                JWT.Claim("exp", .integer(issuedAt + Self.assertionLifetimeSeconds)),
            ],
            keyID: account.privateKeyID, key: key)
        // A JWT is base64url and dots: nothing in it needs percent-encoding; the grant type's colons do.
        let body = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        let request = OutboundRequest(
            method: .post, url: account.tokenURI,
            headers: [HTTPField(name: "content-type", value: "application/x-www-form-urlencoded")], body: Array(body.utf8),
            timeout: Self.requestTimeout)
        let response: OutboundResponse
        do {
            response = try await client.send(request)
        } catch {
            return .failure(AccessTokens.Failure(outcome: ProviderExchange.outcome(of: error, provider: "fcm oauth")))
        }
        let object = ProviderExchange.jsonObject(response.body)
        guard response.status == 200 else {
            let error = object?["error"] as? String ?? ""
            let described = "fcm oauth \(response.status)" + (error.isEmpty ? "" : " \(error)")
            if response.status == 429 || response.status >= 500 {
                return .failure(
                    AccessTokens.Failure(
                        outcome: .retry(
                            reason: described, retryAfterMilliseconds: ProviderExchange.retryAfterMilliseconds(response.headers, now: now)))
                )
            }
            logger.error(
                "fcm: the token endpoint refused the service account", metadata: ["status": "\(response.status)", "error": "\(error)"])
            return .failure(AccessTokens.Failure(outcome: .rejected(reason: described)))
        }
        guard let accessToken = object?["access_token"] as? String, !accessToken.isEmpty,
            let expiresIn = (object?["expires_in"] as? NSNumber)?.int64Value, expiresIn > 0
        else {
            return .failure(
                AccessTokens.Failure(outcome: .retry(reason: "fcm oauth: malformed token response", retryAfterMilliseconds: nil)))
        }
        return .success(AccessTokens.Token(value: accessToken, refreshAt: now + expiresIn * 1_000 - Self.refreshMarginMilliseconds))
    }
}

/// The cached OAuth2 access token: one grant at a time — concurrent sends that find none wait for
/// the same grant instead of each asking Google.
actor AccessTokens {
    /// An access token and when to stop using it (Unix ms).
    struct Token: Sendable {
        var value: String
        var refreshAt: Int64
    }

    /// A grant that failed, with what it means for the delivery waiting on it.
    struct Failure: Error {
        var outcome: SendOutcome
    }

    private var current: Token?
    private var pending: Task<Result<Token, Failure>, Never>?

    /// The cached token while `now` is before its refresh time, else the result of one `fetch`
    /// (shared with every caller that asks meanwhile).
    func token(now: Int64, fetch: @escaping @Sendable () async -> Result<Token, Failure>) async -> Result<String, Failure> {
        if let current, now < current.refreshAt { return .success(current.value) }
        let task: Task<Result<Token, Failure>, Never>
        if let pending {
            task = pending
        } else {
            task = Task { await fetch() }
            pending = task
        }
        let result = await task.value
        if pending == task { pending = nil }
        if case .success(let token) = result { current = token }
        return result.map(\.value)
    }

    /// Forgets `value` if it is still the cached token (FCM answered 401): the next send asks again.
    func discard(_ value: String) {
        if current?.value == value { current = nil }
    }
}
