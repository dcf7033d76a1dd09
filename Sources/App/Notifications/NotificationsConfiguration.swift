/// How the server reaches people who hold no socket (docs/configuration.md#notifications). A
/// provider whose settings are absent is off (logged once at start-up); the fire scheduler and the
/// outbox run regardless, so nothing is lost while a provider is off — notifications past their
/// time to live expire.
public struct NotificationsConfiguration: Sendable {
    /// The operator's webhook (`--notify-webhook-url`), https (http for a LAN bridge), any address; nil: off.
    public var webhookURL: String? = nil
    /// File holding the webhook's HMAC secret (`--notify-webhook-secret-file`; ≥ 16 bytes, trailing
    /// newline ignored). Required with `webhookURL`.
    public var webhookSecretFile: String? = nil
    /// VAPID `sub` contact (`--vapid-subject`, `mailto:` or `https:`); nil: the public base URL when
    /// it is https, else `mailto:admin@localhost`. Web Push is on unless `webPushEnabled` is false.
    public var vapidSubject: String? = nil
    /// Web Push (`--web-push`, default on): needs no credentials — the VAPID key pair is generated
    /// into the data directory.
    public var webPushEnabled = true
    /// APNs token authentication (`--apns-key-file`, `--apns-key-id`, `--apns-team-id`,
    /// `--apns-topic`, `--apns-environment`); nil: off.
    public var apns: APNs? = nil
    /// FCM HTTP v1 service-account JSON (`--fcm-service-account-file`); nil: off.
    public var fcmServiceAccountFile: String? = nil
    /// Allow users' Web Push endpoints on private, loopback and link-local addresses
    /// (`--push-allow-private-endpoints`: tests, a LAN push service). Off: refused after DNS. The
    /// operator's own destinations (webhook, key sets, SMTP) never need it.
    public var allowPrivateEndpoints = false
    /// An extra CA bundle outbound TLS trusts instead of the system's (`--outbound-ca-file`: tests,
    /// private CAs); nil: the system bundle.
    public var caFile: String? = nil

    /// APNs settings.
    public struct APNs: Sendable, Equatable {
        public typealias Environment = APNsSender.Environment
        /// The `.p8` signing key (PKCS#8 PEM) from the Apple developer account.
        public var keyFile: String
        /// Key id, team id, bundle id (`apns-topic`) and environment, as the sender takes them.
        public var sender: APNsSender.Configuration

        public init(keyFile: String, sender: APNsSender.Configuration) {
            self.keyFile = keyFile
            self.sender = sender
        }
    }

    public init() {}
}
