import Foundation
public import Logging
import Transport

/// Everything one `chronir-server` process runs with: the application's settings (`app`), the API
/// listener, logging, TLS and the metrics listener. Built from the command line and the environment
/// by `ServerOptions.configuration(arguments:environment:)`, or by a test; `ChronirRuntime.build`
/// turns it into a running server. Each field's default is `AppConfiguration.Defaults`' (or, where it
/// depends on the machine or another field, computed where noted).
public struct ChronirConfiguration: Sendable {
    /// What the application layer receives (database, limits, providers, mail, sign-in).
    public var app: AppConfiguration
    /// Address the API listener binds (`--host`).
    public var host: String = AppConfiguration.Defaults.host
    /// TCP port; 0 picks a free one (`--port`).
    public var port: Int = AppConfiguration.Defaults.port
    /// Event loops (`--loops`); default: the active processors.
    public var loops: Int = ProcessInfo.processInfo.activeProcessorCount
    /// Open client connections (`--max-connections`).
    public var maxConnections: Int = AppConfiguration.Defaults.maxConnections
    /// Connections per client address (`--max-connections-per-ip`); nil: half of `maxConnections`.
    public var maxConnectionsPerAddress: Int? = nil
    /// WebSockets per client address (`--max-websockets-per-ip`); nil: half of `maxConnections`.
    public var maxWebSocketsPerAddress: Int? = nil
    /// Seconds in-flight requests get on SIGTERM/SIGINT (`--shutdown-timeout`).
    public var shutdownTimeoutSeconds: Int = AppConfiguration.Defaults.shutdownTimeoutSeconds
    public var logLevel: Logger.Level = AppConfiguration.Defaults.logLevel
    public var logFormat: LogFormat = AppConfiguration.Defaults.logFormat
    /// `--public-base-url`; nil: `http://HOST:PORT` of the listener.
    public var publicBaseURL: String? = nil
    /// `--public-dir` as given (`none` serves no static files).
    public var publicDirectoryText: String = AppConfiguration.Defaults.publicDirectory
    /// `--sweep-period`: every sweeper job this often instead of its own period (tests, drills).
    public var sweepPeriodSeconds: Int? = nil
    /// `--hsts-max-age` (0: no header) and `--http-redirect-port`, checked with the certificate pair.
    public var hstsMaxAgeSeconds: Int = TLSSettings.defaultHSTSMaxAge
    public var httpRedirectPort: Int? = nil
    /// Native TLS on the API port; nil: plain HTTP.
    public var tls: TLSSettings? = nil
    /// The separate `/metrics` listener (`--metrics-port`); nil: none.
    public var metricsPort: Int? = nil
    public var metricsHost: String = AppConfiguration.Defaults.metricsHost
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

    /// The defaults: `app` from `AppConfiguration.Defaults` with one worker thread per active processor and
    /// half of them (at least one) for password hashing.
    public init(app: AppConfiguration = ChronirConfiguration.defaultApp()) {
        self.app = app
    }

    public static func defaultApp() -> AppConfiguration {
        let processors = ProcessInfo.processInfo.activeProcessorCount
        var app = AppConfiguration(workerThreads: max(1, processors))
        app.hashingThreads = max(1, processors / 2)
        return app
    }

    /// The connection limit per client address after defaults.
    public var resolvedMaxConnectionsPerAddress: Int {
        maxConnectionsPerAddress ?? ServerConfiguration.defaultPerAddressLimit(maxConnections: maxConnections)
    }
}
