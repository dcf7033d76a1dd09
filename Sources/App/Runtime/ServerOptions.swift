import Domain
import Foundation
import IPAddresses
import Logging
import SQLite
import Wire

private typealias Defaults = AppConfiguration.Defaults

/// Every `chronir-server` option, declared once (docs/configuration.md's tables are generated from
/// this list and checked by `ConfigurationDocumentTests`). Order is the order of `--help` and of
/// the document.
public enum ServerOptions {
    public static var all: [ServerOption] { server + notifications + mail + signIn + subscriptions + tls }

    static var server: [ServerOption] {
        [
            .text(
                "host", .server, "address", .literal(Defaults.host), \.host,
                help: "address to listen on (IPv4 or IPv6 literal)"),
            .integer(
                "port", .server, "port", .literal("\(Defaults.port)"), 0...65535, \.port,
                help: "TCP port, 0–65535; `0` picks a free one (logged in the `listening` line)"),
            .text(
                "data-dir", .server, "directory", .literal(Defaults.dataDirectory), \.app.dataDirectory,
                help: "holds `chronir.sqlite` and `server.secret` (0600, generated); created (0700) when missing"),
            .text(
                "database-url", .server, "url", .words("none: SQLite"), \.app.databaseURL,
                help: """
                    `postgres://user@host:port/db?sslmode=…` (a libpq URI): the PostgreSQL database shared by every instance \
                    ([scaling](architecture.md#storage)); the log shows it with the password masked. Absent: the SQLite file in \
                    `--data-dir`
                    """),
            .integer(
                "database-writers", .server, "count", .literal("\(Defaults.databaseWriters)"), 0...64, \.app.databaseWriters,
                help: """
                    PostgreSQL: writer connections for the writes that run concurrently (profile and settings, personal sync, \
                    shared alarm edits and answers), besides the one writer of all others; `0`: they queue for that writer \
                    ([scaling](scaling.md#appended-at-commit))
                    """),
            .text(
                "public-dir", .server, "directory", .literal(Defaults.publicDirectory), \.publicDirectoryText,
                help: """
                    served at `/`; `\(Defaults.noPublicDirectory)` disables; a missing directory is logged as a warning and no \
                    static files are served
                    """),
            .integer(
                "loops", .server, "count", .words("active processors"), 1...256, \.loops,
                help: "event loops (serial queues serving sockets), 1–256"),
            .choice(
                "log-level", .server, .literal(Defaults.logLevel.rawValue), \.logLevel,
                help: """
                    `trace`, `debug`, `info`, `notice`, `warning`, `error`, `critical`; `info` includes one access-log line per \
                    request and one line per connection event
                    """),
            .choice(
                "log-format", .server, .literal(Defaults.logFormat.rawValue), \.logFormat,
                help: "`text` or `json` (one object per line), to stderr"),
            .choice(
                "durability", .server, .literal(Defaults.durability.rawValue), \.app.durability,
                help: "SQLite `synchronous=NORMAL` (WAL, fsync at checkpoints) or `full` (fsync per commit)"),
            .choice(
                "default-tier", .server, .literal(Defaults.defaultTier.rawValue), \.app.defaultTier,
                help: "tier of new accounts: `free`, `plus`, `premium` ([tiers](operations.md#tiers))"),
            .text(
                "public-base-url", .server, "url", .literal(Defaults.publicBaseURL(host: "HOST", port: "PORT")), \.publicBaseURL,
                help: "base of links the server hands out (join links, invitation links)"),
            .integer(
                "max-members", .server, "count", .literal("\(Defaults.maxMembersPerGroup)"), 2...1000, \.app.maxMembersPerGroup,
                help: "default member limit of a new group (2–1000)"),
            .list(
                "allowed-origins", .server, "origins", .words("same-origin"), \.app.allowedOrigins,
                help: """
                    comma-separated origins (`https://app.example.com`) allowed to open `/v1/realtime`; by default only the \
                    public base URL's origin (requests without `Origin`, i.e. non-browser clients, are always allowed)
                    """),
            ServerOption(
                name: "trusted-proxies", section: .server, valueName: "addresses", defaultValue: .words("none"),
                help: """
                    comma-separated IPs of reverse proxies whose `X-Forwarded-For` names the client (per-IP limits, access \
                    log); the header is ignored from any other peer. An entry that is not an IP address stops start-up
                    """
            ) { text, configuration throws(ServerOption.Invalid) in
                let addresses = ServerOption.splitList(text)
                if let bad = addresses.first(where: { !ClientNetwork.isIPAddress($0) }) {
                    throw ServerOption.Invalid("IP addresses; '\(bad)' is not one")
                }
                configuration.app.trustedProxies = Set(addresses)
            },
            .integer(
                "max-connections", .server, "count", .literal("\(Defaults.maxConnections)"), 1...Int.max, \.maxConnections,
                help: "at least 1; beyond it a new connection gets `503` and is closed"),
            .integer(
                "max-connections-per-ip", .server, "count", .words("half of `--max-connections`"), 1...Int.max,
                \.maxConnectionsPerAddress,
                help: """
                    connections one client address (IPv4 address, IPv6 /64) may hold; past it `429` and close; trusted proxies \
                    are exempt ([security-limits](security-limits.md))
                    """),
            .integer(
                "max-websockets-per-ip", .server, "count", .words("half of `--max-connections`"), 1...Int.max,
                \.maxWebSocketsPerAddress,
                help: """
                    WebSockets one client address may hold (behind `--trusted-proxies`: the forwarded client); past it the \
                    upgrade gets `429`
                    """),
            .integer(
                "registrations-per-ip-per-hour", .server, "count", .literal("\(Defaults.registrationLimits.perNetworkPerHour)"),
                1...Int.max, \.app.registrationLimits.perNetworkPerHour,
                help: "accounts one client address may register per sliding hour; `429` with `Retry-After`"),
            .integer(
                "registrations-per-hour", .server, "count", .literal("\(Defaults.registrationLimits.totalPerHour)"), 1...Int.max,
                \.app.registrationLimits.totalPerHour,
                help: "accounts the whole server registers per sliding hour (backstop)"),
            .integer(
                "hashing-threads", .server, "count", .words("half the processors, ≥ 1"), 1...256, \.app.hashingThreads,
                help: "threads for scrypt, separate from the pool that serves static files"),
            .integer(
                "hashing-queue", .server, "count", .literal("\(Defaults.maxQueuedHashes)"), 0...Int.max, \.app.maxQueuedHashes,
                help: "hashes that may wait for a hashing thread; past it register/login get `503` with `Retry-After: 1`"),
            .integer(
                "write-budget-per-minute", .server, "count", .literal("\(Defaults.writeBudget.writesPerMinute)"), 0...1_000_000,
                \.app.writeBudget.writesPerMinute,
                help: """
                    writes one signed-in user may make per minute, sustained; `429` with `Retry-After`; `0` disables \
                    ([security-budgets](security-budgets.md))
                    """),
            .integer(
                "write-budget-burst", .server, "count", .literal("\(Defaults.writeBudget.burst)"), 1...1_000_000,
                \.app.writeBudget.burst,
                help: "writes at once after being idle"),
            .integer(
                "write-bytes-per-hour", .server, "bytes", .literal("\(Defaults.writeBudget.bytesPerHour)"), 0...(Int64(1) << 40),
                \.app.writeBudget.bytesPerHour,
                help: "request-body bytes one user may write per hour (each write counts ≥ 1 KiB); `0` disables"),
            .integer(
                "max-attachment-bytes", .server, "bytes", .literal("\(Defaults.attachments.maxFileBytes)"), 1...(256 << 20),
                \.app.attachments.maxFileBytes,
                help: """
                    largest attachment upload (10 MiB), checked from `Content-Length` before the body is read → `413` CA009; \
                    the request is authenticated and authorised from its head before the body is streamed to a temporary \
                    file; 1…268435456; uploads count one write, not their bytes, against the write budget \
                    ([attachments](attachments.md#limits))
                    """),
            .integer(
                "attachment-quota-user", .server, "bytes", .literal("\(Defaults.attachments.userQuotaBytes)"),
                0...(Int64(1) << 50), \.app.attachments.userQuotaBytes,
                help: """
                    bytes of attachments one user may have uploaded, every group and personal alarm together, a deleted one \
                    counted until the sweep removes its file (1 GiB); an upload past it → `409` CA065; 0…2^50, 0 refuses \
                    every upload ([attachments](attachments.md#limits))
                    """),
            .integer(
                "attachment-quota-group", .server, "bytes", .literal("\(Defaults.attachments.groupQuotaBytes)"),
                0...(Int64(1) << 50), \.app.attachments.groupQuotaBytes,
                help: """
                    bytes of attachments in one group, whoever uploaded them, deleted ones counted until their file is gone \
                    (2 GiB) → `409` CA065 past it; 0…2^50
                    """),
            .text(
                "app-config-file", .server, "file", .words("none"), \.app.appConfigFile,
                help: """
                    JSON file of the apps' configuration — `min_app_version` per platform (older apps get `426` CA068), \
                    `features`, `ios_app_ids` and `android_app` (the deep-link association files); read at start-up (a bad \
                    file stops it) and again on SIGHUP (a bad file is logged and the previous one stays). Format: \
                    [apps](apps.md#the-app-configuration-file)
                    """),
            .integer(
                "sweep-period", .server, "seconds", .words("each job's own"), 1...86_400, \.sweepPeriodSeconds,
                help: """
                    seconds (1–86400): run every sweeper job — \(sweepJobs) — this often instead, each still once \
                    per period across every instance on the database; one `sweep` info line per run ([operations: \
                    logs](operations.md#logs)). For tests and drills (`Reliability/three-instances.sh` uses 2); every job is \
                    idempotent, so a short period costs only load
                    """),
            .integer(
                "shutdown-timeout", .server, "seconds", .literal("\(Defaults.shutdownTimeoutSeconds)"), 0...Int.max,
                \.shutdownTimeoutSeconds,
                help: "seconds (≥ 0) in-flight requests get on SIGTERM/SIGINT"),
            .choice(
                "password-hashing", .server, .literal(Defaults.passwordHashing.rawValue), \.app.passwordHashing,
                help: "scrypt cost; `fast` is for tests only (weak)"),
            .integer(
                "metrics-port", .server, "port", .words("none"), 0...65535, \.metricsPort,
                help: """
                    serve `/metrics` (Prometheus) on this separate port (`0`: a free one); see \
                    [operations: metrics](operations.md#metrics)
                    """),
            .text(
                "metrics-host", .server, "address", .literal(Defaults.metricsHost), \.metricsHost,
                help: "address of the `--metrics-port` listener"),
            .text(
                "metrics-token", .server, "token", .words("none"), \.metricsToken,
                help: """
                    bearer token `/metrics` requires (\(MetricsExposure.minimumTokenLength)+ characters; shorter stops \
                    start-up, empty counts as unset); without `--metrics-port` it serves `/metrics` on the API port. Neither \
                    set: `/metrics` is off. Prefer the environment variable (flags show in `ps`)
                    """),
        ]
    }

