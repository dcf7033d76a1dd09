public import Domain
import Foundation
import Hashing
public import Logging
public import Outbound
public import Storage
import Store
import Synchronization

/// The notification pipeline of one server process (docs/notifications.md): the fire scheduler,
/// the dispatcher and the senders the configuration turns on, over two outbound HTTP clients (users' push
/// endpoints and the providers; the operator's webhook). Built
/// at start-up (a bad provider setting stops start-up with a clear error), started once the server
/// listens, stopped on shutdown.
public final class NotificationService: Sendable {
    /// Why start-up cannot go on.
    public struct ConfigurationError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Reaches the push providers and users' Web Push endpoints (`--push-allow-private-endpoints`).
    public let client: OutboundClient
    /// Reaches the operator's webhook: any address (`DestinationPolicy.operatorConfigured`), a pool
    /// of its own so no connection opened for it ever carries a user's push.
    private let operatorClient: OutboundClient
    public let dispatcher: NotificationDispatcher
    private let scheduler = Mutex<FireScheduler?>(nil)
    private let database: any SQLDatabase
    private let clock: any WallClock
    private let logger: Logger
    /// The providers that are on, for the start-up log line.
    public let enabled: [String]
    /// The VAPID public key browsers subscribe with (`GET /v1/push/vapid-public-key`); nil when Web
    /// Push is off.
    public let vapidPublicKey: String?

    /// `dataDirectory` holds `vapid.pem`; `publicBaseURL` is the default VAPID contact when https.
    public init(
        config: NotificationsConfiguration, dataDirectory: String, publicBaseURL: String, database: any SQLDatabase,
        clock: any WallClock, logger: Logger, metrics: NotificationMetrics? = nil
    ) throws {
        let client = OutboundClient(
            configuration: .init(
                policy: DestinationPolicy(allowPrivateDestinations: config.allowPrivateEndpoints), caFile: config.caFile))
        let operatorClient = OutboundClient(configuration: .init(policy: .operatorConfigured, caFile: config.caFile))
        var senders: [any NotificationSender] = []
        var enabled: [String] = []
        var vapidPublicKey: String? = nil
        do {
            if config.webPushEnabled {
                let key: P256.PrivateKey
                do {
                    key = try VAPIDKey.loadOrCreate(dataDirectory: dataDirectory)
                } catch {
                    throw ConfigurationError(description: "Web Push: \(error)")
                }
                let subject =
                    config.vapidSubject ?? (publicBaseURL.hasPrefix("https://") ? publicBaseURL : "mailto:admin@localhost")
                do {
                    senders.append(try WebPushSender(vapidKey: key, subject: subject, client: client))
                } catch {
                    throw ConfigurationError(description: "--vapid-subject must be a mailto: address or an https: URL")
                }
                vapidPublicKey = VAPIDKey.publicKeyText(key)
                enabled.append("webpush")
            } else {
                logger.notice("notifications: Web Push off (--web-push off)")
            }
            if let apns = config.apns {
                do {
                    senders.append(try APNsSender(configuration: apns.sender, keyFile: apns.keyFile, client: client, logger: logger))
                } catch {
                    throw ConfigurationError(description: "APNs key \(apns.keyFile): \(error)")
                }
                enabled.append("apns")
            } else {
                logger.notice("notifications: APNs off (no --apns-key-file)")
            }
            if let file = config.fcmServiceAccountFile {
                do {
                    senders.append(try FCMSender(serviceAccountFile: file, client: client, logger: logger))
                } catch {
                    throw ConfigurationError(description: "FCM service account \(file): \(error)")
                }
                enabled.append("fcm")
            } else {
                logger.notice("notifications: FCM off (no --fcm-service-account-file)")
            }
            if let url = config.webhookURL {
                guard let path = config.webhookSecretFile else {
                    throw ConfigurationError(description: "--notify-webhook-url needs --notify-webhook-secret-file")
                }
                // The operator's own destination: any address, and plain http for a LAN bridge
                // (`DestinationPolicy.operatorConfigured`), without --push-allow-private-endpoints.
                guard url.hasPrefix("https://") || url.hasPrefix("http://") else {
                    throw ConfigurationError(description: "--notify-webhook-url must be an https (or http) URL")
                }
                let secret = try Self.secret(fromFile: path)
                guard let sender = WebhookSender(url: url, secret: secret, client: operatorClient) else {
                    throw ConfigurationError(
                        description: "the webhook secret in \(path) is shorter than \(WebhookSender.minSecretBytes) bytes")
                }
                senders.append(sender)
                enabled.append("webhook")
            } else {
                logger.notice("notifications: operator webhook off (no --notify-webhook-url)")
            }
        } catch {
            client.close()
            operatorClient.close()
            throw error
        }
        self.client = client
        self.operatorClient = operatorClient
        self.enabled = enabled
        self.vapidPublicKey = vapidPublicKey
        self.database = database
        self.clock = clock
        self.logger = logger
        dispatcher = NotificationDispatcher(
            database: database, clock: clock, logger: logger, senders: senders, metrics: metrics)
    }

    /// Starts the fire scheduler and the dispatcher.
    public func start() {
        let (database, clock, logger, dispatcher) = (database, clock, logger, dispatcher)
        scheduler.withLock {
            $0 = $0 ?? FireScheduler(database: database, clock: clock, logger: logger, onQueued: { dispatcher.wake() })
        }
        dispatcher.start()
        logger.notice(
            "notifications running", metadata: ["providers": "\(enabled.isEmpty ? "none" : enabled.joined(separator: ","))"])
    }

    /// Stops the scheduler (waiting for a look in progress), the dispatcher's timer, then the outbound
    /// client — which fails sends in flight at once, so they are retried after a restart — and waits
    /// for the dispatcher's round to settle them: the caller closes the database afterwards.
    public func stop() {
        let scheduler = scheduler.withLock { $0 }
        scheduler?.stop()
        dispatcher.stop()
        client.close()
        operatorClient.close()
        if !dispatcher.waitUntilIdle() {
            logger.warning("notification dispatcher still busy at shutdown; its deliveries are retried after the restart")
        }
    }

    /// A secret file's bytes without one trailing newline.
    static func secret(fromFile path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(description: "cannot read \(path)")
        }
        var bytes = [UInt8](data)
        if bytes.last == 0x0A { bytes.removeLast() }
        if bytes.last == 0x0D { bytes.removeLast() }
        return bytes
    }
}
