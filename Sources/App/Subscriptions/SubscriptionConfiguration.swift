public import Domain
public import Identity

/// Subscriptions and entitlements (docs/subscriptions.md): the product catalogue, the App Store's
/// verification settings, and what happens to a purchase another account claims.
public struct SubscriptionConfiguration: Sendable {
    /// Store product id → tier (`--products-file`; default the seeds' eight, API seed §9.1).
    public var catalogue: ProductCatalogue = .standard
    /// App Store signed-data verification; nil: `/v1/me/purchases/apple` and the notification endpoint answer 404.
    public var appStore: AppStoreVerifier? = nil
    /// Google Play as configured (`--play-service-account-file`, `--play-package-name`, `--play-api-url`,
    /// `--play-rtdn-token-file`); nil: the Play routes answer 404. The runtime builds `play` from it.
    public var playSettings: PlaySettings? = nil
    /// The Play Developer API client (built from `playSettings` at start-up; tests set one for a fake);
    /// nil: `/v1/me/purchases/google` answers 404.
    public var play: PlayDeveloperAPI? = nil
    /// The secret RTDN pushes must carry as `?token=` (`--play-rtdn-token-file`); nil: not checked.
    public var playRTDNToken: String? = nil
    /// The App Store Server API as configured (`--appstore-key-file`, `--appstore-key-id`,
    /// `--appstore-issuer-id`, `--appstore-api-url`); nil: no status refresh. The runtime builds `appStoreAPI` from it.
    public var appStoreAPISettings: AppStoreAPISettings? = nil
    /// The App Store Server API client (built from `appStoreAPISettings` at start-up; tests set one for
    /// a fake); nil: purchases follow notifications and the clock only.
    public var appStoreAPI: AppStoreServerAPI? = nil
    /// Pub/Sub push authentication for RTDN (`--play-rtdn-audience`, `--play-rtdn-service-account`);
    /// the runtime builds `playRTDNAuthenticator` from it.
    public var playRTDNPush: PubSubPushAuthenticator.Configuration? = nil
    /// The push authenticator (built from `playRTDNPush` at start-up; tests set one for a fake key set).
    /// RTDN answers 404 when neither it nor `playRTDNToken` is set; when both are, a push must pass both.
    public var playRTDNAuthenticator: PubSubPushAuthenticator? = nil
    /// A purchase already bound to another account (`--purchase-transfer`).
    public var purchaseTransfer: PurchaseTransfer = .refuse

    public init() {}

    /// Where Google Play's configuration comes from.
    public struct PlaySettings: Sendable, Equatable {
        /// The service account's JSON key file (its `token_uri` is where the OAuth grant goes).
        public var serviceAccountFile: String
        /// The app's package name.
        public var packageName: String
        /// The Play Developer API's origin.
        public var apiURL: String = PlayDeveloperAPI.defaultBaseURL

        public init(serviceAccountFile: String, packageName: String, apiURL: String = PlayDeveloperAPI.defaultBaseURL) {
            self.serviceAccountFile = serviceAccountFile
            self.packageName = packageName
            self.apiURL = apiURL
        }
    }

    /// Where the App Store Server API's configuration comes from.
    public struct AppStoreAPISettings: Sendable, Equatable {
        /// The In-App Purchase key (`.p8`, PKCS#8 PEM of a P-256 key).
        public var keyFile: String
        /// The key's id, the issuer id, the bundle id and the API's origin.
        public var api: AppStoreServerAPI.Configuration

        public init(keyFile: String, api: AppStoreServerAPI.Configuration) {
            self.keyFile = keyFile
            self.api = api
        }
    }

    /// What `--purchase-transfer` allows.
    public enum PurchaseTransfer: String, Sendable, CaseIterable {
        /// Refused with 409 `PURCHASE_OWNED_ELSEWHERE` (the default: one subscription, one account).
        case refuse
        /// Moved to the account that posts it; the previous account loses the entitlement.
        case transfer
    }
}
