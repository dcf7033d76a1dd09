import CoreMetrics
import Realtime
public import Storage
import Synchronization
import Transport
import Wire

/// Connection gauges (sampled from the `HTTPServer` at scrape time) and counters fed by
/// `TransportEvent`s.
final class TransportMetrics: Sendable {
    /// `chronir_http_connections`: connections being served (refused ones excluded).
    let connections: Gauge
    /// `chronir_websocket_connections`: of those, the ones upgraded to WebSocket.
    let webSockets: Gauge
    /// `chronir_http_connections_accepted_total`.
    let accepted: Counter
    /// `chronir_http_connections_refused_total`: turned away with 503 past `--max-connections` or
    /// with 429 past `--max-connections-per-ip`.
    let refused: Counter
    /// `chronir_tls_failures_total`: TLS connections closed for a protocol error (plain HTTP on the
    /// TLS port, a refused handshake, a bad record) — scanners and broken clients.
    let tlsFailures: Counter
    /// `chronir_http_timeouts_total{kind}`: connections closed by a deadline.
    private let timeouts: [TransportEvent.TimeoutKind: Counter]
    /// `chronir_http_rejected_total{status}`: requests the transport answered itself (400, 408,
    /// 413, 414, 431, 501, 505 …) before any route saw them. Statuses come from the parser's
    /// fixed set.
    private let rejected = Mutex<[Int: Counter]>([:])
    private let factory: any MetricsFactory

    init(factory: any MetricsFactory) {
        self.factory = factory
        connections = Gauge(label: "chronir_http_connections", factory: factory)
        webSockets = Gauge(label: "chronir_websocket_connections", factory: factory)
        accepted = Counter(label: "chronir_http_connections_accepted_total", factory: factory)
        refused = Counter(label: "chronir_http_connections_refused_total", factory: factory)
        tlsFailures = Counter(label: "chronir_tls_failures_total", factory: factory)
        let kinds: [TransportEvent.TimeoutKind] = [.header, .body, .idle, .write]
        timeouts = Dictionary(
            uniqueKeysWithValues: kinds.map { kind in
                (kind, Counter(label: "chronir_http_timeouts_total", dimensions: [("kind", kind.rawValue)], factory: factory))
            })
        connections.record(0)
        webSockets.record(0)
    }

    func record(_ event: TransportEvent) {
        switch event {
        case .accepted: accepted.increment()
        case .connectionLimitReached, .addressConnectionLimitReached: refused.increment()
        case .timedOut(_, let kind): timeouts[kind]?.increment()
        case .badRequest(_, let status, _):
            rejected.withLock { table in
                if let counter = table[status] { return counter }
                let counter = Counter(
                    label: "chronir_http_rejected_total", dimensions: [("status", String(status))], factory: factory)
                table[status] = counter
                return counter
            }.increment()
        case .tlsFailed: tlsFailures.increment()
        case .listening, .upgraded, .closed, .error, .acceptPaused, .shutdownStarted, .shutdownCompleted:
            break
        }
    }
}

/// `chronir_sqlite_transaction_duration_seconds{kind}` (BEGIN → COMMIT/ROLLBACK),
/// `chronir_sqlite_queue_wait_seconds{kind}` (call → connection ready: the writer queue for
/// `write`, the reader pool for `read`) and, on PostgreSQL, `chronir_database_unavailable_seconds_total`
/// (`PrimaryOutage`, brought up to date at every scrape by `sampleUnavailable`). Pass it as
/// `SQLiteConfiguration.observer` / `PostgresConfiguration.observer`.
public final class DatabaseMetrics: DatabaseObserver {
    static let transactionName = "chronir_sqlite_transaction_duration_seconds"
    static let waitName = "chronir_sqlite_queue_wait_seconds"

    private let writeTransaction: Timer
    private let readTransaction: Timer
    private let writeWait: Timer
    private let readWait: Timer
    private let unavailable: FloatingPointCounter
    /// The outage record, and the seconds of it already added to `unavailable`.
    private let outage = Mutex((record: PrimaryOutage(), reported: 0.0))
    /// Monotonic time for `outage` (`ContinuousClock.now`; tests step it).
    private let now: @Sendable () -> ContinuousClock.Instant

