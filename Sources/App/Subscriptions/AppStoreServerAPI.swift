import Foundation
public import Hashing
public import Identity
public import Outbound
import Push
import Synchronization

/// Apple's App Store Server API, the two calls this server makes: Get All Subscription Statuses
/// (`GET /inApps/v1/subscriptions/{originalTransactionId}`) and Get Notification History
/// (`POST /inApps/v1/notifications/history`; docs/subscriptions.md#app-store-server-api).
/// Authorised with an ES256 JWT made from the In-App Purchase key (`--appstore-key-file`, a `.p8`),
/// signed as APNs' provider tokens are (`JWT.signES256`), reused until `tokenRenewalSeconds` before it
/// expires. The answer's signed transactions and renewal infos are not trusted here: the caller
/// verifies them as it verifies a posted purchase (`AppStoreRefresher`).
public final class AppStoreServerAPI: Sendable {
    /// Apple's production origin (`--appstore-environment Production`).
    public static let productionURL = "https://api.storekit.itunes.apple.com"
    /// Apple's sandbox origin (every other environment; Xcode and LocalTesting data is unknown to it).
    public static let sandboxURL = "https://api.storekit-sandbox.itunes.apple.com"
    /// The JWT's `aud`, as Apple requires.
    public static let audience = "appstoreconnect-v1"
    /// A token's lifetime (`exp` − `iat`): Apple refuses tokens whose `exp` is more than 60 minutes after `iat`.
    public static let tokenLifetimeSeconds: Int64 = 60 * 60
    /// A cached token is replaced this long before its `exp` (room for clock skew and a slow request).
    public static let tokenRenewalSeconds: Int64 = 5 * 60
    /// Deadline of one API request.
    public static let requestTimeout: Duration = .seconds(15)
    /// Longest `originalTransactionId` accepted (Apple's are decimal numbers of about 16 digits); it goes
    /// into the request path, so anything longer or not `[0-9A-Za-z._-]` is refused before a request.
    public static let maxTransactionIDLength = 64

    /// The origin's default for an environment: production for `Production`, else sandbox.
    public static func defaultURL(for environment: AppStoreVerifier.Environment) -> String {
        environment == .production ? productionURL : sandboxURL
    }

    /// What the operator configures.
    public struct Configuration: Sendable, Equatable {
        /// The In-App Purchase key's id (the JWT header's `kid`).
        public var keyID: String
        /// The App Store Connect issuer id (the JWT's `iss`).
        public var issuerID: String
        /// The app's bundle id (the JWT's `bid`; `--appstore-bundle-id`).
        public var bundleID: String
        /// The API's origin (`--appstore-api-url`).
        public var baseURL: String

        /// A configuration; see the properties.
        public init(keyID: String, issuerID: String, bundleID: String, baseURL: String) {
            self.keyID = keyID
            self.issuerID = issuerID
            self.bundleID = bundleID
            self.baseURL = baseURL
        }
    }

    /// Why the API gave no answer to use.
    public enum Failure: Error, Sendable, Equatable {
        /// 404: Apple does not know the transaction (another app, another environment).
        case notFound
        /// 401: Apple refused the token — the key, its id or the issuer id is wrong or revoked.
        case unauthorized
        /// Unreachable, 429, 5xx, or an unreadable answer: try again later.
        case unavailable(String)
    }

    /// One subscription's latest data in the answer (`lastTransactions` item).
    public struct SignedStatus: Sendable, Equatable {
        /// `originalTransactionId`.
        public var originalTransactionID: String
        /// `status`: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
        public var status: Int
        /// `signedTransactionInfo` (a JWS).
        public var signedTransaction: String
        /// `signedRenewalInfo` (a JWS), when present.
        public var signedRenewalInfo: String?
    }

    /// One page of Get Notification History (`NotificationHistoryResponse`).
    public struct HistoryPage: Sendable, Equatable {
        /// Each `notificationHistory[].signedPayload`, as sent to the notification URL (a JWS).
        public var signedPayloads: [String]
        /// `paginationToken` when `hasMore` is true: the next page's; nil on the last page.
        public var nextPageToken: String?
    }

    /// Longest `paginationToken` accepted from Apple (it goes back into a query string; Apple's are UUIDs).
    public static let maxPaginationTokenLength = 256

    /// The configuration in use.
    public let configuration: Configuration
    private let key: P256.PrivateKey
    private let client: OutboundClient
    /// The token in use and its `iat` (Unix seconds).
    private let token = Mutex<(jwt: String, issuedAt: Int64)?>(nil)

    /// A client signing with `key`, sending through `client` (the caller owns and closes it).
    public init(configuration: Configuration, key: P256.PrivateKey, client: OutboundClient) {
        self.configuration = configuration
        self.key = key
        self.client = client
    }

    /// A client whose key is read from the `.p8` file at `keyFile` (PKCS#8 PEM of a P-256 key); throws
    /// when the file cannot be read or holds no such key.
    public convenience init(configuration: Configuration, keyFile: String, client: OutboundClient) throws {
        let text = try String(contentsOfFile: keyFile, encoding: .utf8)
        self.init(configuration: configuration, key: try P256.PrivateKey(pemRepresentation: text), client: client)
    }

