public import Domain
public import Identity
public import Logging
public import Outbound

/// Verifies Sign in with Apple/Google ID tokens (docs/sign-in.md#verification): the configured
/// providers' verifiers (`IDTokenVerifier`, issuer and client ids from `OIDCConfiguration`) and their key
/// sets (`KeySetSource`, fetched through one `OutboundClient` the service owns — `close()` it at
/// shutdown).
public final class OIDCService: Sendable {
    /// The configuration.
    public let config: OIDCConfiguration
    /// The client key sets are fetched through.
    public let client: OutboundClient
    private let verifiers: [SignInProvider: IDTokenVerifier]
    private let sources: [SignInProvider: KeySetSource]
    private let clock: any WallClock
    private let logger: Logger

    /// Why `verify` did not produce an identity.
    public enum Refusal: Error, Equatable, Sendable {
        /// The provider has no client ids on this server.
        case disabled
        /// The token does not sign anyone in (the verifier's reason).
        case invalid(IDTokenError)
        /// No key set could be fetched (and none is cached).
        case keysUnavailable
    }

    /// Nil when `config` enables no provider. `allowPrivateDestinations`: key sets may be fetched
    /// from private and loopback addresses (the server passes true: key set URLs are the operator's
    /// configuration, docs/security.md "Outbound destinations"; https only either way); `caFile`:
    /// `--outbound-ca-file`.
    public init?(config: OIDCConfiguration, allowPrivateDestinations: Bool, caFile: String?, clock: any WallClock, logger: Logger) {
        guard config.isEnabled else { return nil }
        let client = OutboundClient(
            configuration: .init(policy: DestinationPolicy(allowPrivateDestinations: allowPrivateDestinations), caFile: caFile))
        var verifiers: [SignInProvider: IDTokenVerifier] = [:]
        var sources: [SignInProvider: KeySetSource] = [:]
        for provider in SignInProvider.allCases {
            guard let settings = config.provider(provider) else { continue }
            var verifier: IDTokenVerifier =
                switch provider {
                case .apple: .apple(clientIDs: Set(settings.clientIDs))
                case .google: .google(clientIDs: Set(settings.clientIDs))
                }
            if let issuer = settings.issuer { verifier.issuers = [issuer] }
            verifiers[provider] = verifier
            sources[provider] = KeySetSource(provider: provider, url: settings.jwksURL, client: client, clock: clock, logger: logger)
        }
        self.config = config
        self.client = client
        self.verifiers = verifiers
        self.sources = sources
        self.clock = clock
        self.logger = logger
    }

    /// Closes the outbound client (fetches in flight fail).
    public func close() { client.close() }

    /// Verifies `token` of `provider` against its key set with the raw `nonce` the client sent, at
    /// the clock's now. A `kid` the cached set lacks fetches the set again once (`KeySetSource`) and
    /// retries; the nonce's replay check is the caller's (it belongs in the sign-in's transaction).
    public func verify(_ token: String, provider: SignInProvider, nonce: String) async -> Result<VerifiedIdentity, Refusal> {
        guard let verifier = verifiers[provider], let source = sources[provider] else { return .failure(.disabled) }
        return await source.verify(clock: clock) { keys, now in verifier.verify(token, keys: keys, nonce: nonce, nowMilliseconds: now) }
    }
}
