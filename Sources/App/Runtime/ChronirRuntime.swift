import Domain
import Foundation
public import Logging
import Outbound
import Postgres
import SQLite
import ServiceLifecycle
public import Storage
import Store
import Synchronization
import Transport

/// The composition root: what one `chronir-server` process runs, built from a
/// `ChronirConfiguration` — the database, the server secret, the providers, the application, the
/// API listener (and the redirect and metrics listeners when configured), the sweeper. The binary
/// and the end-to-end tests start exactly this. `build` does everything that can fail before the
/// first request (a failure is a `StartupFailure`, logged by the caller at `critical`); `run`
/// serves until `shutDown` and stops the parts in order.
public final class ChronirRuntime: Sendable {
    public let configuration: ChronirConfiguration
    public let database: any SQLDatabase
    public let application: Application
    /// The API port actually bound (the configured one, or the free one `port: 0` picked).
    public let port: Int
    /// The metrics listener's port when `--metrics-port` is set.
    public let metricsPort: Int?
    /// The https redirect listener's port when `--http-redirect-port` is set.
    public let redirectPort: Int?
    let logger: Logger
    private let sink: LogSink
    private let group: ServiceGroup
    private let tls: TLSReloader?
    /// The apps' configuration (`--app-config-file`), read again on SIGHUP.
    private let apps: AppsConfigurationSource

    /// Why the server cannot start: what failed and the reason.
    public struct StartupFailure: Error, CustomStringConvertible {
        public let what: Logger.Message
        public let metadata: Logger.Metadata
        public var description: String { "\(what) \(metadata)" }
    }

    /// Opens, binds and starts everything; nothing is left running when it throws.
    public static func build(
        _ configuration: ChronirConfiguration, sink: LogSink, logger: Logger = Logger(label: "chronir.server")
    ) throws(StartupFailure) -> ChronirRuntime {
        var parts = Parts()
        do {
            return try ChronirRuntime(configuration, sink: sink, logger: logger, parts: &parts)
        } catch {
            parts.stop()
            throw error
        }
    }

    /// What has been started so far, stopped again when a later step fails.
    private struct Parts {
        var database: (any SQLDatabase)?
        var servers: [HTTPServer] = []
        var tls: TLSReloader?
        /// Services built (their outbound clients hold queues and connections) that must be released.
        var services: [() -> Void] = []

        func stop() {
            for stop in services.reversed() { stop() }
            tls?.stop()
            for server in servers.reversed() { server.shutdown() }
            database?.close()
        }
    }

    private init(
        _ configuration: ChronirConfiguration, sink: LogSink, logger: Logger, parts: inout Parts
    ) throws(StartupFailure) {
        self.configuration = configuration
        self.logger = logger
        self.sink = sink
        var config = configuration.app
        let clock = SystemClock()

        var tlsReloader: TLSReloader?
        if let settings = configuration.tls {
            let material = TLSMaterial(certificatePath: settings.certificatePath, keyPath: settings.keyPath)
            do {
                tlsReloader = TLSReloader(material: material, loaded: try material.load(), logger: logger)
            } catch {
                throw StartupFailure(what: "start-up failed: TLS", metadata: ["error": "\(error)"])
            }
        }
        tls = tlsReloader

        let metrics = ChronirMetrics()
        let database: any SQLDatabase
        let secret: [UInt8]
        let startedAt = clock.nowMilliseconds()
        // A first start is one that creates server.secret: say where the data is and how to back it up.
        let firstStart = !FileManager.default.fileExists(atPath: config.secretPath)
        do {
            database = try Bootstrap.openDatabase(config: config, logger: logger, nowMilliseconds: startedAt, observer: metrics.database)
            parts.database = database
            secret = try ServerSecret.loadOrCreate(path: config.secretPath)
            try database.writeSync { try ServerSecret.checkFingerprint(secret, at: startedAt, on: $0) }
        } catch {
            throw StartupFailure(what: "start-up failed", metadata: ["error": "\(error)"])
        }
        self.database = database

        let notifications: NotificationService
        do {
            notifications = try NotificationService(
                config: config.notifications, dataDirectory: config.dataDirectory, publicBaseURL: config.publicBaseURL,
                database: database, clock: clock, logger: logger, metrics: metrics.notifications)
        } catch {
            throw StartupFailure(what: "start-up failed", metadata: ["error": "\(error)"])
        }
        parts.services.append { notifications.stop() }
        let mail = MailService(
            config: config.mail, caFile: config.notifications.caFile, publicBaseURL: config.publicBaseURL, database: database,
            clock: clock, logger: logger, metrics: metrics.mail)
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
            config: config.oidc, allowPrivateDestinations: true, caFile: config.notifications.caFile, clock: clock, logger: logger)
        parts.services.append {
            mail?.stop()
            oidc?.close()
        }
        logger.notice(
            "sign in with apple/google",
            metadata: SignInProvider.allCases.reduce(into: [:]) { $0[$1.rawValue] = "\(config.oidc.provider($1) == nil ? "off" : "on")" })

