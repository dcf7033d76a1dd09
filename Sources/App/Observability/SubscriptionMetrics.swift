import CoreMetrics
import Domain
import Synchronization

/// Store notifications by store and outcome (`chronir_store_notifications_total{store,outcome}`:
/// applied, unbound, stale, ignored, duplicate, refused; docs/subscriptions.md#operators).
public final class SubscriptionMetrics: Sendable {
    private let factory: any MetricsFactory
    private let counters = Mutex<[String: Counter]>([:])

    init(factory: any MetricsFactory) { self.factory = factory }

    /// One notification from `source` ended in `outcome`.
    func record(source: EntitlementSource, outcome: String) {
        let key = source.rawValue + "\u{0}" + outcome
        let factory = factory
        let counter = counters.withLock { counters in
            if let existing = counters[key] { return existing }
            let made = Counter(
                label: "chronir_store_notifications_total", dimensions: [("store", source.rawValue), ("outcome", outcome)],
                factory: factory)
            counters[key] = made
            return made
        }
        counter.increment()
    }
}

extension ChronirMetrics {
    /// Counts one store notification (`SubscriptionMetrics`).
    func storeNotification(source: EntitlementSource, outcome: String) { subscriptions.record(source: source, outcome: outcome) }
}
