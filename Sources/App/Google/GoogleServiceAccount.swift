import Foundation
import Hashing
public import Outbound
import Push

/// The fields of a Google service-account JSON key file the server uses (FCM, the Play Developer API).
public struct GoogleServiceAccount: Sendable, Decodable {
    /// The account's address: the assertion's `iss`.
    public var clientEmail: String
    /// The RSA private key (PKCS#8 PEM).
    public var privateKey: String
    /// Google's OAuth2 token endpoint: where the assertion is posted, and its `aud` (a test's fake sets its own).
    public var tokenURI: String
    /// The Google Cloud project the account belongs to.
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

    /// The account in the JSON key file at `path`.
    public init(file path: String) throws(GoogleServiceAccountError) {
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch { throw .malformed("cannot read \(path): \(error)") }
        do { self = try JSONDecoder().decode(GoogleServiceAccount.self, from: data) } catch { throw .malformed("\(error)") }
    }
}

/// Why a service account could not be used.
public enum GoogleServiceAccountError: Error, Equatable, CustomStringConvertible {
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

/// A service account's OAuth2 access tokens for one scope: an RS256 assertion posted to `token_uri`
/// (RFC 7523 §2.1 JWT-bearer grant), the token cached until `refreshMarginMilliseconds` before
/// Google's `expires_in` runs out, one grant at a time. FCM and the Play Developer API each hold one.
public final class GoogleAccessGrant: Sendable {
    /// Why no access token could be had.
    public enum Failure: Error, Sendable {
        /// The token endpoint could not be reached or answered nothing usable.
        case transport(OutboundError)
        /// 429 or 5xx: try again (after `retryAfterMilliseconds` when the endpoint said).
        case unavailable(status: Int, retryAfterMilliseconds: Int64?)
        /// Any other status: the account, key or scope is refused (`error` is Google's code).
        case refused(status: Int, error: String)
        /// 200 without `access_token` and a positive `expires_in`.
        case malformed
    }

    /// Lifetime asked for an assertion (Google accepts at most an hour).
    public static let assertionLifetimeSeconds: Int64 = 3_600
    /// An access token is replaced this long before Google's `expires_in` runs out.
    public static let refreshMarginMilliseconds: Int64 = 5 * 60_000
    /// Deadline of one request to the token endpoint.
    public static let requestTimeout: Duration = .seconds(15)

    /// The account the grant is for.
    public let account: GoogleServiceAccount
    /// The OAuth2 scope asked for.
    public let scope: String
    private let key: RSA.PrivateKey
    private let client: OutboundClient
    private let tokens = AccessTokens()

    /// A grant for `account` and `scope` through `client` (the caller owns and closes it); throws when
    /// the key or the token URI is unusable.
    public init(account: GoogleServiceAccount, scope: String, client: OutboundClient) throws(GoogleServiceAccountError) {
        guard let key = try? RSA.PrivateKey(pemRepresentation: account.privateKey) else { throw .invalidPrivateKey }
        guard account.tokenURI.hasPrefix("https://") else { throw .invalidTokenURI }
        self.account = account
        self.scope = scope
        self.key = key
        self.client = client
    }

    /// The cached access token while it is fresh at `now`, else one grant's (shared with every caller meanwhile).
    public func token(now: Int64) async -> Result<String, Failure> {
        await tokens.token(now: now, fetch: { await self.fetch(now: now) })
    }

    /// Forgets `value` if it is still the cached token (the API answered 401): the next call asks again.
    public func discard(_ value: String) async { await tokens.discard(value) }

    /// One JWT-bearer grant at `now`: the assertion `{iss, scope, aud, iat, exp}` posted form-encoded to `token_uri`.
    private func fetch(now: Int64) async -> Result<AccessTokens.Token, Failure> {
        let issuedAt = now / 1_000
        let assertion = JWT.signRS256(
            claims: [
                JWT.Claim("iss", .string(account.clientEmail)), JWT.Claim("scope", .string(scope)),
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
            return .failure(.transport(error))
        }
        let object = ProviderExchange.jsonObject(response.body)
        guard response.status == 200 else {
            if response.status == 429 || response.status >= 500 {
                return .failure(
                    .unavailable(
                        status: response.status, retryAfterMilliseconds: ProviderExchange.retryAfterMilliseconds(response.headers, now: now)
                    ))
            }
            return .failure(.refused(status: response.status, error: object?["error"] as? String ?? ""))
        }
        guard let accessToken = object?["access_token"] as? String, !accessToken.isEmpty,
            let expiresIn = (object?["expires_in"] as? NSNumber)?.int64Value, expiresIn > 0
        else { return .failure(.malformed) }
        return .success(AccessTokens.Token(value: accessToken, refreshAt: now + expiresIn * 1_000 - Self.refreshMarginMilliseconds))
    }
}

/// The cached OAuth2 access token: one grant at a time — concurrent callers that find none wait for
/// the same grant instead of each asking Google.
actor AccessTokens {
    /// An access token and when to stop using it (Unix ms).
    struct Token: Sendable {
        var value: String
        var refreshAt: Int64
    }

    private var current: Token?
    private var pending: Task<Result<Token, GoogleAccessGrant.Failure>, Never>?

    /// The cached token while `now` is before its refresh time, else the result of one `fetch`
    /// (shared with every caller that asks meanwhile).
    func token(
        now: Int64, fetch: @escaping @Sendable () async -> Result<Token, GoogleAccessGrant.Failure>
    ) async -> Result<String, GoogleAccessGrant.Failure> {
        if let current, now < current.refreshAt { return .success(current.value) }
        let task: Task<Result<Token, GoogleAccessGrant.Failure>, Never>
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

    /// Forgets `value` if it is still the cached token.
    func discard(_ value: String) {
        if current?.value == value { current = nil }
    }
}