    static var notifications: [ServerOption] {
        [
            .text(
                "notify-webhook-url", .notifications, "url", .words("off"), \.app.notifications.webhookURL,
                help: """
                    https (or http) URL, any address, that gets every notification once as JSON, signed \
                    ([webhook](notifications.md#operator-webhook))
                    """),
            .text(
                "notify-webhook-secret-file", .notifications, "file", .words("none"), \.app.notifications.webhookSecretFile,
                help: "file holding the webhook's HMAC secret (≥ 16 bytes; one trailing newline ignored); required with the URL"),
            ServerOption(
                name: "web-push", section: .notifications, valueName: "on|off", defaultValue: .words("on"),
                help: "`on` or `off`; Web Push needs no credentials: the VAPID key pair is generated into the data directory"
            ) { text, configuration throws(ServerOption.Invalid) in
                switch text.lowercased() {
                case "on": configuration.app.notifications.webPushEnabled = true
                case "off": configuration.app.notifications.webPushEnabled = false
                default: throw ServerOption.Invalid("on, off")
                }
            },
            .text(
                "vapid-subject", .notifications, "contact", .words("the public base URL when https, else mailto:admin@localhost"),
                \.app.notifications.vapidSubject,
                help: "VAPID contact (`mailto:` or `https:`) push services may use to reach the operator"),
            pending(
                "apns-key-file", .notifications, "file", .words("off"),
                help: """
                    APNs token-authentication key (`.p8`, PKCS#8 PEM); with `--apns-key-id`, `--apns-team-id` and \
                    `--apns-topic`, all four or none
                    """),
            pending("apns-key-id", .notifications, "id", .words("none"), help: "the key's id (Apple developer account)"),
            pending("apns-team-id", .notifications, "id", .words("none"), help: "the developer team id"),
            pending("apns-topic", .notifications, "bundle-id", .words("none"), help: "the iOS app's bundle id"),
            pending(
                "apns-environment", .notifications, "production|sandbox", .words("production"),
                help: "`production` or `sandbox` (development builds)"),
            .text(
                "fcm-service-account-file", .notifications, "file", .words("off"), \.app.notifications.fcmServiceAccountFile,
                help: "FCM HTTP v1 service-account JSON (Firebase console)"),
            .toggle(
                "push-allow-private-endpoints", .notifications, \.app.notifications.allowPrivateEndpoints,
                help: """
                    allow users' Web Push endpoints on private, loopback and link-local addresses (tests, a LAN push service); \
                    off, they are refused after DNS resolution. The operator's own destinations — webhook, key sets, SMTP — \
                    are allowed on any address without it ([security.md](security.md#outbound-destinations))
                    """),
            .text(
                "outbound-ca-file", .notifications, "file", .words("system bundle"), \.app.notifications.caFile,
                help: "CA bundle outbound TLS trusts instead of the system's (tests, private CAs)"),
        ]
    }