        // The stores' outbound clients (the operator's destinations — Google's, Apple's, or a fake's — as
        // for the OIDC key sets above): closed by `parts` when start-up fails, by a stage when it stops.
        var storeClients: [OutboundClient] = []
        func storeClient() -> OutboundClient {
            let client = OutboundClient(configuration: .init(policy: .operatorConfigured, caFile: config.notifications.caFile))
            storeClients.append(client)
            parts.services.append { client.close() }
            return client
        }
        if let play = config.subscriptions.playSettings {
            let client = storeClient()
            do {
                config.subscriptions.play = try PlayDeveloperAPI(
                    account: GoogleServiceAccount(file: play.serviceAccountFile), packageName: play.packageName, baseURL: play.apiURL,
                    client: client)
            } catch {
                throw StartupFailure(what: "start-up failed: --play-service-account-file", metadata: ["error": "\(error)"])
            }
        }
        if let push = config.subscriptions.playRTDNPush {
            // Google's key set, fetched as sign-in fetches it.
            let client = storeClient()
            config.subscriptions.playRTDNAuthenticator = PubSubPushAuthenticator(
                configuration: push, client: client, clock: clock, logger: logger)
        }
        if let appStoreAPI = config.subscriptions.appStoreAPISettings {
            let client = storeClient()
            do {
                config.subscriptions.appStoreAPI = try AppStoreServerAPI(
                    configuration: appStoreAPI.api, keyFile: appStoreAPI.keyFile, client: client)
            } catch {
                throw StartupFailure(
                    what: "start-up failed: --appstore-key-file (a .p8 PKCS#8 P-256 private key)", metadata: ["error": "\(error)"])
            }
        }
        logger.notice(
            "store purchases",
            metadata: [
                "app_store": "\(config.subscriptions.appStore == nil ? "off" : "on")",
                "app_store_api": "\(config.subscriptions.appStoreAPI == nil ? "off" : "on")",
                "play": "\(config.subscriptions.play == nil ? "off" : "on")",
                "play_rtdn": "\(config.subscriptions.playRTDNToken == nil ? "off" : "token")",
                "play_rtdn_oidc": "\(config.subscriptions.playRTDNAuthenticator == nil ? "off" : "on")",
            ])

        let apps: AppsConfigurationSource
        do { apps = try AppsConfigurationSource(file: config.appConfigFile) } catch {
            throw StartupFailure(what: "start-up failed: app configuration", metadata: ["error": "\(error)"])
        }
        self.apps = apps
        let services = Services(
            config: config, database: database, clock: clock, workers: WorkerPool(width: config.workerThreads), logger: logger,
            secret: secret, metrics: metrics, vapidPublicKey: notifications.vapidPublicKey, oidc: oidc, apps: apps)
        let format = configuration.logFormat
        let level = configuration.logLevel
        application = Application(services: services, accessLog: AccessLog(sink: sink, format: format, level: level))
        if config.publicDirectory != nil, application.staticFiles == nil {
            logger.warning("public directory not found; no static files served", metadata: ["path": "\(configuration.publicDirectoryText)"])
        }

        let server = HTTPServer(configuration: Self.listener(configuration, tls: tlsReloader), responder: application) {
            [transportLog = TransportLog(sink: sink, format: format, level: level, logger: Logger(label: "chronir.transport"))] event in
            transportLog.record(event)
            metrics.record(event)
        }
        metrics.observe(server: server)
        if let tlsReloader { metrics.observeTLSCertificate { tlsReloader.secondsUntilExpiry } }
        do {
            port = try server.start()
            parts.servers.append(server)
        } catch {
            throw StartupFailure(
                what: "cannot listen", metadata: ["host": "\(configuration.host)", "port": "\(configuration.port)", "error": "\(error)"])
        }
        logger.notice(
            "listening",
            metadata: [
                "address": "\(configuration.host):\(port)", "loops": "\(configuration.loops)",
                "tls": "\(tlsReloader == nil ? "off" : "on")",
                "database": "\(config.databaseURL.map(DatabaseURL.redacted) ?? config.databasePath)",
                "durability": "\(config.durability.rawValue)",
                "write_budget":
                    "\(config.writeBudget.writesPerMinute)/min burst \(config.writeBudget.burst), \(config.writeBudget.bytesPerHour) B/h",
            ])
        if firstStart {
            logger.notice(
                "first start: the data directory holds the database and server.secret; back up both",
                metadata: ["data_dir": "\(config.dataDirectory)"])
            logger.notice(
                "first start: a backup while the server runs: chronir-admin --data-dir \(config.dataDirectory) db backup BACKUP.sqlite",
                metadata: ["docs": "docs/operations.md#backup-and-restore"])
        }
        if let tlsReloader {
            tlsReloader.start()
            parts.tls = tlsReloader
        }

