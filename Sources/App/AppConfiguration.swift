public import Domain
public import SQLite
import Storage

/// Everything the application layer needs to know, resolved by the executable from flags and
/// `CHRONIR_*` environment variables (docs/configuration.md).
public struct AppConfiguration: Sendable {
    /// Directory holding `chronir.sqlite` and `server.secret`.
    public var dataDirectory: String
    /// `postgres://user@host:port/db?sslmode=…` (`--database-url`, `CHRONIR_DATABASE_URL`): the
    /// shared PostgreSQL database of every instance. nil (the default): the embedded SQLite file in
    /// `dataDirectory`.
    public var databaseURL: String? = nil
    /// PostgreSQL writer connections for `.concurrent` writes (`--database-writers`;
    /// `PostgresConfiguration.concurrentWriterCount`).
    public var databaseWriters = Defaults.databaseWriters
    /// Directory served at `/` (the web client); nil serves no static files.
    public var publicDirectory: String?
    /// SQLite durability: `normal` (WAL, fsync at checkpoints) or `full` (fsync every commit).
    public var durability: Durability
    /// Tier given to new accounts.
    public var defaultTier: Tier
    /// Base URL used in links the server hands out (join links, invitation links).
    public var publicBaseURL: String
    /// Threads for blocking work that must stay quick (static files, migration checks), off the
    /// event loops. Password hashing never runs here (`hashingThreads`).
    public var workerThreads: Int
    /// Threads for password hashing (scrypt), a pool of its own so hashing never queues in front of
    /// static files or plain reads (`--hashing-threads`; the server defaults to half the cores).
    public var hashingThreads: Int = 1
    /// Hashes that may wait behind the running ones (`--hashing-queue`). Past it, a registration or
    /// login is answered `503 SERVICE_UNAVAILABLE` with `Retry-After: 1` at once: a queue that grows
    /// without bound only turns a burst into minutes of latency for everyone who signs in.
    public var maxQueuedHashes: Int = Defaults.maxQueuedHashes
    /// Registrations per hour per client network and in total (`RegistrationLimits`).
    public var registrationLimits = Defaults.registrationLimits
    /// WebSockets (`/v1/realtime`) one client network may hold open at once; past it the upgrade is
    /// answered `429 RATE_LIMITED` with `Retry-After`. Counted by the client behind a trusted proxy
    /// (`ClientAddress`). The server defaults it to half of `--max-connections`.
    public var maxWebSocketsPerAddress: Int = 5_000
    /// scrypt cost for new password hashes.
    public var passwordHashing: PasswordHashingCost
    /// Default `max_members` of a new group (docs/design.md#groups: 10).
    public var maxMembersPerGroup: Int
    /// Origins (`scheme://host[:port]`) allowed to open `/v1/realtime`. Empty: same-origin only
    /// (an `Origin` equal to `publicBaseURL`'s origin), plus clients that send no `Origin`.
    public var allowedOrigins: [String] = []
    /// Whether and how `/metrics` is served on the API port (docs/operations.md#metrics). Default: not at all.
    public var metrics = MetricsExposure()
    /// Peers (exact IP addresses, e.g. `127.0.0.1` for an nginx on the same host) whose
    /// `X-Forwarded-For` names the client (`ClientAddress`). Empty: the header is ignored.
    public var trustedProxies: Set<String> = []
    /// Per-user write budgets (`--write-budget-per-minute`, `--write-budget-burst`,
    /// `--write-bytes-per-hour`; docs/security-budgets.md). Default: `WriteBudget.standard`.
    public var writeBudget: WriteBudget = Defaults.writeBudget
    /// Push providers, the operator webhook and outbound TLS (docs/configuration.md#notifications).
    public var notifications = NotificationsConfiguration()
    /// Outbound mail (docs/configuration.md#mail); default: none.
    public var mail = MailConfiguration()
    /// Sign in with Apple and Google (docs/configuration.md#sign-in-with-apple-and-google); default: off.
    public var oidc = OIDCConfiguration()
    /// Subscriptions: products, App Store verification, purchase transfer (docs/subscriptions.md).
    public var subscriptions = SubscriptionConfiguration()
    /// Attachment limits (docs/attachments.md#limits).
    public var attachments = AttachmentConfiguration()
    /// The apps' configuration file (`--app-config-file`; docs/apps.md#the-app-configuration-file): minimum
    /// app versions, feature flags, deep-link app ids; read at start-up and on SIGHUP. nil: none.
    public var appConfigFile: String? = nil

    /// Defaults from `AppConfiguration.Defaults` (except `workerThreads`, which the server sets to the
    /// processor count).
    public init(
        dataDirectory: String = Defaults.dataDirectory, publicDirectory: String? = Defaults.publicDirectory,
        durability: Durability = Defaults.durability, defaultTier: Tier = Defaults.defaultTier,
        publicBaseURL: String = Defaults.publicBaseURL(host: Defaults.host, port: "\(Defaults.port)"),
        workerThreads: Int = 2, passwordHashing: PasswordHashingCost = Defaults.passwordHashing,
        maxMembersPerGroup: Int = Defaults.maxMembersPerGroup
    ) {
        self.dataDirectory = dataDirectory
        self.publicDirectory = publicDirectory
        self.durability = durability
        self.defaultTier = defaultTier
        self.publicBaseURL = publicBaseURL
        self.workerThreads = workerThreads
        self.passwordHashing = passwordHashing
        self.maxMembersPerGroup = maxMembersPerGroup
    }

    /// The database file inside the data directory.
    public var databasePath: String { dataDirectory + "/chronir.sqlite" }
    /// The server secret file inside the data directory.
    public var secretPath: String { dataDirectory + "/server.secret" }
}

/// scrypt cost presets. `interactive` for production; `fast` only for tests (it is weak).
public enum PasswordHashingCost: String, Sendable, CaseIterable {
    case interactive, fast
}

/// How `/metrics` may be read. The safe default serves it nowhere: on the API port it exists only
/// behind a bearer token; without a token it belongs on a separate listener (`MetricsResponder`,
/// `--metrics-port`, loopback unless `--metrics-host` says otherwise).
public struct MetricsExposure: Sendable {
    /// Serve `GET /metrics` on the API port. Requires `token`.
    public var onMainPort: Bool
    /// The bearer token a scrape must present (`Authorization: Bearer …`); nil: none asked for.
    public var token: String?

    /// Shortest accepted token: a guessable token would make `/metrics` public.
    public static let minimumTokenLength = 16

    public init(onMainPort: Bool = false, token: String? = nil) {
        precondition(!onMainPort || token != nil, "/metrics on the API port needs a token")
        self.onMainPort = onMainPort
        self.token = token
    }
}
