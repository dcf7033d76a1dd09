import App
import ArgumentParser
import Dispatch
import Domain
import Foundation
import Logging
import Postgres
import SQLite
import Storage
import Store
import Synchronization
import Transport
import Wire

/// The defaults every option falls back to and prints in its help (one source: `AppConfig.Defaults`).
private typealias Default = AppConfig.Defaults

/// `chronir-server`: the Chronir group server daemon. Every option can also be set through the
/// `CHRONIR_*` environment variable named in its help; a flag wins over the environment.
@main
struct ChronirServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chronir-server",
        abstract: "Self-hosted realtime server for groups that share recurring alarms.",
        discussion: """
            Runs on an embedded SQLite database in --data-dir (created on first start, with a generated \
            server secret). Stop it with SIGTERM or Ctrl-C: it stops accepting, finishes in-flight \
            requests, closes idle connections and exits 0 within --shutdown-timeout seconds.
            """)

    @Option(help: "Address to listen on. [env: CHRONIR_HOST] (default: \(Default.host))")
    var host: String?

    @Option(help: "TCP port; 0 picks a free one. [env: CHRONIR_PORT] (default: \(Default.port))")
    var port: Int?

    @Option(help: "Directory for chronir.sqlite and server.secret. [env: CHRONIR_DATA_DIR] (default: \(Default.dataDirectory))")
    var dataDir: String?

    @Option(
        help: """
            PostgreSQL database shared by every instance, e.g. postgres://chronir@db:5432/chronir?sslmode=require \
            (libpq URI). Absent: the embedded SQLite file in --data-dir. [env: CHRONIR_DATABASE_URL]
            """)
    var databaseUrl: String?

    @Option(
        help:
            """
            Directory served at / (the web client); '\(Default.noPublicDirectory)' disables. [env: CHRONIR_PUBLIC_DIR] (default: \
            \(Default.publicDirectory))
            """
    )
    var publicDir: String?

    @Option(help: "Event loops (threads serving sockets). [env: CHRONIR_LOOPS] (default: active processors)")
    var loops: Int?

    @Option(help: "trace|debug|info|notice|warning|error|critical. [env: CHRONIR_LOG_LEVEL] (default: \(Default.logLevel.rawValue))")
    var logLevel: String?

    @Option(help: "text|json. [env: CHRONIR_LOG_FORMAT] (default: \(Default.logFormat.rawValue))")
    var logFormat: String?

    @Option(
        help:
            """
            normal (WAL, fsync at checkpoint) | full (fsync every commit). [env: CHRONIR_DURABILITY] (default: \
            \(Default.durability.rawValue))
            """
    )
    var durability: String?

    @Option(help: "Tier of new accounts: free|plus|premium. [env: CHRONIR_DEFAULT_TIER] (default: \(Default.defaultTier.rawValue))")
    var defaultTier: String?

    @Option(
        help:
            """
            Public base URL for links the server hands out. [env: CHRONIR_PUBLIC_BASE_URL] (default: \
            \(Default.publicBaseURL(host: "HOST", port: "PORT")))
            """
    )
    var publicBaseUrl: String?

    @Option(help: "Default member limit of a new group. [env: CHRONIR_MAX_MEMBERS] (default: \(Default.maxMembersPerGroup))")
    var maxMembers: Int?

    @Option(
        help:
            """
            Origins allowed to open /v1/realtime, comma-separated. [env: CHRONIR_ALLOWED_ORIGINS] (default: the public base URL's origin \
            only)
            """
    )
    var allowedOrigins: String?

    @Option(
        help:
            """
            Reverse proxies (exact IPs, comma-separated) whose X-Forwarded-For names the client, for per-IP limits and logs. [env: \
            CHRONIR_TRUSTED_PROXIES] (default: none — the header is ignored)
            """
    )
    var trustedProxies: String?

    @Option(
        help:
            """
            Maximum open client connections; past it new ones get 503 with Retry-After (GET /healthz still answers 200). [env: \
            CHRONIR_MAX_CONNECTIONS] (default: \(Default.maxConnections))
            """
    )
    var maxConnections: Int?

    @Option(
        help:
            """
            Connections one client address (an IPv4 address, an IPv6 /64) may hold; past it new ones get 429 and are closed. Trusted \
            proxies are exempt (behind them the WebSocket limit counts the forwarded client). [env: CHRONIR_MAX_CONNECTIONS_PER_IP] \
            (default: half of --max-connections)
            """
    )
    var maxConnectionsPerIp: Int?

    @Option(
        help:
            """
            WebSockets (/v1/realtime) one client address (IPv6: /64; behind --trusted-proxies: the forwarded client) may hold; past it \
            the upgrade gets 429. [env: CHRONIR_MAX_WEBSOCKETS_PER_IP] (default: half of --max-connections)
            """
    )
    var maxWebsocketsPerIp: Int?

    @Option(
        help:
            """
            Accounts one client address (IPv6: /64) may register per sliding hour; past it 429 with Retry-After. [env: \
            CHRONIR_REGISTRATIONS_PER_IP_PER_HOUR] (default: \(Default.registrationLimits.perNetworkPerHour))
            """
    )
    var registrationsPerIpPerHour: Int?

    @Option(
        help:
            """
            Accounts the whole server registers per sliding hour, a backstop against many addresses; past it 429 with Retry-After. [env: \
            CHRONIR_REGISTRATIONS_PER_HOUR] (default: \(Default.registrationLimits.totalPerHour))
            """
    )
    var registrationsPerHour: Int?

    @Option(
        help:
            """
            Threads for password hashing (scrypt), separate from the threads serving static files. [env: CHRONIR_HASHING_THREADS] \
            (default: half the active processors, at least 1)
            """
    )
    var hashingThreads: Int?

    @Option(
        help:
            """
            Password hashes that may wait for a hashing thread; past it register/login get 503 with Retry-After: 1. [env: \
            CHRONIR_HASHING_QUEUE] (default: \(Default.maxQueuedHashes))
            """
    )
    var hashingQueue: Int?

    @Option(
        help:
            """
            Seconds to wait for in-flight requests on shutdown. [env: CHRONIR_SHUTDOWN_TIMEOUT] (default: \
            \(Default.shutdownTimeoutSeconds))
            """
    )
    var shutdownTimeout: Int?

    @Option(
        help:
            """
            scrypt cost: interactive | fast (tests only: weak). [env: CHRONIR_PASSWORD_HASHING] (default: \
            \(Default.passwordHashing.rawValue))
            """
    )
    var passwordHashing: String?

    @Option(
        help:
            """
            Serve /metrics (Prometheus) on this separate port instead of the API port; 0 picks a free one. [env: CHRONIR_METRICS_PORT] \
            (default: none)
            """
    )
    var metricsPort: Int?

    @Option(help: "Address of the --metrics-port listener. [env: CHRONIR_METRICS_HOST] (default: \(Default.metricsHost))")
    var metricsHost: String?

    @Option(
        help:
            """
            Bearer token /metrics requires (16+ characters; prefer the environment variable). Without --metrics-port it serves /metrics \
            on the API port. [env: CHRONIR_METRICS_TOKEN] (default: none: /metrics is off unless --metrics-port is set)
            """
    )
    var metricsToken: String?

    @Option(
        help:
            """
            Writes (POST/PUT/PATCH/DELETE) one signed-in user may make per minute, sustained; beyond it 429 with Retry-After. 0 disables. \
            [env: CHRONIR_WRITE_BUDGET_PER_MINUTE] (default: \(Default.writeBudget.writesPerMinute))
            """
    )
    var writeBudgetPerMinute: Int?

    @Option(
        help:
            """
            Writes one user may make at once after being idle (the burst of --write-budget-per-minute). [env: CHRONIR_WRITE_BUDGET_BURST] \
            (default: \(Default.writeBudget.burst))
            """
    )
    var writeBudgetBurst: Int?

    @Option(
        help:
            """
            Largest attachment upload in bytes, checked from Content-Length before the body is read (413 PHOTO_TOO_LARGE); JSON bodies \
            keep 1 MiB. The request is authenticated and authorised from its head first; only then is the body \
            streamed to a temporary file under the data directory (never held in memory). [env: CHRONIR_MAX_ATTACHMENT_BYTES] \
            (default: \(Default.attachments.maxFileBytes), \(Default.attachments.maxFileBytes >> 20) MiB)
            """
    )
    var maxAttachmentBytes: Int?

    @Option(
        help:
            """
            Bytes of attachments one user may have uploaded, all groups and personal alarms together, a deleted one \
            counted until the sweep removes its file (409 ATTACHMENT_QUOTA_EXCEEDED past it); 0 refuses every upload. \
            [env: CHRONIR_ATTACHMENT_QUOTA_USER] \
            (default: \(Default.attachments.userQuotaBytes), \(Default.attachments.userQuotaBytes >> 20) MiB)
            """
    )
    var attachmentQuotaUser: Int64?

    @Option(
        help:
            """
            Bytes of attachments in one group, whoever uploaded them, deleted ones counted until their file is gone \
            (409 ATTACHMENT_QUOTA_EXCEEDED past it). \
            [env: CHRONIR_ATTACHMENT_QUOTA_GROUP] \
            (default: \(Default.attachments.groupQuotaBytes), \(Default.attachments.groupQuotaBytes >> 20) MiB)
            """
    )
    var attachmentQuotaGroup: Int64?

    @Option(
        help:
            """
            Request-body bytes one signed-in user may send in writes per hour (each write counts at least 1 KiB); beyond it 429 with \
            Retry-After. 0 disables. [env: CHRONIR_WRITE_BYTES_PER_HOUR] (default: \(Default.writeBudget.bytesPerHour), \
            \(Default.writeBudget.bytesPerHour >> 20) MiB)
            """
    )
    var writeBytesPerHour: Int?

    @Option(
        help:
            """
            Run every sweeper job (overdue occurrences, retention, change-log compaction) every this many seconds instead of its own \
            period; for tests and drills. [env: CHRONIR_SWEEP_PERIOD] (default: each job's own: \
            \(Sweeper.Job.standard.map { "\($0.name) \($0.everyMilliseconds / 1000) s" }.joined(separator: ", ")))
            """
    )
    var sweepPeriod: Int?

    @Option(
        help:
            """
            JSON file of the apps' configuration: min_app_version per platform, feature flags, ios_app_ids and android_app for the \
            deep-link association files (docs/apps.md); read again on SIGHUP. [env: CHRONIR_APP_CONFIG_FILE] (default: none)
            """
    )
    var appConfigFile: String?

    @OptionGroup(title: "Notifications")
    var notificationOptions: NotificationOptions

    @OptionGroup(title: "Mail")
    var mailOptions: MailOptions

    @OptionGroup(title: "TLS")
    var tlsOptions: TLSOptions

    @OptionGroup(title: "Sign in with Apple and Google")
    var oidcOptions: OIDCOptions

    func run() throws {
        // First, before anything starts a thread: signals are delivered through a signalfd, which
        // sees only signals every thread blocks (see SignalWatcher). The handler is bound later.
        let shutdown = Shutdown()
        let watcher = SignalWatcher(signals: SignalWatcher.shutdownAndReload) { signal in
            shutdown.handle(signal: signal)
        }
        let options = OptionValues(environment: ProcessInfo.processInfo.environment)
        let value = options.value
        func parse<T>(_ flag: String?, _ name: String, _ fallback: T, _ convert: (String) -> T?) throws -> T {
            try options.parse(flag, name, fallback, convert)
        }
        func parseOptional<T>(_ flag: String?, _ name: String, _ convert: (String) -> T?) throws -> T? {
            try options.parseOptional(flag, name, convert)
        }

        let host = value(host, "HOST") ?? Default.host
        let port = try parse(port.map(String.init), "PORT", Default.port) { Int($0).flatMap { (0...65535).contains($0) ? $0 : nil } }
        let loops = try parse(loops.map(String.init), "LOOPS", ProcessInfo.processInfo.activeProcessorCount) {
            Int($0).flatMap { (1...256).contains($0) ? $0 : nil }
        }
        let level = try parse(logLevel, "LOG_LEVEL", Default.logLevel) { Logger.Level(rawValue: $0.lowercased()) }
        let format = try parse(logFormat, "LOG_FORMAT", Default.logFormat) { LogFormat(rawValue: $0.lowercased()) }
        let durability = try parse(durability, "DURABILITY", Default.durability) { Durability(rawValue: $0.lowercased()) }
        let tier = try parse(defaultTier, "DEFAULT_TIER", Default.defaultTier) { Tier(rawValue: $0.lowercased()) }
        let maxConnections = try parse(maxConnections.map(String.init), "MAX_CONNECTIONS", Default.maxConnections) {
            Int($0).flatMap { $0 >= 1 ? $0 : nil }
        }
        let perAddressDefault = ServerConfiguration.defaultPerAddressLimit(maxConnections: maxConnections)
        let maxConnectionsPerIp = try parse(maxConnectionsPerIp.map(String.init), "MAX_CONNECTIONS_PER_IP", perAddressDefault) {
            Int($0).flatMap { $0 >= 1 ? $0 : nil }
        }
        let maxWebsocketsPerIp = try parse(maxWebsocketsPerIp.map(String.init), "MAX_WEBSOCKETS_PER_IP", perAddressDefault) {
            Int($0).flatMap { $0 >= 1 ? $0 : nil }
        }
        let defaultRegistrations = Default.registrationLimits
        let registrationsPerIp = try parse(
            registrationsPerIpPerHour.map(String.init), "REGISTRATIONS_PER_IP_PER_HOUR", defaultRegistrations.perNetworkPerHour
        ) { Int($0).flatMap { $0 >= 1 ? $0 : nil } }
        let registrationsTotal = try parse(
            registrationsPerHour.map(String.init), "REGISTRATIONS_PER_HOUR", defaultRegistrations.totalPerHour
        ) { Int($0).flatMap { $0 >= 1 ? $0 : nil } }
        let hashingThreads = try parse(
            hashingThreads.map(String.init), "HASHING_THREADS", max(1, ProcessInfo.processInfo.activeProcessorCount / 2)
        ) { Int($0).flatMap { (1...256).contains($0) ? $0 : nil } }
        let hashingQueue = try parse(hashingQueue.map(String.init), "HASHING_QUEUE", Default.maxQueuedHashes) {
            Int($0).flatMap { $0 >= 0 ? $0 : nil }
        }
        let shutdownSeconds = try parse(shutdownTimeout.map(String.init), "SHUTDOWN_TIMEOUT", Default.shutdownTimeoutSeconds) {
            Int($0).flatMap { $0 >= 0 ? $0 : nil }
        }
        let hashing = try parse(passwordHashing, "PASSWORD_HASHING", Default.passwordHashing) {
            PasswordHashingCost(rawValue: $0.lowercased())
        }
        let maxMembers = try parse(maxMembers.map(String.init), "MAX_MEMBERS", Default.maxMembersPerGroup) {
            Int($0).flatMap { (2...1000).contains($0) ? $0 : nil }
        }
        let writesPerMinute = try parse(
            writeBudgetPerMinute.map(String.init), "WRITE_BUDGET_PER_MINUTE", Default.writeBudget.writesPerMinute
        ) { Int($0).flatMap { (0...1_000_000).contains($0) ? $0 : nil } }
        let writeBurst = try parse(writeBudgetBurst.map(String.init), "WRITE_BUDGET_BURST", Default.writeBudget.burst) {
            Int($0).flatMap { (1...1_000_000).contains($0) ? $0 : nil }
        }
        let writeBytes = try parse(
            writeBytesPerHour.map(String.init), "WRITE_BYTES_PER_HOUR", Default.writeBudget.bytesPerHour
        ) { Int64($0).flatMap { (0...(Int64(1) << 40)).contains($0) ? $0 : nil } }
        let attachmentBytes = try parse(
            maxAttachmentBytes.map(String.init), "MAX_ATTACHMENT_BYTES", Default.attachments.maxFileBytes
        ) { Int($0).flatMap { (1...(256 << 20)).contains($0) ? $0 : nil } }
        let quotaUser = try parse(
            attachmentQuotaUser.map(String.init), "ATTACHMENT_QUOTA_USER", Default.attachments.userQuotaBytes
        ) { Int64($0).flatMap { (0...(Int64(1) << 50)).contains($0) ? $0 : nil } }
        let quotaGroup = try parse(
            attachmentQuotaGroup.map(String.init), "ATTACHMENT_QUOTA_GROUP", Default.attachments.groupQuotaBytes
        ) { Int64($0).flatMap { (0...(Int64(1) << 50)).contains($0) ? $0 : nil } }
        let sweepSeconds = try parseOptional(sweepPeriod.map(String.init), "SWEEP_PERIOD") {
            Int($0).flatMap { (1...86_400).contains($0) ? $0 : nil }
        }
        let tls = try tlsOptions.resolve(options)
        let publicDirText = value(publicDir, "PUBLIC_DIR") ?? Default.publicDirectory
        var config = AppConfig(
            dataDirectory: value(dataDir, "DATA_DIR") ?? Default.dataDirectory,
            publicDirectory: publicDirText == Default.noPublicDirectory ? nil : publicDirText,
            durability: durability, defaultTier: tier,
            publicBaseURL: value(publicBaseUrl, "PUBLIC_BASE_URL") ?? Default.publicBaseURL(host: host, port: "\(port)"),
            workerThreads: max(1, ProcessInfo.processInfo.activeProcessorCount),
            passwordHashing: hashing, maxMembersPerGroup: maxMembers)
        config.hashingThreads = hashingThreads
        config.maxQueuedHashes = hashingQueue
        config.registrationLimits = RegistrationLimits(perNetworkPerHour: registrationsPerIp, totalPerHour: registrationsTotal)
        config.maxWebSocketsPerAddress = maxWebsocketsPerIp
        config.allowedOrigins = (value(allowedOrigins, "ALLOWED_ORIGINS") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        config.writeBudget = WriteBudget(writesPerMinute: writesPerMinute, burst: writeBurst, bytesPerHour: writeBytes)
        config.attachments.maxFileBytes = attachmentBytes
        config.attachments.userQuotaBytes = quotaUser
        config.attachments.groupQuotaBytes = quotaGroup
        config.databaseURL = value(databaseUrl, "DATABASE_URL")
        config.notifications = try notificationOptions.resolve(options)
        config.mail = try mailOptions.resolve(options)
        config.oidc = try oidcOptions.resolve(options)
        config.trustedProxies = Set(
            (value(trustedProxies, "TRUSTED_PROXIES") ?? "").split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        if let bad = config.trustedProxies.first(where: { !ClientNetwork.isIPAddress($0) }) {
            throw ValidationError("--trusted-proxies: \(bad) is not an IP address")
        }
        let metricsPort = try parseOptional(metricsPort.map(String.init), "METRICS_PORT") {
            Int($0).flatMap { (0...65535).contains($0) ? $0 : nil }
        }
        let metricsHost = value(metricsHost, "METRICS_HOST") ?? Default.metricsHost
        let metricsToken = value(metricsToken, "METRICS_TOKEN")
        if let metricsToken, metricsToken.utf8.count < MetricsExposure.minimumTokenLength {
            throw ValidationError("metrics-token must be at least \(MetricsExposure.minimumTokenLength) characters")
        }
        // No separate port: the token (if any) puts /metrics on the API port; no token, no /metrics.
        config.metrics = MetricsExposure(onMainPort: metricsPort == nil && metricsToken != nil, token: metricsToken)

        let sink = LogSink(fd: 2)
        LoggingSystem.bootstrap { label in ChronirLogHandler(label: label, level: level, format: format, sink: sink) }
        let logger = Logger(label: "chronir.server")

        var tlsReloader: TLSReloader?
        if let tls {
            let material = TLSMaterial(certificatePath: tls.certificatePath, keyPath: tls.keyPath)
            do {
                tlsReloader = TLSReloader(material: material, loaded: try material.load(), logger: logger)
            } catch {
                logger.critical("start-up failed: TLS", metadata: ["error": "\(error)"])
                sink.flush()
                throw ExitCode(1)
            }
        }

        let metrics = ChronirMetrics()
        let database: any SQLDatabase
        let secret: [UInt8]
        let startedAt = SystemClock().nowMilliseconds()
        // A first start is one that creates server.secret (issue 36: say where the data is and how to back it up).
        let firstStart = !FileManager.default.fileExists(atPath: config.secretPath)
        do {
            database = try Bootstrap.openDatabase(
                config: config, logger: logger, nowMilliseconds: startedAt, observer: metrics.database)
            secret = try ServerSecret.loadOrCreate(path: config.secretPath)
            try database.writeSync { try ServerSecret.checkFingerprint(secret, at: startedAt, on: $0) }
        } catch {
            logger.critical("start-up failed", metadata: ["error": "\(error)"])
            sink.flush()
            throw ExitCode(1)
        }

        let notifications: NotificationService
        do {
            notifications = try NotificationService(
                config: config.notifications, dataDirectory: config.dataDirectory, publicBaseURL: config.publicBaseURL,
                database: database, clock: SystemClock(), logger: logger, metrics: metrics.notifications)
        } catch {
            logger.critical("start-up failed", metadata: ["error": "\(error)"])
            sink.flush()
            throw ExitCode(1)
        }

        let mail = MailService(
            config: config.mail, caFile: config.notifications.caFile, database: database, clock: SystemClock(), logger: logger,
            metrics: metrics.mail)
        if mail == nil {
            logger.notice("mail: off (no --smtp-url): verification and reset links are recorded unsendable; see docs/mail.md#without-mail")
        }
        logger.notice(
            "tiers: new accounts get \(config.defaultTier.rawValue) (--default-tier); chronir-admin users set-tier changes one",
            metadata: ["docs": "docs/operations.md#tiers"])

        // Key sets are fetched from the URLs the operator configured (the providers' by default): an
        // operator's destination, on any address without --push-allow-private-endpoints, which only
        // concerns the push endpoints users choose (docs/security.md, "Outbound destinations").
        let oidc = OIDCService(
            config: config.oidc,
            allowPrivateDestinations: true,
            caFile: config.notifications.caFile, clock: SystemClock(), logger: logger)
        logger.notice(
            "sign in with apple/google",
            metadata: SignInProvider.allCases.reduce(into: [:]) { $0[$1.rawValue] = "\(config.oidc.provider($1) == nil ? "off" : "on")" })
        let apps = try AppsConfigurationSource(file: value(appConfigFile, "APP_CONFIG_FILE"))
        let services = Services(
            config: config, database: database, clock: SystemClock(),
            workers: WorkerPool(width: config.workerThreads), logger: logger, secret: secret, metrics: metrics,
            vapidPublicKey: notifications.vapidPublicKey, oidc: oidc, apps: apps)
        let application = Application(services: services, accessLog: AccessLog(sink: sink, format: format, level: level))
        if config.publicDirectory != nil, application.staticFiles == nil {
            logger.warning("public directory not found; no static files served", metadata: ["path": "\(publicDirText)"])
        }

        var serverConfiguration = ServerConfiguration()
        serverConfiguration.host = host
        serverConfiguration.port = port
        serverConfiguration.loopCount = loops
        serverConfiguration.maxConnections = maxConnections
        serverConfiguration.maxConnectionsPerAddress = maxConnectionsPerIp
        serverConfiguration.perAddressLimitExempt = config.trustedProxies
        serverConfiguration.healthCheckPath = "/healthz"
        serverConfiguration.limits = Application.limits(serverConfiguration.limits, config: config)
        // Upload bodies are streamed into the attachment store's root, where they are hard-linked from.
        serverConfiguration.uploadDirectory = AttachmentFiles(dataDirectory: config.dataDirectory).root
        serverConfiguration.shutdownGracePeriod = .seconds(shutdownSeconds)
        serverConfiguration.tls = tlsReloader?.slot
        serverConfiguration.strictTransportSecurityMaxAge = tls?.hstsMaxAge
        let transportLog = TransportLog(
            sink: sink, format: format, level: level, logger: Logger(label: "chronir.transport"))
        let server = HTTPServer(configuration: serverConfiguration, responder: application) { event in
            transportLog.record(event)
            metrics.record(event)
        }
        metrics.observe(server: server)
        if let tlsReloader { metrics.observeTLSCertificate { tlsReloader.secondsUntilExpiry } }
        let boundPort: Int
        do {
            boundPort = try server.start()
        } catch {
            logger.critical("cannot listen", metadata: ["host": "\(host)", "port": "\(port)", "error": "\(error)"])
            sink.flush()
            throw ExitCode(1)
        }
        logger.notice(
            "listening",
            metadata: [
                "address": "\(host):\(boundPort)", "loops": "\(loops)", "tls": "\(tls == nil ? "off" : "on")",
                "database": "\(config.databaseURL.map(DatabaseURL.redacted) ?? config.databasePath)",
                "durability": "\(durability.rawValue)",
                "write_budget": "\(writesPerMinute)/min burst \(writeBurst), \(writeBytes) B/h",
            ])
        if firstStart {
            logger.notice(
                "first start: the data directory holds the database and server.secret; back up both",
                metadata: ["data_dir": "\(config.dataDirectory)"])
            logger.notice(
                "first start: a backup while the server runs: chronir-admin --data-dir \(config.dataDirectory) db backup BACKUP.sqlite",
                metadata: ["docs": "docs/operations.md#backup-and-restore"])
        }

        tlsReloader?.start()
        // The plain-HTTP listener that only redirects to https: one loop, its own small limits.
        var redirectServer: HTTPServer?
        if let redirectPort = tls?.redirectPort {
            var redirectConfiguration = ServerConfiguration(host: host, port: redirectPort)
            redirectConfiguration.loopCount = 1
            redirectConfiguration.maxConnections = 1024
            redirectConfiguration.shutdownGracePeriod = .seconds(1)
            let listener = HTTPServer(
                configuration: redirectConfiguration, responder: HTTPSRedirectResponder(httpsPort: boundPort))
            do {
                let bound = try listener.start()
                logger.notice("redirecting plain HTTP to https", metadata: ["address": "\(host):\(bound)"])
            } catch {
                logger.critical(
                    "cannot listen for the https redirect", metadata: ["port": "\(redirectPort)", "error": "\(error)"])
                sink.flush()
                throw ExitCode(1)
            }
            redirectServer = listener
        }

        // The separate metrics listener: one loop, a few connections, its own responder.
        var metricsServer: HTTPServer?
        if let metricsPort {
            var metricsConfiguration = ServerConfiguration(host: metricsHost, port: metricsPort)
            metricsConfiguration.loopCount = 1
            metricsConfiguration.maxConnections = 64
            metricsConfiguration.shutdownGracePeriod = .seconds(1)
            let listener = HTTPServer(
                configuration: metricsConfiguration, responder: MetricsResponder(metrics: metrics, token: metricsToken))
            do {
                let bound = try listener.start()
                logger.notice(
                    "metrics listening",
                    metadata: ["address": "\(metricsHost):\(bound)", "token": "\(metricsToken == nil ? "none" : "required")"])
            } catch {
                logger.critical(
                    "cannot listen for metrics", metadata: ["host": "\(metricsHost)", "port": "\(metricsPort)", "error": "\(error)"])
                sink.flush()
                throw ExitCode(1)
            }
            if metricsToken == nil, !["127.0.0.1", "::1", "localhost"].contains(metricsHost) {
                logger.warning("metrics are served without a token on a non-loopback address", metadata: ["host": "\(metricsHost)"])
            }
            metricsServer = listener
        } else if metricsToken != nil {
            logger.notice("metrics served at /metrics on the API port (bearer token required)")
        }
        sink.flush()

        let sweeper: Sweeper
        let attachmentFiles = AttachmentFiles(dataDirectory: config.dataDirectory)
        let sweepJobs =
            Sweeper.Job.standard + [
                .attachmentOrphans(files: attachmentFiles, graceMilliseconds: config.attachments.orphanGraceMilliseconds)
            ]
        if let sweepSeconds {
            let period = Int64(sweepSeconds) * 1000
            let timing = Sweeper.timing(periodMilliseconds: period)
            sweeper = Sweeper(
                database: database, clock: SystemClock(), logger: logger, jobs: sweepJobs.map { $0.every(period) },
                tick: timing.tick, leeway: timing.leeway)
        } else {
            sweeper = Sweeper(database: database, clock: SystemClock(), logger: logger, jobs: sweepJobs)
        }
        notifications.start()
        mail?.start()
        shutdown.bind(
            Shutdown.Target(
                server: server, metricsServer: metricsServer, redirectServer: redirectServer, tls: tlsReloader,
                sweeper: sweeper, notifications: notifications, mail: mail, oidc: oidc,
                realtime: application.realtime, apps: apps,
                database: database, logger: logger, sink: sink))
        withExtendedLifetime(watcher) { dispatchMain() }
    }
}

/// Graceful shutdown on the first SIGTERM/SIGINT; a second one exits at once. A signal that
/// arrives before the server is running exits at once (nothing is in flight yet).
final class Shutdown: Sendable {
    struct Target: Sendable {
        let server: HTTPServer
        let metricsServer: HTTPServer?
        let redirectServer: HTTPServer?
        let tls: TLSReloader?
        let sweeper: Sweeper
        let notifications: NotificationService
        let mail: MailService?
        let oidc: OIDCService?
        let realtime: RealtimeFeed
        let apps: AppsConfigurationSource
        let database: any SQLDatabase
        let logger: Logger
        let sink: LogSink
    }

    private let state = Mutex<(target: Target?, started: Bool)>((nil, false))

    /// Makes the running server the target of later signals.
    func bind(_ target: Target) { state.withLock { $0.target = target } }

    func handle(signal: Int32) {
        let (target, first) = state.withLock { state -> (Target?, Bool) in
            if signal == SIGHUP { return (state.target, true) }
            defer { state.started = true }
            return (state.target, !state.started)
        }
        guard let target else { exit(signal == SIGHUP ? 0 : 1) }
        let logger = target.logger
        if signal == SIGHUP {
            if let tls = target.tls {
                tls.reload()
            } else if target.apps.file == nil {
                logger.notice("SIGHUP: nothing to reload (logs go to stderr, no TLS certificate, no app configuration file)")
            }
            target.apps.reload(logger: logger)
            target.sink.flush()
            return
        }
        guard first else {
            logger.warning("second signal: exiting now")
            target.sink.flush()
            exit(1)
        }
        logger.notice("shutting down", metadata: ["signal": "\(SignalWatcher.name(of: signal))"])
        target.sink.flush()
        let database = target.database
        let sink = target.sink
        target.sweeper.stop()
        target.notifications.stop()
        target.mail?.stop()
        target.oidc?.close()
        target.realtime.stop()
        target.metricsServer?.shutdown()
        target.redirectServer?.shutdown()
        target.tls?.stop()
        target.server.shutdown {
            do {
                try (database as? Database)?.checkpoint()
            } catch {
                logger.error("WAL checkpoint failed", metadata: ["error": "\(error)"])
            }
            database.close()
            logger.notice("stopped")
            sink.flush()
            exit(0)
        }
    }
}
