import CoreMetrics
import Prometheus
import Storage
import Synchronization
public import Transport

/// The server's metrics (docs/operations.md#metrics): one Prometheus registry per instance, and every handle
/// created through a swift-metrics `MetricsFactory` bound to that registry — never through the
/// process-global `MetricsSystem.bootstrap`, so each `Services` (each test) has its own numbers.
///
/// Label values come from bounded sets only: route templates (never raw paths), known methods,
/// status codes the server itself produces, fixed enumerations.
public final class ChronirMetrics: Sendable {
    /// Where the series live; `exposition()` renders it.
    let registry: PrometheusCollectorRegistry
    /// Creates the handles (swift-metrics API on the Prometheus backend).
    let factory: any MetricsFactory

    /// HTTP requests by route template and status, and their latency.
    let http: HTTPMetrics
    /// Connections, WebSocket connections, transport refusals and timeouts.
    let transport: TransportMetrics
    /// SQLite transaction latency and queue waits (`SQLiteConfiguration.observer`).
    public let database: DatabaseMetrics
    /// `POST /v1/join` failures and code lockouts.
    let inviteCodes: InviteCodeMetrics
    /// The realtime feed: subscriptions, fan-out latency, conflation, slow consumers, revocations,
    /// resumes, cross-process change-log lag.
    let realtime: RealtimeMetrics
    /// Notification sends by provider, type and outcome; due → delivered lag; deliveries pending.
    public let notifications: NotificationMetrics
    /// Mails by kind and outcome; mails pending.
    public let mail: MailMetrics
    /// Store notifications by store and outcome.
    let subscriptions: SubscriptionMetrics

    /// Values read from their owners right before each scrape (gauges of counts held elsewhere).
    /// Each closure is boxed in `Sampler`: a closure stored as a generic container's value and read or
    /// written through `inout` can be reabstracted anew on every access (`Database.onCommit`).
    private let samplers = Mutex<[Sampler]>([])

    /// One sampler closure in a struct, so its stored representation never changes.
    private struct Sampler: Sendable {
        let sample: @Sendable () -> Void
    }

    /// Histogram buckets per series, chosen around what each one measures.
    enum Buckets {
        // HTTP handling: `HTTPMetrics.boundsNanoseconds` (its series are rendered by `HTTPMetrics`).
        /// SQLite: most transactions take tens of microseconds; a busy writer queue, milliseconds.
        static let database: [Duration] = milliseconds([0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 1000])
        /// Commit → the last subscriber's frame handed to the kernel: the goal is p99 ≤ 2 ms at 1,000
        /// subscribers, hence the 2 ms bound.
        static let fanOut: [Duration] = milliseconds([0.1, 0.25, 0.5, 1, 2, 2.5, 5, 10, 25, 50, 100, 250, 1000])
        /// Another process's commit → noticed here: the `data_version` poll runs every 150 ms.
        static let changeLogLag: [Duration] = milliseconds([10, 50, 100, 150, 200, 300, 500, 1000, 2500, 5000, 10000])
        /// Due → accepted by the provider: the scheduler ticks every second; the goal is p99 ≤ 1 s.
        static let notificationLag: [Duration] = milliseconds([50, 100, 250, 500, 1000, 1500, 2000, 5000, 10000, 30000, 60000])

        private static func milliseconds(_ values: [Double]) -> [Duration] {
            values.map { Duration.nanoseconds(Int64($0 * 1_000_000)) }
        }
    }

    /// A fresh registry with every series this server exports, on `ContinuousClock`.
    public convenience init() { self.init(now: { ContinuousClock.now }) }

    /// A fresh registry with every series this server exports; `now` is the monotonic clock the time
    /// without a writable primary is measured on (tests step it).
    public init(now: @escaping @Sendable () -> ContinuousClock.Instant) {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets = [
            DatabaseMetrics.transactionName: Buckets.database,
            DatabaseMetrics.waitName: Buckets.database,
            RealtimeMetrics.fanOutName: Buckets.fanOut,
            RealtimeMetrics.changeLogLagName: Buckets.changeLogLag,
            NotificationMetrics.lagName: Buckets.notificationLag,
        ]
        self.registry = registry
        self.factory = factory
        http = HTTPMetrics()
        transport = TransportMetrics(factory: factory)
        database = DatabaseMetrics(factory: factory, now: now)
        inviteCodes = InviteCodeMetrics(factory: factory)
        realtime = RealtimeMetrics(factory: factory)
        notifications = NotificationMetrics(factory: factory)
        mail = MailMetrics(factory: factory)
        subscriptions = SubscriptionMetrics(factory: factory)
        let database = database
        addSampler { database.sampleUnavailable() }
    }

    /// The Prometheus text exposition (format 0.0.4) of every series, after the samplers ran.
    public func exposition() -> [UInt8] {
        for sampler in samplers.withLock({ $0 }) { sampler.sample() }
        var text = registry.emitToBuffer()
        http.emit(into: &text)
        return text
    }

    /// Adds a value read at every scrape (e.g. a count another component owns).
    func addSampler(_ sample: @escaping @Sendable () -> Void) {
        samplers.withLock { $0.append(Sampler(sample: sample)) }
    }

    /// Reports `server`'s open and upgraded connection counts as gauges at every scrape. The server
    /// is held weakly (it holds the application, which holds these metrics).
    public func observe(server: HTTPServer) {
        let transport = self.transport
        addSampler { [weak server] in
            guard let server else { return }
            transport.connections.record(server.openConnectionCount)
            transport.webSockets.record(server.upgradedConnectionCount)
        }
    }

    /// Reports the served TLS certificate's time left, `chronir_tls_certificate_expiry_seconds`
    /// (negative once expired), at every scrape; `secondsLeft` answers nil when there is none. Alert
    /// below 14 days: certbot renews at 30.
    public func observeTLSCertificate(secondsLeft: @escaping @Sendable () -> Int?) {
        let gauge = Gauge(label: "chronir_tls_certificate_expiry_seconds", factory: factory)
        addSampler {
            if let left = secondsLeft() { gauge.record(left) }
        }
    }

    /// Counts what a transport event says (refusals, timeouts, malformed requests, accepts).
    public func record(_ event: TransportEvent) { transport.record(event) }
}
