public import Domain
public import Logging
import Postgres
public import SQLite
import Transport

extension AppConfiguration {
    /// `chronir-server`'s defaults: the one place they are written. `ChronirConfiguration` starts
    /// from them, `ServerOptions` shows them in `--help` and docs/configuration.md's generated tables;
    /// `AppConfiguration.init` and the limit structs it reads through (`ServerConfiguration`,
    /// `RegistrationLimits`, `WriteBudget`) agree by construction. Defaults that depend on the
    /// machine or on another setting (loops, hashing threads, the per-address limits, the public base
    /// URL) are computed by `ChronirConfiguration` and described in words.
    public enum Defaults {
        /// `--host`: loopback; exposing the server is an explicit decision (`ServerConfiguration.host`).
        public static let host = ServerConfiguration().host
        /// `--port` (`ServerConfiguration.port`).
        public static let port = ServerConfiguration().port
        /// `--data-dir`: `chronir.sqlite` and `server.secret`, relative to the working directory.
        public static let dataDirectory = "./data"
        /// `--public-dir`: the web client, relative to the working directory.
        public static let publicDirectory = "./Public"
        /// `--public-dir` value that serves no static files.
        public static let noPublicDirectory = "none"
        /// `--log-level`: `info` includes the access log.
        public static let logLevel = Logger.Level.info
        /// `--log-format`.
        public static let logFormat = LogFormat.text
        /// `--database-writers` (`PostgresConfiguration.concurrentWriterCount`).
        public static let databaseWriters = PostgresConfiguration().concurrentWriterCount
        /// `--durability`: WAL, fsync at checkpoints.
        public static let durability = Durability.normal
        /// `--default-tier`: the tier of new accounts — `premium`: on a self-hosted server with no store
        /// configured, every account gets every feature, so the first household works with no admin
        /// command (docs/design.md#tiers). Operators who sell or ration tiers pass `free`.
        public static let defaultTier = Tier.premium
        /// `--max-members`: the member limit of a new group (docs/design.md#groups).
        public static let maxMembersPerGroup = 10
        /// `--max-connections` (`ServerConfiguration.maxConnections`).
        public static let maxConnections = ServerConfiguration().maxConnections
        /// `--registrations-per-ip-per-hour` and `--registrations-per-hour` (`RegistrationLimits`).
        public static let registrationLimits = RegistrationLimits()
        /// `--hashing-queue`: hashes that may wait behind the running ones (`AppConfiguration.maxQueuedHashes`).
        public static let maxQueuedHashes = 32
        /// `--write-budget-per-minute`, `--write-budget-burst`, `--write-bytes-per-hour`.
        public static let writeBudget = WriteBudget.standard
        /// Attachment limits (docs/attachments.md#limits).
        public static let attachments = AttachmentConfiguration()
        /// `--shutdown-timeout`, whole seconds (`ServerConfiguration.shutdownGracePeriod`).
        public static let shutdownTimeoutSeconds = Int(ServerConfiguration().shutdownGracePeriod.components.seconds)
        /// `--password-hashing`: the production scrypt cost.
        public static let passwordHashing = PasswordHashingCost.interactive
        /// `--metrics-host`: loopback, the separate metrics listener is for a local scraper.
        public static let metricsHost = "127.0.0.1"

        /// `--public-base-url` when none is given: the address the server listens on.
        public static func publicBaseURL(host: String, port: String) -> String { "http://\(host):\(port)" }
    }
}