    static var mail: [ServerOption] {
        [
            pending(
                "smtp-url", .mail, "url", .words("off"),
                help: """
                    `smtp://host:587` (STARTTLS required: a server without it is never sent to in clear) or \
                    `smtps://host:465` (implicit TLS); private and loopback hosts are allowed (a local relay)
                    """),
            pending("smtp-username", .mail, "user", .words("none: no AUTH"), help: "SMTP AUTH user"),
            pending(
                "smtp-password-file", .mail, "file", .words("none"),
                help: """
                    file holding the SMTP AUTH password (one trailing newline ignored); else the environment variable \
                    `CHRONIR_SMTP_PASSWORD` (never a flag: flags show in `ps`)
                    """),
            pending(
                "mail-from", .mail, "address", .words("none"),
                help: "sender address (`From:` and `MAIL FROM`); required with `--smtp-url`"),
        ]
    }

    static var signIn: [ServerOption] {
        [
            pending(
                "oidc-apple-client-ids", .signIn, "ids", .words("off"),
                help: """
                    comma-separated client ids Apple's ID tokens must be issued to (`aud`): the app's bundle id, the web \
                    flow's Services ID
                    """),
            pending(
                "oidc-apple-jwks-url", .signIn, "url", .words("Apple's (\(OIDCConfiguration.appleJWKSURL))"),
                help: "where Apple's signing keys are fetched (https only)"),
            pending(
                "oidc-apple-issuer", .signIn, "issuer", .words("Apple's (https://appleid.apple.com)"),
                help: "the `iss` Apple's tokens must carry (tests)"),
            pending(
                "oidc-apple-web-client-id", .signIn, "id", .words("none (no button)"),
                help: """
                    the Services ID the web client's *Sign in with Apple* button uses; one of `--oidc-apple-client-ids`; \
                    `<public base URL>/login` must be its registered return URL
                    """),
            pending(
                "oidc-google-client-ids", .signIn, "ids", .words("off"),
                help: "comma-separated OAuth client ids Google's ID tokens must be issued to"),
            pending(
                "oidc-google-jwks-url", .signIn, "url", .words("Google's (\(OIDCConfiguration.googleJWKSURL))"),
                help: "where Google's signing keys are fetched (https only)"),
            pending(
                "oidc-google-issuer", .signIn, "issuer", .words("Google's (https://accounts.google.com or accounts.google.com)"),
                help: "the `iss` Google's tokens must carry (tests)"),
            pending(
                "oidc-google-web-client-id", .signIn, "id", .words("none (no button)"),
                help: """
                    the web OAuth client id the web client's *Sign in with Google* button uses; one of \
                    `--oidc-google-client-ids`; `<public base URL>/login` must be an authorised redirect URI
                    """),
        ]
    }

