import Prometheus
import Synchronization
import Wire

/// `chronir_http_requests_total{method,route,status}` and
/// `chronir_http_request_duration_seconds{method,route}`, kept and rendered here rather than through
/// swift-prometheus handles: every answered request records into them, and a request costs one
/// uncontended lock, an array index, a bucket search and two adds — no label hashing, no second lock
/// (the handle lookup and the library's histogram were 1.2 % of `/healthz`'s CPU).
/// `ChronirMetrics.exposition()` appends `emit(into:)` to the registry's text; the lines are the
/// ones swift-prometheus wrote (same names, label order, bucket bounds and number forms).
final class HTTPMetrics: Sendable {
    static let requestsName = "chronir_http_requests_total"
    static let durationName = "chronir_http_request_duration_seconds"
    /// `route` of requests no route matched (unknown paths, wrong methods, bad percent-encoding):
    /// one label value however many distinct paths clients invent.
    static let unmatchedRoute = "unmatched"
    /// `route` of files the static file server answered.
    static let staticRoute = "static"

    /// Histogram bucket upper bounds in nanoseconds, ascending: a cached `/healthz` takes
    /// microseconds, a login's scrypt ~100 ms (0.25 ms … 5 s).
    static let boundsNanoseconds: [UInt64] = [0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000]
        .map { UInt64($0 * 1_000_000) }
    private static let boundLabels = boundsNanoseconds.map(secondsText)

    /// The method label values, in slot order; anything else is `other` (a client may send any
    /// token as a method; it must not mint label values).
    private static let methods: [HTTPMethod] = [.get, .head, .post, .put, .patch, .delete, .options]
    private static let methodSlots = methods.count + 1

    /// One (method, route) pair's numbers.
    private struct Series {
        let method: String
        let route: String
        /// Requests per bucket (not cumulative); the last entry counts those above every bound.
        var buckets: [UInt64]
        var sumNanoseconds: UInt64 = 0
        var count: UInt64 = 0
        /// Requests per status code, in first-seen order (a route answers a handful of codes).
        var statuses: [(code: Int, count: UInt64)] = []

        init(method: String, route: String) {
            self.method = method
            self.route = route
            buckets = Array(repeating: 0, count: HTTPMetrics.boundsNanoseconds.count + 1)
        }

        mutating func record(status: Int, nanoseconds: UInt64) {
            var bucket = 0
            let bounds = HTTPMetrics.boundsNanoseconds
            while bucket < bounds.count && bounds[bucket] < nanoseconds { bucket += 1 }
            buckets[bucket] &+= 1
            sumNanoseconds &+= nanoseconds
            count &+= 1
            for i in statuses.indices where statuses[i].code == status {
                statuses[i].count &+= 1
                return
            }
            statuses.append((status, 1))
        }
    }

    /// Indexed by `slot(routeIndex:route:method:)`; nil until the pair's first request.
    private let table = Mutex<[Series?]>([])

    init() {}

    /// Counts one answered request. `routeIndex` is the router's index of the matched route (nil
    /// when none matched); `route` is its template, `static`, or empty (unmatched).
    func record(routeIndex: Int?, route: String, method: HTTPMethod, status: Int, nanoseconds: UInt64) {
        let methodSlot = Self.methods.firstIndex(of: method) ?? Self.methods.count
        let routeSlot = routeIndex.map { $0 + 2 } ?? (route.isEmpty ? 0 : 1)
        let slot = routeSlot * Self.methodSlots + methodSlot
        table.withLock { table in
            if slot >= table.count { table.append(contentsOf: repeatElement(nil, count: slot + 1 - table.count)) }
            if table[slot] == nil {
                table[slot] = Series(
                    method: methodSlot < Self.methods.count ? method.rawValue : "other",
                    route: routeIndex == nil && route.isEmpty ? Self.unmatchedRoute : route)
            }
            table[slot]!.record(status: status, nanoseconds: nanoseconds)
        }
    }

    /// Appends both families in the Prometheus text format (0.0.4); nothing before the first request.
    func emit(into buffer: inout [UInt8]) {
        let series = table.withLock { $0 }.compactMap { $0 }
        guard !series.isEmpty else { return }
        var text = "# TYPE \(Self.durationName) histogram\n"
        for s in series {
            let labels = #"method="\#(s.method)",route="\#(s.route)""#
            var cumulative: UInt64 = 0
            for (bound, label) in Self.boundLabels.enumerated() {
                cumulative += s.buckets[bound]
                text += "\(Self.durationName)_bucket{\(labels),le=\"\(label)\"} \(cumulative)\n"
            }
            text += "\(Self.durationName)_bucket{\(labels),le=\"+Inf\"} \(s.count)\n"
            text += "\(Self.durationName)_sum{\(labels)} \(Self.secondsText(s.sumNanoseconds))\n"
            text += "\(Self.durationName)_count{\(labels)} \(s.count)\n"
        }
        text += "# TYPE \(Self.requestsName) counter\n"
        for s in series {
            for status in s.statuses {
                text += #"\#(Self.requestsName){method="\#(s.method)",route="\#(s.route)",status="\#(status.code)"} \#(status.count)"#
                text += "\n"
            }
        }
        buffer.append(contentsOf: text.utf8)
    }

    /// Seconds as swift-prometheus writes a `Duration` (`0.00025`, `1.0`, `0.000049904`): its own
    /// `bucketRepresentation`, so these series read like every other histogram.
    static func secondsText(_ nanoseconds: UInt64) -> String {
        Duration.nanoseconds(Int64(clamping: nanoseconds)).bucketRepresentation
    }
}