        // The plain-HTTP listener that only redirects to https: one loop, its own small limits.
        var redirectServer: HTTPServer?
        if let requested = configuration.tls?.redirectPort {
            let listener = HTTPServer(
                configuration: Self.sideListener(host: configuration.host, port: requested, maxConnections: 1024),
                responder: HTTPSRedirectResponder(publicBaseURL: config.publicBaseURL, httpsPort: port))
            do {
                let bound = try listener.start()
                parts.servers.append(listener)
                redirectServer = listener
                redirectPort = bound
                logger.notice("redirecting plain HTTP to https", metadata: ["address": "\(configuration.host):\(bound)"])
            } catch {
                throw StartupFailure(what: "cannot listen for the https redirect", metadata: ["port": "\(requested)", "error": "\(error)"])
            }
        } else {
            redirectPort = nil
        }

        // The separate metrics listener: one loop, a few connections, its own responder.
        var metricsServer: HTTPServer?
        let metricsHost = configuration.metricsHost
        if let requested = configuration.metricsPort {
            let token = configuration.metricsToken
            let listener = HTTPServer(
                configuration: Self.sideListener(host: metricsHost, port: requested, maxConnections: 64),
                responder: MetricsResponder(metrics: metrics, token: token))
            do {
                let bound = try listener.start()
                parts.servers.append(listener)
                metricsServer = listener
                metricsPort = bound
                logger.notice(
                    "metrics listening", metadata: ["address": "\(metricsHost):\(bound)", "token": "\(token == nil ? "none" : "required")"])
            } catch {
                throw StartupFailure(
                    what: "cannot listen for metrics", metadata: ["host": "\(metricsHost)", "port": "\(requested)", "error": "\(error)"])
            }
            if token == nil, !["127.0.0.1", "::1", "localhost"].contains(metricsHost) {
                logger.warning("metrics are served without a token on a non-loopback address", metadata: ["host": "\(metricsHost)"])
            }
        } else {
            metricsPort = nil
            if configuration.metricsToken != nil { logger.notice("metrics served at /metrics on the API port (bearer token required)") }
        }

        let sweeper = Self.sweeper(configuration, database: database, clock: clock, logger: logger)
        var refresher: AppStoreRefresher?
        if let api = config.subscriptions.appStoreAPI, let verifier = config.subscriptions.appStore {
            refresher = AppStoreRefresher(api: api, verifier: verifier, services: services)
            refresher?.start()
        }
        let appStoreRefresher = refresher
        let acknowledgements = config.subscriptions.play.map { PlayAcknowledgements(play: $0, services: services) }
        acknowledgements?.start()
        notifications.start()
        mail?.start()

