public import Domain
import Identity
public import Logging
public import Outbound

/// Pub/Sub push authentication (docs/subscriptions.md#real-time-developer-notifications): a push
/// subscription with authentication on sends `Authorization: Bearer` a Google-signed OpenID Connect ID
/// token. It is verified with the sign-in machinery (`IDTokenVerifier` against Google's key set through
/// `KeySetSource`), without a nonce (`verifyWithoutNonce`: Pub/Sub sends none): issuer
/// `https://accounts.google.com`, `aud` = `--play-rtdn-audience`, and when `--play-rtdn-service-account`
/// is set, `email` = it with `email_verified`.
public final class PubSubPushAuthenticator: Sendable {
    /// Google's key set (what Google sign-in uses too).
    public static let googleKeySetURL = "https://www.googleapis.com/oauth2/v3/certs"

    /// Why a push is refused.
    public enum Refusal: Error, Sendable, Equatable {
        /// No bearer token, or one that does not verify (the verifier's reason), or another signer's account.
        case invalid(String)
        /// Google's key set could not be fetched (and none is cached): the push is answered 503, Pub/Sub retries.
        case keysUnavailable
    }

    /// What the operator configures.
    public struct Configuration: Sendable, Equatable {
        /// The `aud` the push subscription puts in its tokens (`--play-rtdn-audience`).
        public var audience: String
        /// The service account whose tokens are accepted (`--play-rtdn-service-account`); nil: any.
        public var serviceAccount: String?
        /// Where Google's key set is fetched (tests: a fake).
        public var keySetURL: String

        public init(audience: String, serviceAccount: String? = nil, keySetURL: String = PubSubPushAuthenticator.googleKeySetURL) {
            self.audience = audience
            self.serviceAccount = serviceAccount
            self.keySetURL = keySetURL
        }
    }

    /// The configuration in use.
    public let configuration: Configuration
    private let verifier: IDTokenVerifier
    private let source: KeySetSource
    private let clock: any WallClock

    /// Fetches Google's key set through `client` (the caller owns and closes it); `clock` dates `exp`/`iat` checks.
    public init(configuration: Configuration, client: OutboundClient, clock: any WallClock, logger: Logger) {
        self.configuration = configuration
        verifier = .google(clientIDs: [configuration.audience])
        source = KeySetSource(provider: .google, url: configuration.keySetURL, client: client, clock: clock, logger: logger)
        self.clock = clock
    }

    /// Checks the push's bearer token; the verified identity's email when accepted.
    public func authenticate(bearer: String?) async -> Result<String?, Refusal> {
        guard let bearer, !bearer.isEmpty else { return .failure(.invalid("no bearer token")) }
        let verifier = self.verifier
        switch await source.verify(clock: clock, { keys, now in verifier.verifyWithoutNonce(bearer, keys: keys, nowMilliseconds: now) }) {
        case .failure(.keysUnavailable), .failure(.disabled):
            return .failure(.keysUnavailable)
        case .failure(.invalid(let reason)):
            return .failure(.invalid("\(reason)"))
        case .success(let identity):
            if let account = configuration.serviceAccount {
                guard identity.email == account, identity.emailVerified else {
                    return .failure(.invalid("signed for \(identity.email ?? "no email"), not \(account)"))
                }
            }
            return .success(identity.email)
        }
    }
}