    init(factory: any MetricsFactory, now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        func timer(_ name: String, _ side: DatabaseSide) -> Timer {
            Timer(label: name, dimensions: [("kind", side.rawValue)], factory: factory)
        }
        writeTransaction = timer(Self.transactionName, .write)
        readTransaction = timer(Self.transactionName, .read)
        writeWait = timer(Self.waitName, .write)
        readWait = timer(Self.waitName, .read)
        unavailable = FloatingPointCounter(label: "chronir_database_unavailable_seconds_total", factory: factory)
        self.now = now
    }

    public func primaryUnreachable() {
        let now = now()
        outage.withLock { $0.record.writeFailed(at: now) }
    }

    /// Called after every successful transaction: reads the clock only while an outage is under way.
    public func primaryReached() {
        outage.withLock { state in
            if state.record.isUnderWay { state.record.writeCommitted(at: now()) }
        }
    }

    /// Adds to `chronir_database_unavailable_seconds_total` what the outage record grew since the last
    /// call, an outage still under way included (called before each scrape).
    func sampleUnavailable() {
        let now = now()
        let grown = outage.withLock { state in
            let total = state.record.seconds(at: now)
            defer { state.reported = max(state.reported, total) }
            return total - state.reported
        }
        if grown > 0 { unavailable.increment(by: grown) }
    }

    public func transactionFinished(_ side: DatabaseSide, waitNanoseconds: UInt64, runNanoseconds: UInt64) {
        switch side {
        case .write:
            writeWait.recordNanoseconds(Int64(clamping: waitNanoseconds))
            writeTransaction.recordNanoseconds(Int64(clamping: runNanoseconds))
        case .read:
            readWait.recordNanoseconds(Int64(clamping: waitNanoseconds))
            readTransaction.recordNanoseconds(Int64(clamping: runNanoseconds))
        }
    }
}

/// `chronir_invite_code_failures_total{result}` (`invalid`: the one 404 CA031 answer;
/// `rate_limited`: the caller's or IP's failure budget spent, 429) and
/// `chronir_invite_code_lockouts_total` (a code's fifth failure within the hour locked it).
final class InviteCodeMetrics: Sendable {
    private let invalid: Counter
    private let rateLimited: Counter
    private let lockouts: Counter

    init(factory: any MetricsFactory) {
        let name = "chronir_invite_code_failures_total"
        invalid = Counter(label: name, dimensions: [("result", "invalid")], factory: factory)
        rateLimited = Counter(label: name, dimensions: [("result", "rate_limited")], factory: factory)
        lockouts = Counter(label: "chronir_invite_code_lockouts_total", factory: factory)
    }

    /// An unusable code was answered 404 CA031; `lockedCode` when that failure locked the code.
    func refused(lockedCode: Bool) {
        invalid.increment()
        if lockedCode { lockouts.increment() }
    }

    /// The caller's or client IP's failure budget was spent (429).
    func budgetSpent() { rateLimited.increment() }
}

/// The realtime feed's series, recorded by `RealtimeFeed`:
///
/// - `record(_:subscriptions:)`: the hub's running totals (`RealtimeHub.Counters`: conflations,
///   slow-consumer closes, revocations, resumes replayed/reset) and its subscription count; adds to
///   each counter what grew since the last call.
/// - `fannedOut(nanoseconds:)`: one broadcast, from its change's COMMIT (this process's: the instant
///   the writer committed; another process's or instance's: its change-log `at`) to the last
///   recipient's frame handed to the kernel, over every event loop → histogram
///   `chronir_realtime_fanout_latency_seconds`.
/// - `changeLogLag(nanoseconds:)`: another process's change, from its commit time to when the
///   `data_version` poll noticed it.
/// - `sessionExpired()`: a socket closed 4001 because its session's idle expiry passed
///   → `chronir_realtime_sessions_expired_total`.
/// - `historyReset()`: the database no longer held the history the feed delivered (a failover that
///   lost commits, a restore): new epoch, sockets closed to resubscribe, a fresh hub
///   → `chronir_realtime_history_resets_total`.
/// - `listenerReconnected()`: the commit-announcement connection (PostgreSQL `LISTEN`) was lost and
///   is back — a database restart or a failover seen by this instance
///   → `chronir_realtime_listener_reconnects_total`.
final class RealtimeMetrics: Sendable {
    static let fanOutName = "chronir_realtime_fanout_latency_seconds"
    static let changeLogLagName = "chronir_realtime_changelog_lag_seconds"