    /// Whether `id` can be an `originalTransactionId` (see `maxTransactionIDLength`).
    public static func isPlausibleTransactionID(_ id: String) -> Bool {
        (1...maxTransactionIDLength).contains(id.utf8.count)
            && id.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c == 0x2e || c == 0x5f || c == 0x2d
            }
    }

    /// The bearer token for `now` (Unix ms): the cached one until `tokenRenewalSeconds` before its
    /// `exp`, else a new one — header `{typ JWT, alg ES256, kid}`, claims `{iss, iat, exp, aud, bid}`.
    func bearerToken(now: Int64) -> String {
        let seconds = now / 1_000
        return token.withLock { cached in
            if let cached, seconds >= cached.issuedAt, seconds < cached.issuedAt + Self.tokenLifetimeSeconds - Self.tokenRenewalSeconds {
                return cached.jwt
            }
            let jwt = JWT.signES256(
                claims: [
                    JWT.Claim("iss", .string(configuration.issuerID)), JWT.Claim("iat", .integer(seconds)),
                    JWT.Claim("exp", .integer(seconds + Self.tokenLifetimeSeconds)), JWT.Claim("aud", .string(Self.audience)),
                    JWT.Claim("bid", .string(configuration.bundleID)),
                ], keyID: configuration.keyID, key: key)
            cached = (jwt, seconds)
            return jwt
        }
    }

    /// Get All Subscription Statuses for `originalTransactionID`: every `lastTransactions` item of every
    /// subscription group in the answer. A 401 drops the cached token and is tried once with a new one.
    public func subscriptionStatuses(originalTransactionID: String, now: Int64) async -> Result<[SignedStatus], Failure> {
        guard Self.isPlausibleTransactionID(originalTransactionID) else { return .failure(.notFound) }
        return await call(.get, "\(configuration.baseURL)/inApps/v1/subscriptions/\(originalTransactionID)", body: [], now: now)
            .flatMap { body in Self.statuses(json: body).map { .success($0) } ?? .failure(.unavailable("malformed StatusResponse")) }
    }

    /// Get Notification History: the notifications Apple sent (or tried to send) from `start` up to
    /// `end` (Unix ms; Apple keeps 180 days), one page — the first, or the one `pageToken` names. A 401
    /// is handled as in `subscriptionStatuses`; 400/404 (a window Apple refuses) is `.notFound`.
    public func notificationHistory(start: Int64, end: Int64, pageToken: String?, now: Int64) async -> Result<HistoryPage, Failure> {
        var url = "\(configuration.baseURL)/inApps/v1/notifications/history"
        if let pageToken {
            guard (1...Self.maxPaginationTokenLength).contains(pageToken.utf8.count),
                let escaped = pageToken.addingPercentEncoding(withAllowedCharacters: .alphanumerics)
            else { return .failure(.unavailable("unusable paginationToken")) }
            url += "?paginationToken=\(escaped)"
        }
        let body = Array("{\"startDate\":\(start),\"endDate\":\(end)}".utf8)
        return await call(.post, url, body: body, now: now).flatMap { body in
            Self.historyPage(json: body).map { .success($0) } ?? .failure(.unavailable("malformed NotificationHistoryResponse"))
        }
    }

    /// One authorised request answered 200 → its body. A 401 drops the cached token and is tried once
    /// with a new one; 400/404 → `.notFound`; anything else → `.unavailable`.
    private func call(_ method: OutboundRequest.Method, _ url: String, body: [UInt8], now: Int64) async -> Result<[UInt8], Failure> {
        var retried = false
        while true {
            let jwt = bearerToken(now: now)
            let response: OutboundResponse
            do {
                response = try await client.send(.bearer(method, url, token: jwt, body: body, timeout: Self.requestTimeout))
            } catch {
                return .failure(.unavailable("\(error)"))
            }
            switch response.status {
            case 200: return .success(response.body)
            case 401 where !retried:
                token.withLock { cached in if cached?.jwt == jwt { cached = nil } }
                retried = true
            case 401: return .failure(.unauthorized)
            case 400, 404: return .failure(.notFound)
            default: return .failure(.unavailable("app store server api \(response.status)"))
            }
        }
    }

    /// `NotificationHistoryResponse`: the signed payloads and, when `hasMore`, the next page's token;
    /// nil when the document is not one (or says `hasMore` without a token).
    static func historyPage(json: [UInt8]) -> HistoryPage? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(json))) as? [String: Any],
            let items = object["notificationHistory"] as? [[String: Any]]
        else { return nil }
        var payloads: [String] = []
        for item in items {
            guard let signed = item["signedPayload"] as? String else { return nil }
            payloads.append(signed)
        }
        guard object["hasMore"] as? Bool == true else { return HistoryPage(signedPayloads: payloads, nextPageToken: nil) }
        guard let next = object["paginationToken"] as? String, !next.isEmpty else { return nil }
        return HistoryPage(signedPayloads: payloads, nextPageToken: next)
    }

    /// `StatusResponse.data[].lastTransactions[]`; nil when the document is not one.
    static func statuses(json: [UInt8]) -> [SignedStatus]? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(json))) as? [String: Any],
            let groups = object["data"] as? [[String: Any]]
        else { return nil }
        var out: [SignedStatus] = []
        for group in groups {
            for item in group["lastTransactions"] as? [[String: Any]] ?? [] {
                guard let original = item["originalTransactionId"] as? String, let signed = item["signedTransactionInfo"] as? String
                else { return nil }
                out.append(
                    SignedStatus(
                        originalTransactionID: original, status: item["status"] as? Int ?? 0, signedTransaction: signed,
                        signedRenewalInfo: item["signedRenewalInfo"] as? String))
            }
        }
        return out
    }
}