    static var subscriptions: [ServerOption] {
        [
            pending(
                "products-file", .subscriptions, "file", .words("the seeds' eight products"),
                help: """
                    a JSON file `{"products":[{"store":…,"product_id":…,"tier":…}]}` (store `app_store` or `play`, tier `plus` \
                    or `premium`) replacing the product catalogue ([subscriptions](subscriptions.md#products))
                    """),
            pending(
                "appstore-bundle-id", .subscriptions, "id", .words("off"),
                help: "the app's bundle id: turns on App Store purchases and notifications; signed data must name it (`bundleId`)"),
            pending(
                "appstore-environment", .subscriptions, "name", .literal("Production"),
                help: "`Production`, `Sandbox`, `Xcode` or `LocalTesting`: the only `environment` accepted"),
            pending(
                "appstore-app-apple-id", .subscriptions, "number", .words("not checked"),
                help: "the app's Apple id: notifications must carry it (`appAppleId`); required with `Production`"),
            pending(
                "appstore-root-ca", .subscriptions, "file", .words("Apple Root CA - G3 (built in)"),
                help: "PEM or DER root certificate(s) replacing Apple's: Xcode's StoreKit testing certificate, tests"),
            pending(
                "appstore-key-file", .subscriptions, "file", .words("off: no status refresh, no history catch-up"),
                help: """
                    the App Store Connect In-App Purchase key (`.p8`, PKCS#8 P-256): turns on the App Store Server API status \
                    refresh (daily, at expiry) and the notification history catch-up (with `--appstore-key-id`, \
                    `--appstore-issuer-id`; [refresh](subscriptions.md#app-store-server-api))
                    """),
            pending(
                "appstore-key-id", .subscriptions, "id", .words("none"),
                help: "the In-App Purchase key's id (the API token's `kid`)"),
            pending(
                "appstore-issuer-id", .subscriptions, "id", .words("none"),
                help: "the App Store Connect issuer id (the API token's `iss`)"),
            pending(
                "appstore-api-url", .subscriptions, "url", .words("Apple's production API; sandbox unless `Production`"),
                help: "the App Store Server API's origin (tests point it at a fake)"),
            pending(
                "purchase-transfer", .subscriptions, "rule", .literal("refuse"),
                help: """
                    a purchase bound to another account: `refuse` (409 `PURCHASE_OWNED_ELSEWHERE`) or `transfer` (moves to the \
                    poster) ([transfer](subscriptions.md#one-purchase-one-account))
                    """),
            pending(
                "play-service-account-file", .subscriptions, "file", .words("off"),
                help: """
                    Google service-account JSON with access to the Play Developer API: turns on Google Play purchases \
                    (with `--play-package-name`); its `token_uri` is where the OAuth grant goes
                    """),
            pending(
                "play-package-name", .subscriptions, "name", .words("none"),
                help: "the Android app's package name: every Play Developer API call is made for it; RTDN for another is ignored"),
            pending(
                "play-api-url", .subscriptions, "url", .literal(PlayDeveloperAPI.defaultBaseURL),
                help: "the Play Developer API's origin (tests point it at a fake)"),
            pending(
                "play-rtdn-token-file", .subscriptions, "file", .words("off: RTDN answers 404"),
                help: """
                    file holding the secret (≥ 16 bytes; one trailing newline ignored) Pub/Sub's push URL carries as \
                    `?token=` ([RTDN](subscriptions.md#real-time-developer-notifications))
                    """),
            pending(
                "play-rtdn-audience", .subscriptions, "audience", .words("off"),
                help: """
                    the audience of the push subscription's OIDC tokens: each push must carry a Google-signed ID token for it \
                    (`Authorization: Bearer`; [RTDN](subscriptions.md#real-time-developer-notifications))
                    """),
            pending(
                "play-rtdn-service-account", .subscriptions, "email", .words("any signer"),
                help: "with `--play-rtdn-audience`: the push subscription's service account; tokens must name it (`email`, verified)"),
        ]
    }

