import CoreMetrics
import Domain
import Storage
import Store
import Synchronization

/// Store notifications by store and outcome (`chronir_store_notifications_total{store,outcome}`:
/// applied, unbound, stale, ignored, duplicate, refused; docs/subscriptions.md#operators).
public final class SubscriptionMetrics: Sendable {
    private let factory: any MetricsFactory
    private let counters = Mutex<[String: Counter]>([:])

    init(factory: any MetricsFactory) { self.factory = factory }

    /// One notification from `source` ended in `outcome`.
    func record(source: EntitlementSource, outcome: String) {
        increment("chronir_store_notifications_total", [("store", source.rawValue), ("outcome", outcome)])
    }

    /// Counts one event of the store background work (docs/subscriptions.md#operators):
    /// `chronir_appstore_refreshes_total{outcome}`, `chronir_appstore_history_notifications_total{outcome}`,
    /// `chronir_play_acknowledgement_retries_total{outcome}`.
    func count(_ label: String, outcome: String) {
        increment(label, [("outcome", outcome)])
    }

    /// Increments the counter `label{dimensions}`, made on first use and kept.
    private func increment(_ label: String, _ dimensions: [(String, String)]) {
        let key = ([label] + dimensions.map(\.1)).joined(separator: "\u{0}")
        let factory = factory
        let counter = counters.withLock { counters in
            if let existing = counters[key] { return existing }
            let made = Counter(label: label, dimensions: dimensions, factory: factory)
            counters[key] = made
            return made
        }
        counter.increment()
    }
}

/// `chronir_entitlements{tier,state,platform}`: how many entitlements are in each state, read from
/// the database at every scrape (docs/subscriptions.md#operators). A label set no longer present reads 0.
final class EntitlementGauges: Sendable {
    private let factory: any MetricsFactory
    private let gauges = Mutex<[String: Gauge]>([:])

    init(factory: any MetricsFactory) { self.factory = factory }

    /// Records `counts`, and 0 for every label set recorded before and absent now.
    func record(_ counts: [(tier: String, state: String, platform: String, count: Int64)]) {
        let factory = factory
        gauges.withLock { gauges in
            var seen = Set<String>()
            for entry in counts {
                let key = "\(entry.tier)\u{0}\(entry.state)\u{0}\(entry.platform)"
                seen.insert(key)
                let gauge =
                    gauges[key]
                    ?? Gauge(
                        label: "chronir_entitlements",
                        dimensions: [("tier", entry.tier), ("state", entry.state), ("platform", entry.platform)], factory: factory)
                gauges[key] = gauge
                gauge.record(entry.count)
            }
            for (key, gauge) in gauges where !seen.contains(key) { gauge.record(0) }
        }
    }
}

extension ChronirMetrics {
    /// Reports `chronir_entitlements` from `database` at every scrape (a grouped count over purchases
    /// and operator grants; a scrape that cannot read leaves the last values).
    func observeEntitlements(database: any SQLDatabase, clock: any WallClock) {
        let gauges = EntitlementGauges(factory: factory)
        addSampler {
            let now = clock.nowMilliseconds()
            if let counts = try? database.readSync({ db in try EntitlementStore.entitlementCounts(at: now, on: db) }) {
                gauges.record(counts)
            }
        }
    }

    /// Counts one App Store status refresh by its outcome (`AppStoreRefresher.Outcome`).
    func appStoreRefresh(outcome: String) { subscriptions.count("chronir_appstore_refreshes_total", outcome: outcome) }

    /// Counts one notification the Get Notification History catch-up handled that the server had not
    /// (applied, unbound, stale, ignored; a duplicate is not counted).
    func storeHistoryNotification(outcome: String) {
        subscriptions.count("chronir_appstore_history_notifications_total", outcome: outcome)
    }

    /// Counts one retried Google Play acknowledgement: `done` (acknowledged, or no longer owed) or `failed`.
    func playAcknowledgementRetry(outcome: String) { subscriptions.count("chronir_play_acknowledgement_retries_total", outcome: outcome) }

    /// Counts one store notification (`SubscriptionMetrics`).
    func storeNotification(source: EntitlementSource, outcome: String) { subscriptions.record(source: source, outcome: outcome) }
}
