import Foundation
public import Logging
import Transport

/// Everything one `chronir-server` process runs with: the application's settings (`app`), the API
/// listener, logging, TLS and the metrics listener. Built from the command line and the environment
/// by `ServerOptions.configuration(arguments:environment:)`, or by a test; `ChronirRuntime.build`
/// turns it into a running server. Each field's default is `AppConfig.Defaults`' (or, where it
/// depends on the machine or another field, computed where noted).
public struct ChronirConfiguration: Sendable {
    /// What the application layer receives (database, limits, providers, mail, sign-in).
    public var app: AppConfig
    /// Address the API listener binds (`--host`).
    public var host: String = AppConfig.Defaults.host
    /// TCP port; 0 picks a free one (`--port`).
    public var port: Int = AppConfig.Defaults.port
    /// Event loops (`--loops`); default: the active processors.
    public var loops: Int = ProcessInfo.processInfo.activeProcessorCount
    /// Open client connections (`--max-connections`).
    public var maxConnections: Int = AppConfig.Defaults.maxConnections
    /// Connections per client address (`--max-connections-per-ip`); nil: half of `maxConnections`.
    public var maxConnectionsPerAddress: Int? = nil
    /// WebSockets per client address (`--max-websockets-per-ip`); nil: half of `maxConnections`.
    public var maxWebSocketsPerAddress: Int? = nil
    /// Seconds in-flight requests get on SIGTERM/SIGINT (`--shutdown-timeout`).
    public var shutdownTimeoutSeconds: Int = AppConfig.Defaults.shutdownTimeoutSeconds
    public var logLevel: Logger.Level = AppConfig.Defaults.logLevel
    public var logFormat: LogFormat = AppConfig.Defaults.logFormat
    /// `--public-base-url`; nil: `http://HOST:PORT` of the listener.
    public var publicBaseURL: String? = nil
    /// `--public-dir` as given (`none` serves no static files).
    public var publicDirectoryText: String = AppConfig.Defaults.publicDirectory
    /// `--sweep-period`: every sweeper job this often instead of its own period (tests, drills).
    public var sweepPeriodSeconds: Int? = nil
    /// Native TLS on the API port; nil: plain HTTP.
    public var tls: TLSSettings? = nil
    /// The separate `/metrics` listener (`--metrics-port`); nil: none.
    public var metricsPort: Int? = nil
    public var metricsHost: String = AppConfig.Defaults.metricsHost
    /// Bearer token `/metrics` requires (`--metrics-token`).
    public var metricsToken: String? = nil

    /// The option texts of the sections whose options are checked together (APNs' four, mail,
    /// sign-in providers, TLS): set by `ServerOptions`, resolved by `resolve()`.
    var pending: [String: String] = [:]

    /// Native TLS settings, checked (`--tls-cert`, `--tls-key`, `--hsts-max-age`, `--http-redirect-port`).
    public struct TLSSettings: Sendable, Equatable {
        public var certificatePath: String
        public var keyPath: String
        /// nil: no `Strict-Transport-Security` header.
        public var hstsMaxAge: Int?
        /// A plain-HTTP listener that answers everything 308 to https; nil: none.
        public var redirectPort: Int?

        public init(certificatePath: String, keyPath: String, hstsMaxAge: Int? = TLSSettings.defaultHSTSMaxAge, redirectPort: Int? = nil) {
            self.certificatePath = certificatePath
            self.keyPath = keyPath
            self.hstsMaxAge = hstsMaxAge
            self.redirectPort = redirectPort
        }

        /// One year: the minimum the browsers' HSTS preload lists accept.
        public static let defaultHSTSMaxAge = 31_536_000
    }

    /// The defaults: `app` from `AppConfig.Defaults` with one worker thread per active processor and
    /// half of them (at least one) for password hashing.
    public init(app: AppConfig = ChronirConfiguration.defaultApp()) {
        self.app = app
    }

    public static func defaultApp() -> AppConfig {
        let processors = ProcessInfo.processInfo.activeProcessorCount
        var app = AppConfig(workerThreads: max(1, processors))
        app.hashingThreads = max(1, processors / 2)
        return app
    }

    /// The connection limit per client address after defaults.
    public var resolvedMaxConnectionsPerAddress: Int {
        maxConnectionsPerAddress ?? ServerConfiguration.defaultPerAddressLimit(maxConnections: maxConnections)
    }
}
