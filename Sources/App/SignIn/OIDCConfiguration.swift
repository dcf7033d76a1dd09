public import Domain

/// Sign in with Apple and Google (docs/configuration.md#sign-in-with-apple-and-google,
/// docs/sign-in.md). A provider without client ids is off: `POST /v1/auth/oidc` answers it 404
/// OIDC_PROVIDER_DISABLED. The key-set URL and the issuer are the provider's own unless overridden
/// (tests point them at a local JWKS server with locally minted keys).
public struct OIDCConfiguration: Sendable {
    /// One provider's settings.
    public struct Provider: Sendable, Equatable {
        /// The client ids an ID token's `aud` must name (Apple: the app's bundle id and the web
        /// flow's Services ID; Google: the OAuth client ids of the apps). Never empty.
        public var clientIDs: [String]
        /// Where the provider publishes its signing keys (https).
        public var jwksURL: String
        /// The `iss` tokens must carry; nil: the provider's own (`IDTokenVerifier.apple`/`.google`).
        public var issuer: String?
        /// The client id a web page starts the provider's own sign-in flow with (Apple: the Services
        /// ID; Google: the web OAuth client), one of `clientIDs`; nil: the web client shows no button
        /// for this provider (`GET /v1/auth/providers`).
        public var webClientID: String?

        public init(clientIDs: [String], jwksURL: String, issuer: String? = nil, webClientID: String? = nil) {
            self.clientIDs = clientIDs
            self.jwksURL = jwksURL
            self.issuer = issuer
            self.webClientID = webClientID
        }
    }

    /// Sign in with Apple (`--oidc-apple-client-ids`); nil: off.
    public var apple: Provider? = nil
    /// Google (`--oidc-google-client-ids`); nil: off.
    public var google: Provider? = nil

    /// Apple's published key set.
    public static let appleJWKSURL = "https://appleid.apple.com/auth/keys"
    /// Google's published key set (the JWK form of `https://www.googleapis.com/oauth2/v3/certs`).
    public static let googleJWKSURL = "https://www.googleapis.com/oauth2/v3/certs"

    /// The default key-set URL of `provider`.
    public static func defaultJWKSURL(_ provider: SignInProvider) -> String {
        switch provider {
        case .apple: appleJWKSURL
        case .google: googleJWKSURL
        }
    }

    /// The settings of `provider`, nil when it is off.
    public func provider(_ provider: SignInProvider) -> Provider? {
        switch provider {
        case .apple: apple
        case .google: google
        }
    }

    /// Whether any provider is on.
    public var isEnabled: Bool { apple != nil || google != nil }

    public init() {}
}