    static var tls: [ServerOption] {
        [
            pending(
                "tls-cert", .tls, "file", .words("none: plain HTTP"),
                help: """
                    PEM certificate chain, leaf first (certbot's `fullchain.pem`); needs `--tls-key`. Read at start-up \
                    (unreadable or invalid: `critical`, exit 1) and again on SIGHUP
                    """),
            pending(
                "tls-key", .tls, "file", .words("none"),
                help: "PEM private key of the leaf (certbot's `privkey.pem`), unencrypted; must match the certificate"),
            .integer(
                "hsts-max-age", .tls, "seconds", .words("one year (31536000 s)"), 0...(10 * 31_536_000), \.hstsMaxAgeSeconds,
                help: """
                    with TLS, `Strict-Transport-Security: max-age=N` on every response (no `includeSubDomains`); `0` sends \
                    none; at most ten years
                    """),
            .integer(
                "http-redirect-port", .tls, "port", .words("none"), 0...65535, \.httpRedirectPort,
                help: """
                    with TLS, also listen for plain HTTP on this port (same `--host`) and answer every request `308` to \
                    `https://<host of --public-base-url><target>` (its port if an https URL names one, else the TLS port), \
                    never to the request's `Host`; nothing else is served there
                    """),
        ]
    }

    /// The sweeper's jobs with their own periods, as `--sweep-period`'s help lists them.
    private static var sweepJobs: String {
        Sweeper.Job.standard.map { "`\($0.name)` (own period \($0.everyMilliseconds / 1000) s)" }.joined(separator: ", ")
    }

    /// An option checked together with others of its section by `ChronirConfiguration.resolve()`.
    private static func pending(
        _ name: String, _ section: ServerOption.Section, _ valueName: String, _ defaultValue: ServerOption.Default, help: String
    ) -> ServerOption {
        ServerOption(name: name, section: section, valueName: valueName, defaultValue: defaultValue, help: help) {
            text, configuration throws(ServerOption.Invalid) in configuration.pending[name] = text
        }
    }
}