        // Started concurrently, shut down in reverse order, each after the one below it has
        // stopped: background work first, then the side listeners, then the API listener drains
        // in-flight requests, and the database closes last.
        let realtime = application.realtime
        let sideListeners = [redirectServer, metricsServer].compactMap { $0 }
        let reloader = tlsReloader
        let stages: [any Service] = [
            Stage(blocking: "database") {
                do {
                    try (database as? SQLiteDatabase)?.checkpoint()
                } catch {
                    logger.error("WAL checkpoint failed", metadata: ["error": "\(error)"])
                }
                database.close()
            },
            Stage("api listener") { await withCheckedContinuation { done in server.shutdown { done.resume() } } },
            Stage(blocking: "tls") { reloader?.stop() },
            Stage(blocking: "side listeners") { for listener in sideListeners { listener.shutdown() } },
            Stage(blocking: "realtime") { realtime.stop() },
            Stage(blocking: "sign-in key sets") { oidc?.close() },
            Stage(blocking: "mail") { mail?.stop() },
            Stage(blocking: "notifications") { notifications.stop() },
            Stage(blocking: "sweeper") { sweeper.stop() },
            Stage(blocking: "store clients") { [storeClients] in for client in storeClients { client.close() } },
            Stage(blocking: "store refresh and retries") {
                appStoreRefresher?.stop()
                acknowledgements?.stop()
            },
        ]
        group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: stages.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) }, logger: logger))
    }

    /// Serves until `shutDown()`, then stops every part in order; returns when the database is closed.
    public func run() async throws {
        try await group.run()
        logger.notice("stopped")
        sink.flush()
    }

    /// Begins the graceful shutdown `run` completes: no new connections, in-flight requests get
    /// the shutdown timeout, then background work stops and the database closes.
    public func shutDown() async {
        await group.triggerGracefulShutdown()
    }

    /// `SIGHUP`: reloads the TLS certificate and key, and the app configuration file (a file that does
    /// not load keeps the one in use).
    public func reload() {
        if let tls {
            tls.reload()
        } else if apps.file == nil {
            logger.notice("SIGHUP: nothing to reload (logs go to stderr, no TLS certificate, no app configuration file)")
        }
        apps.reload(logger: logger)
        sink.flush()
    }

    /// The API listener's transport settings.
    static func listener(_ configuration: ChronirConfiguration, tls: TLSReloader?) -> ServerConfiguration {
        let config = configuration.app
        var listener = ServerConfiguration()
        listener.host = configuration.host
        listener.port = configuration.port
        listener.loopCount = configuration.loops
        listener.maxConnections = configuration.maxConnections
        listener.maxConnectionsPerAddress = configuration.resolvedMaxConnectionsPerAddress
        listener.perAddressLimitExempt = config.trustedProxies
        listener.healthCheckPath = "/healthz"
        listener.limits = Application.limits(listener.limits, config: config)
        // Upload bodies are streamed into the attachment store's root, where they are hard-linked from.
        listener.uploadDirectory = AttachmentFiles(dataDirectory: config.dataDirectory).root
        listener.shutdownGracePeriod = .seconds(configuration.shutdownTimeoutSeconds)
        listener.tls = tls?.slot
        listener.strictTransportSecurityMaxAge = configuration.tls?.hstsMaxAge
        return listener
    }

    /// A listener beside the API port (https redirect, metrics): one loop, few connections, a short grace.
    private static func sideListener(host: String, port: Int, maxConnections: Int) -> ServerConfiguration {
        var listener = ServerConfiguration(host: host, port: port)
        listener.loopCount = 1
        listener.maxConnections = maxConnections
        listener.shutdownGracePeriod = .seconds(1)
        return listener
    }

    private static func sweeper(
        _ configuration: ChronirConfiguration, database: any SQLDatabase, clock: SystemClock, logger: Logger
    ) -> Sweeper {
        let files = AttachmentFiles(dataDirectory: configuration.app.dataDirectory)
        let jobs =
            Sweeper.Job.standard + [
                .attachmentOrphans(files: files, graceMilliseconds: configuration.app.attachments.orphanGraceMilliseconds)
            ]
        guard let seconds = configuration.sweepPeriodSeconds else {
            return Sweeper(database: database, clock: clock, logger: logger, jobs: jobs)
        }
        let period = Int64(seconds) * 1000
        let timing = Sweeper.timing(periodMilliseconds: period)
        return Sweeper(
            database: database, clock: clock, logger: logger, jobs: jobs.map { $0.every(period) }, tick: timing.tick,
            leeway: timing.leeway)
    }
}

/// One part of the runtime as ServiceLifecycle sees it: already started by `ChronirRuntime.build`,
/// it waits for the group's graceful shutdown and then runs `stop`.
private struct Stage: Service, CustomStringConvertible {
    let description: String
    let stop: @Sendable () async -> Void

    init(_ name: String, stop: @escaping @Sendable () async -> Void) {
        self.description = name
        self.stop = stop
    }

    /// A part whose `stop` blocks its thread (waits for a pass in progress, a checkpoint, a queue):
    /// it runs on a Dispatch thread, never on one of the few cooperative threads — the work it waits
    /// for may itself need one of them.
    init(blocking name: String, _ stop: @escaping @Sendable () -> Void) {
        self.init(name) {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async {
                    stop()
                    done.resume()
                }
            }
        }
    }

    func run() async throws {
        // Returns on graceful shutdown; throws CancellationError when the group is cancelled,
        // and the part is stopped either way.
        try? await gracefulShutdown()
        await stop()
    }
}