    private let subscriptions: Meter
    private let fanOutLatency: Timer
    private let conflations: Counter
    private let slowConsumerCloses: Counter
    private let revocations: Counter
    private let resumesReplayed: Counter
    private let resumesReset: Counter
    private let lag: Timer
    private let sessionsExpired: Counter
    private let historyResets: Counter
    private let listenerReconnects: Counter

    init(factory: any MetricsFactory) {
        subscriptions = Meter(label: "chronir_realtime_subscriptions", factory: factory)
        fanOutLatency = Timer(label: Self.fanOutName, factory: factory)
        conflations = Counter(label: "chronir_realtime_conflations_total", factory: factory)
        slowConsumerCloses = Counter(label: "chronir_realtime_slow_consumer_closes_total", factory: factory)
        revocations = Counter(label: "chronir_realtime_revocations_total", factory: factory)
        let resumes = "chronir_realtime_resumes_total"
        resumesReplayed = Counter(label: resumes, dimensions: [("outcome", "replayed")], factory: factory)
        resumesReset = Counter(label: resumes, dimensions: [("outcome", "reset")], factory: factory)
        lag = Timer(label: Self.changeLogLagName, factory: factory)
        sessionsExpired = Counter(label: "chronir_realtime_sessions_expired_total", factory: factory)
        historyResets = Counter(label: "chronir_realtime_history_resets_total", factory: factory)
        listenerReconnects = Counter(label: "chronir_realtime_listener_reconnects_total", factory: factory)
        subscriptions.set(0)
    }

    private let lastTotals = Mutex(RealtimeHub.Counters())

    /// Reports the hub's running totals and its current subscription count (one call after each
    /// batch of hub actions): adds what grew since the last call, so the hub needs no metrics dependency.
    func record(_ totals: RealtimeHub.Counters, subscriptions count: Int) {
        let last = lastTotals.withLock { last in
            defer { last = totals }
            return last
        }
        func add(_ counter: Counter, _ now: Int, _ before: Int) { if now > before { counter.increment(by: now - before) } }
        add(conflations, totals.conflations, last.conflations)
        add(slowConsumerCloses, totals.slowConsumerCloses, last.slowConsumerCloses)
        add(revocations, totals.revocations, last.revocations)
        add(resumesReplayed, totals.resumesReplayed, last.resumesReplayed)
        add(resumesReset, totals.resumesReset, last.resumesReset)
        subscriptions.set(count)
    }

    func fannedOut(nanoseconds: UInt64) { fanOutLatency.recordNanoseconds(Int64(clamping: nanoseconds)) }
    func changeLogLag(nanoseconds: UInt64) { lag.recordNanoseconds(Int64(clamping: nanoseconds)) }
    func sessionExpired() { sessionsExpired.increment() }
    /// Counts a reconnect of the commit-announcement connection.
    func listenerReconnected() { listenerReconnects.increment() }
    /// Counts a history reset; the next hub's counters start again from zero.
    func historyReset() {
        historyResets.increment()
        lastTotals.withLock { $0 = RealtimeHub.Counters() }
    }
}

/// The notification pipeline's series, recorded by `NotificationDispatcher`:
///
/// - `chronir_notifications_total{provider, type, outcome}`: each send's outcome — `delivered`,
///   `retried`, `device_gone`, `rejected`, `expired` (a retry past its time to live); provider
///   `apns | fcm | webpush | webhook`, type a `NotificationType` (both bounded sets).
/// - `chronir_notification_lag_seconds`: a notification's due time (`not_before`: the alarm's
///   instant, or the commit that queued it) → its provider accepting it.
/// - `chronir_notification_deliveries_pending`: deliveries waiting, after each dispatcher round.
public final class NotificationMetrics: Sendable {
    static let lagName = "chronir_notification_lag_seconds"

    private let factory: any MetricsFactory
    private let lag: Timer
    private let pending: Meter
    private let counters = Mutex<[String: Counter]>([:])

    init(factory: any MetricsFactory) {
        self.factory = factory
        lag = Timer(label: Self.lagName, factory: factory)
        pending = Meter(label: "chronir_notification_deliveries_pending", factory: factory)
        pending.set(0)
    }

    /// One send of `type` through `provider` ended in `outcome`.
    func record(provider: String, type: String, outcome: String) {
        let key = provider + "\u{0}" + type + "\u{0}" + outcome
        let factory = factory
        let counter = counters.withLock { counters in
            if let existing = counters[key] { return existing }
            let made = Counter(
                label: "chronir_notifications_total",
                dimensions: [("provider", provider), ("type", type), ("outcome", outcome)], factory: factory)
            counters[key] = made
            return made
        }
        counter.increment()
    }

    /// Due → accepted by the provider.
    func delivered(lagMilliseconds: Int64) { lag.recordNanoseconds(max(0, lagMilliseconds) * 1_000_000) }

    /// Deliveries waiting after a round.
    func pending(_ count: Int64) { pending.set(Int(count)) }
}

/// Outbound mail (docs/mail.md#pipeline): `chronir_mails_total{kind, outcome}` (outcome `sent`,
/// `retried`, `failed`, `expired`, `unsendable`) and the `chronir_mail_pending` gauge.
public final class MailMetrics: Sendable {
    private let factory: any MetricsFactory
    private let pending: Meter
    private let counters = Mutex<[String: Counter]>([:])

    init(factory: any MetricsFactory) {
        self.factory = factory
        pending = Meter(label: "chronir_mail_pending", factory: factory)
        pending.set(0)
    }

    /// One mail of `kind` ended a step in `outcome`.
    func record(kind: String, outcome: String) {
        let key = kind + "\u{0}" + outcome
        let factory = factory
        let counter = counters.withLock { counters in
            if let existing = counters[key] { return existing }
            let made = Counter(label: "chronir_mails_total", dimensions: [("kind", kind), ("outcome", outcome)], factory: factory)
            counters[key] = made
            return made
        }
        counter.increment()
    }

    /// Mails waiting after a round.
    func pending(_ count: Int) { pending.set(count) }
}

/// Time without a writable primary as one instance saw it: an outage starts at a transaction that
/// failed for lack of one and ends at the next one that succeeded, so an idle instance counts no
/// outage it never hit. Instants in, seconds out.
struct PrimaryOutage: Sendable {
    /// Seconds of the outages that have ended.
    private var ended = 0.0
    /// When the outage under way began; nil: writes reach a primary.
    private var since: ContinuousClock.Instant?

    /// Whether an outage is under way.
    var isUnderWay: Bool { since != nil }

    /// A transaction failed for lack of a writable primary at `now`: starts an outage unless one is under way.
    mutating func writeFailed(at now: ContinuousClock.Instant) {
        if since == nil { since = now }
    }

    /// A transaction succeeded at `now`: ends the outage under way, if any.
    mutating func writeCommitted(at now: ContinuousClock.Instant) {
        guard let start = since else { return }
        ended += Self.seconds(now - start)
        since = nil
    }

    /// Seconds without a primary up to `now`, the outage under way included.
    func seconds(at now: ContinuousClock.Instant) -> Double {
        ended + (since.map { Self.seconds(now - $0) } ?? 0)
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return max(0, Double(seconds) + Double(attoseconds) / 1e18)
    }
}
