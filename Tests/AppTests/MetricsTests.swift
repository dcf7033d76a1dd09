import Dispatch
import Domain
import Foundation
import Logging
import Realtime
import SQLite
import Storage
import Synchronization
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// An Application on the real transport (127.0.0.1, ephemeral port) with its own metrics registry
/// wired the way `chronir-server` wires it: database observer, transport events, server gauges.
final class MetricsServer: Sendable {
    static let token = "scrape-token-0123456789"

    let directory: TemporaryDirectory
    let metrics: ChronirMetrics
    let app: Application
    let server: HTTPServer
    let port: Int

    init(exposure: MetricsExposure = MetricsExposure(onMainPort: true, token: MetricsServer.token)) throws {
        directory = TemporaryDirectory()
        metrics = ChronirMetrics()
        var quiet = Logger(label: "test")
        quiet.logLevel = .critical
        var config = AppConfiguration(
            dataDirectory: directory.path, publicDirectory: nil, workerThreads: 2, passwordHashing: .fast)
        config.metrics = exposure
        let clock = ManualClock()
        let database = try Bootstrap.openDatabase(
            config: config, logger: quiet, nowMilliseconds: clock.nowMilliseconds(), observer: metrics.database)
        let services = Services(
            config: config, database: database, clock: clock, workers: WorkerPool(width: 2), logger: quiet,
            secret: Array(repeating: 0x5A, count: 32), metrics: metrics)
        app = Application(services: services, accessLog: nil)
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.loopCount = 2
        let metrics = self.metrics
        server = HTTPServer(configuration: configuration, responder: app) { event in metrics.record(event) }
        metrics.observe(server: server)
        port = try server.start()
    }

    func stop() {
        app.realtime.stop()
        server.shutdown()
    }

    /// Registers an account through the application (no socket) and returns its token.
    func register(_ email: String) async throws -> String {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "test")
        headers.add(name: "Content-Type", value: "application/json")
        let request = HTTPRequest(
            head: HTTPRequestHead(method: .post, target: "/v1/auth/register", headers: headers),
            body: Array(#"{"email":"\#(email)","password":"correct horse","display_name":"Ana"}"#.utf8))
        let response = await withCheckedContinuation { (continuation: CheckedContinuation<HTTPResponse, Never>) in
            app.respond(
                to: request, context: RequestContext(remoteAddress: "127.0.0.1", connectionID: 0),
                sink: ResponseSink { continuation.resume(returning: $0) })
        }
        let json = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        guard response.status.code == 201, let token = json?["token"] as? String else {
            throw MetricsTests.Failure.status(response.status.code)
        }
        return token
    }
}

/// Parsed Prometheus text exposition: `series` (name plus labels exactly as rendered) → value.
struct Exposition {
    let text: String
    let samples: [String: Double]

    init(_ bytes: [UInt8]) {
        text = String(decoding: bytes, as: UTF8.self)
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            samples[String(line[..<space])] = value
        }
        self.samples = samples
    }

    subscript(_ series: String) -> Double? { samples[series] }

    /// Every series of metric `name` (`name` or `name{…}`).
    func series(_ name: String) -> [String] {
        samples.keys.filter { $0 == name || $0.hasPrefix(name + "{") }.sorted()
    }

    /// The values label `label` takes across `name`'s series.
    func values(of label: String, in name: String) -> Set<String> {
        Set(
            series(name).compactMap { series in
                guard let range = series.range(of: "\(label)=\"") else { return nil }
                let rest = series[range.upperBound...]
                return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
            })
    }
}

/// Bound of every client read: generous, because the full suite runs hundreds of tests at once on
/// a small shared machine (a wait is a bound, not a timing assertion).
let ioTimeout: Duration = LoopbackClient.hangBound

@Suite("Metrics — /metrics in Prometheus text format")
struct MetricsTests {
    static let auth = [("Authorization", "Bearer \(MetricsServer.token)")]

    /// Scrapes `/metrics` on `client`'s connection with the token.
    static func scrape(_ client: LoopbackClient) throws -> Exposition {
        let response = try client.request("GET", "/metrics", headers: auth)
        guard response.status == 200 else { throw Failure.status(response.status) }
        return Exposition(response.body)
    }

    /// Scrapes until `done` holds (for counts updated just after the client saw an answer, e.g. a
    /// socket's close or the access record of a `101`); returns the last scrape. The hang bound bounds a stalled
    /// server; it is not a timing: the loop returns as soon as `done` holds.
    static func scrape(_ client: LoopbackClient, until done: (Exposition) -> Bool) throws -> Exposition {
        var exposition = try scrape(client)
        var failure: (any Error)?
        _ = eventually {
            if done(exposition) { return true }
            do { exposition = try scrape(client) } catch {
                failure = error
                return true
            }
            return done(exposition)
        }
        if let failure { throw failure }
        return exposition
    }

    enum Failure: Error { case status(Int) }

    @Test("requests by route template and status, latency histogram, connections and SQLite timings — counted exactly")
    func requestsOverTheTransport() async throws {
        let s = try MetricsServer()
        defer { s.stop() }
        _ = try await s.register("ana@example.com")
        let (first, second) = try await blocking {
            let client = try LoopbackClient(port: s.port, timeout: ioTimeout)
            defer { client.close() }
            for _ in 0..<5 { _ = try client.request("GET", "/healthz") }
            _ = try client.request("GET", "/v1/me")  // no token: 401
            let first = try Self.scrape(client)
            let second = try Self.scrape(client)
            return (first, second)
        }
        #expect(first[#"chronir_http_requests_total{method="GET",route="/healthz",status="200"}"#] == 5)
        #expect(first[#"chronir_http_requests_total{method="POST",route="/v1/auth/register",status="201"}"#] == 1)
        #expect(first[#"chronir_http_requests_total{method="GET",route="/v1/me",status="401"}"#] == 1)
        #expect(first[#"chronir_http_request_duration_seconds_count{method="GET",route="/healthz"}"#] == 5)
        #expect(first[#"chronir_http_request_duration_seconds_bucket{method="GET",route="/healthz",le="+Inf"}"#] == 5)
        let sum = try #require(first[#"chronir_http_request_duration_seconds_sum{method="GET",route="/healthz"}"#])
        #expect(sum > 0 && sum < 5)
        // Buckets are cumulative: never decreasing, ending at the count.
        let buckets = first.series("chronir_http_request_duration_seconds_bucket")
            .filter { $0.contains(#"route="/healthz""#) }
            .map { series -> (Double, Double) in
                let bound = series.components(separatedBy: #"le=""#)[1].dropLast(2)
                return (bound == "+Inf" ? .infinity : Double(bound)!, first[series]!)
            }
            .sorted { $0.0 < $1.0 }
        #expect(buckets.count == 15)
        #expect(zip(buckets, buckets.dropFirst()).allSatisfy { $0.1 <= $1.1 })
        // The scraping connection is the one open connection; nothing was upgraded.
        #expect(first["chronir_http_connections"] == 1)
        #expect(first["chronir_http_connections_accepted_total"] == 1)
        #expect(first["chronir_websocket_connections"] == 0)
        // Registration wrote in one transaction at least; every timed transaction also has its wait.
        let writes = try #require(first[#"chronir_sqlite_transaction_duration_seconds_count{kind="write"}"#])
        #expect(writes >= 1)
        #expect(first[#"chronir_sqlite_queue_wait_seconds_count{kind="write"}"#] == writes)
        // The first scrape is itself counted by the time of the second.
        #expect(first[#"chronir_http_requests_total{method="GET",route="/metrics",status="200"}"#] == nil)
        #expect(second[#"chronir_http_requests_total{method="GET",route="/metrics",status="200"}"#] == 1)
        #expect(second[#"chronir_http_requests_total{method="GET",route="/healthz",status="200"}"#] == 5)
        #expect(first.text.contains("# TYPE chronir_http_requests_total counter\n"))
        #expect(first.text.contains("# TYPE chronir_http_request_duration_seconds histogram\n"))
        #expect(first.text.contains("# TYPE chronir_http_connections gauge\n"))
    }

    @Test("a request the transport refuses is counted by status; timeouts and refusals have their series")
    func transportRejections() async throws {
        let s = try MetricsServer()
        defer { s.stop() }
        let exposition = try await blocking {
            let bad = try LoopbackClient(port: s.port, timeout: ioTimeout)
            defer { bad.close() }
            try bad.send("GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n")
            let answer = try bad.readResponse()
            #expect(answer.status == 400)
            let client = try LoopbackClient(port: s.port, timeout: ioTimeout)
            defer { client.close() }
            return try Self.scrape(client)
        }
        #expect(exposition[#"chronir_http_rejected_total{status="400"}"#] == 1)
        #expect(exposition.series("chronir_http_requests_total") == [])  // refused before routing
        for kind in ["header", "body", "idle", "write"] {
            #expect(exposition[#"chronir_http_timeouts_total{kind="\#(kind)"}"#] == 0)
        }
        #expect(exposition["chronir_http_connections_refused_total"] == 0)
    }

    @Test("API port: 401 without the token or with a wrong one, 200 with it; by default /metrics is not served")
    func tokenOnTheAPIPort() async throws {
        let s = try MetricsServer()
        defer { s.stop() }
        let (missing, wrong, right) = try await blocking {
            let client = try LoopbackClient(port: s.port, timeout: ioTimeout)
            defer { client.close() }
            return (
                try client.request("GET", "/metrics"),
                try client.request("GET", "/metrics", headers: [("Authorization", "Bearer \(MetricsServer.token)x")]),
                try client.request("GET", "/metrics", headers: Self.auth)
            )
        }
        #expect(missing.status == 401)
        #expect(LoopbackClient.value(of: "www-authenticate", in: missing.headers) == #"Bearer realm="metrics""#)
        #expect(String(decoding: missing.body, as: UTF8.self).contains("AUTH_REQUIRED"))
        #expect(!String(decoding: missing.body, as: UTF8.self).contains("chronir_"))
        #expect(wrong.status == 401)
        #expect(right.status == 200)
        #expect(LoopbackClient.value(of: "content-type", in: right.headers) == "text/plain; version=0.0.4; charset=utf-8")
        #expect(String(decoding: right.body, as: UTF8.self).contains("chronir_http_requests_total"))

        let plain = try AppHarness()
        defer { plain.app.realtime.stop() }
        #expect(await plain.send(.get, "/metrics").status == 404)
        #expect(!plain.app.routes.contains { $0.template == "/metrics" })
    }

    @Test("separate port: /metrics only, no token unless configured; its scrapes are not API requests")
    func separatePort() async throws {
        let s = try MetricsServer(exposure: MetricsExposure())
        defer { s.stop() }
        func listen(token: String?) throws -> (HTTPServer, Int) {
            var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
            configuration.loopCount = 1
            let server = HTTPServer(configuration: configuration, responder: MetricsResponder(metrics: s.metrics, token: token))
            return (server, try server.start())
        }
        let (open, openPort) = try listen(token: nil)
        defer { open.shutdown() }
        let (guarded, guardedPort) = try listen(token: MetricsServer.token)
        defer { guarded.shutdown() }
        let results = try await blocking {
            let api = try LoopbackClient(port: s.port, timeout: ioTimeout)
            defer { api.close() }
            let apiMetrics = try api.request("GET", "/metrics", headers: Self.auth).status
            _ = try api.request("GET", "/healthz")
            let side = try LoopbackClient(port: openPort, timeout: ioTimeout)
            defer { side.close() }
            let scraped = try side.request("GET", "/metrics")
            let again = try side.request("GET", "/metrics")
            let other = try side.request("GET", "/healthz").status
            let post = try side.request("POST", "/metrics").status
            let g = try LoopbackClient(port: guardedPort, timeout: ioTimeout)
            defer { g.close() }
            let noToken = try g.request("GET", "/metrics").status
            let withToken = try g.request("GET", "/metrics", headers: Self.auth).status
            return (apiMetrics, scraped, Exposition(again.body), other, post, noToken, withToken)
        }
        let (apiMetrics, scraped, again, other, post, noToken, withToken) = results
        #expect(apiMetrics == 404)  // not on the API port when a separate one serves it
        #expect(scraped.status == 200)
        #expect(again[#"chronir_http_requests_total{method="GET",route="/healthz",status="200"}"#] == 1)
        #expect(again.values(of: "route", in: "chronir_http_requests_total") == ["/healthz", "unmatched"])
        #expect(other == 404)
        #expect(post == 405)
        #expect(noToken == 401)
        #expect(withToken == 200)
    }

    @Test("HTTP series are written as swift-prometheus wrote them: bounds, sums, cumulative buckets, one TYPE line each")
    func httpSeriesText() {
        #expect(HTTPMetrics.secondsText(0) == "0.0")
        #expect(HTTPMetrics.secondsText(250_000) == "0.00025")
        #expect(HTTPMetrics.secondsText(49_904) == "0.000049904")
        #expect(HTTPMetrics.secondsText(1_000_000_000) == "1.0")
        #expect(HTTPMetrics.secondsText(5_000_000_001) == "5.000000001")
        let metrics = HTTPMetrics()
        var empty: [UInt8] = []
        metrics.emit(into: &empty)
        #expect(empty.isEmpty)  // no TYPE line before the first request
        metrics.record(routeIndex: 3, route: "/v1/me", method: .get, status: 200, nanoseconds: 250_000)  // on the bound
        metrics.record(routeIndex: 3, route: "/v1/me", method: .get, status: 200, nanoseconds: 250_001)
        metrics.record(routeIndex: 3, route: "/v1/me", method: .get, status: 401, nanoseconds: 6_000_000_000)
        metrics.record(routeIndex: nil, route: "", method: HTTPMethod(rawValue: "BREW"), status: 404, nanoseconds: 1)
        var bytes: [UInt8] = []
        metrics.emit(into: &bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        let duration = "chronir_http_request_duration_seconds"
        #expect(text.contains(#"\#(duration)_bucket{method="GET",route="/v1/me",le="0.00025"} 1"# + "\n"))
        #expect(text.contains(#"\#(duration)_bucket{method="GET",route="/v1/me",le="0.0005"} 2"# + "\n"))
        #expect(text.contains(#"\#(duration)_bucket{method="GET",route="/v1/me",le="5.0"} 2"# + "\n"))
        #expect(text.contains(#"\#(duration)_bucket{method="GET",route="/v1/me",le="+Inf"} 3"# + "\n"))
        #expect(text.contains(#"\#(duration)_sum{method="GET",route="/v1/me"} 6.000500001"# + "\n"))
        #expect(text.contains(#"\#(duration)_count{method="GET",route="/v1/me"} 3"# + "\n"))
        #expect(text.contains(#"chronir_http_requests_total{method="GET",route="/v1/me",status="200"} 2"# + "\n"))
        #expect(text.contains(#"chronir_http_requests_total{method="GET",route="/v1/me",status="401"} 1"# + "\n"))
        #expect(text.contains(#"chronir_http_requests_total{method="other",route="unmatched",status="404"} 1"# + "\n"))
        #expect(text.components(separatedBy: "# TYPE").count == 3)
        #expect(Exposition(bytes).series("\(duration)_bucket").count == 30)  // 15 per (method, route)
    }

    @Test("label sets stay bounded: unknown paths are one route, unknown methods one method")
    func boundedLabels() async throws {
        let h = try AppHarness()
        defer { h.app.realtime.stop() }
        for i in 0..<25 {
            #expect(await h.send(.get, "/v1/no-such-thing/\(i)").status == 404)
            #expect(await h.send(.get, "/random-\(i)?q=\(i)").status == 404)
            #expect(await h.send(HTTPMethod(rawValue: "BREW\(i)"), "/v1/teapot/\(i)").status == 404)
        }
        #expect(await h.send(.post, "/healthz").status == 405)
        #expect(await h.send(.get, "/v1/groups/%ZZ").status == 400)
        #expect(await h.send(.get, "/v1/groups/\(UUID().uuidString.lowercased())").status == 401)
        let exposition = Exposition(h.app.services.metrics.exposition())
        let requests = "chronir_http_requests_total"
        #expect(exposition[#"\#(requests){method="GET",route="unmatched",status="404"}"#] == 50)
        #expect(exposition[#"\#(requests){method="other",route="unmatched",status="404"}"#] == 25)
        #expect(exposition[#"\#(requests){method="POST",route="unmatched",status="405"}"#] == 1)
        #expect(exposition[#"\#(requests){method="GET",route="unmatched",status="400"}"#] == 1)
        #expect(exposition[#"\#(requests){method="GET",route="/v1/groups/{id}",status="401"}"#] == 1)
        #expect(exposition.series(requests).count == 5)
        #expect(exposition.values(of: "route", in: requests) == ["unmatched", "/v1/groups/{id}"])
        #expect(exposition.values(of: "method", in: requests) == ["GET", "POST", "other"])
        #expect(exposition.series("chronir_http_request_duration_seconds_count").count == 4)
    }

    @Test("invite codes: every refused join is a failure, the one that locks a code a lockout, a spent budget rate-limited")
    func inviteCodeFailures() async throws {
        let f = try await GroupFixture.make()
        let h = f.h
        // Only a disabled or expired code's failures count against it.
        try await h.expect(204, .delete, "/v1/groups/\(f.groupID)/invite-code", token: f.owner.token)
        for i in 0..<5 {
            #expect(await h.join(f.code, token: f.member.token, ip: "10.1.0.\(i)").status == 404)
        }
        #expect(await h.join(f.code, token: f.outsider.token, ip: "10.2.0.1").status == 404)  // locked now
        var metrics = Exposition(h.app.services.metrics.exposition())
        #expect(metrics[#"chronir_invite_code_failures_total{result="invalid"}"#] == 6)
        #expect(metrics["chronir_invite_code_lockouts_total"] == 1)
        #expect(metrics[#"chronir_invite_code_failures_total{result="rate_limited"}"#] == 0)
        // The outsider's budget is 10 failures an hour: 9 more unknown codes, then 429.
        for _ in 0..<9 { #expect(await h.join("ZZZZZZ", token: f.outsider.token, ip: "10.2.0.1").status == 404) }
        #expect(await h.join("ZZZZZZ", token: f.outsider.token, ip: "10.2.0.1").status == 429)
        metrics = Exposition(h.app.services.metrics.exposition())
        #expect(metrics[#"chronir_invite_code_failures_total{result="invalid"}"#] == 15)
        #expect(metrics[#"chronir_invite_code_failures_total{result="rate_limited"}"#] == 1)
        #expect(metrics["chronir_invite_code_lockouts_total"] == 1)
        h.app.realtime.stop()
    }

    @Test("WebSocket connections: the gauge counts upgraded sockets and drops when one closes")
    func webSocketGauge() async throws {
        let s = try MetricsServer()
        defer { s.stop() }
        let token = try await s.register("ws@example.com")
        let (during, after) = try await blocking {
            let ws = try WebSocketTestClient(
                port: s.port, path: "/v1/realtime", extraHeaders: [("Authorization", "Bearer \(token)")], timeout: ioTimeout)
            #expect(ws.handshake.status == 101)
            // Connected only now, and used at once: a connection that sends nothing for
            // `requestHeaderTimeout` after accept is closed, and a loaded machine may take that long
            // over the handshake above.
            let api = try LoopbackClient(port: s.port, timeout: ioTimeout)
            defer { api.close() }
            let upgrades = #"chronir_http_requests_total{method="GET",route="/v1/realtime",status="101"}"#
            // The 101 is counted when it is written, the socket when the loop hands it to the WebSocket
            // handler just after: wait for both rather than race the second.
            let during = try Self.scrape(api) { $0[upgrades] == 1 && $0["chronir_websocket_connections"] == 1 }
            ws.connection.close()
            let after = try Self.scrape(api) { $0["chronir_websocket_connections"] == 0 }
            return (during, after)
        }
        #expect(during["chronir_websocket_connections"] == 1)
        #expect(during["chronir_http_connections"] == 2)
        #expect(during[#"chronir_http_requests_total{method="GET",route="/v1/realtime",status="101"}"#] == 1)
        #expect(after["chronir_websocket_connections"] == 0)
        #expect(after["chronir_http_connections"] == 1)
    }

    @Test("realtime API: event calls and running totals land in their series (totals add only what grew)")
    func realtimeSeries() {
        let metrics = ChronirMetrics()
        let realtime = metrics.realtime
        realtime.fannedOut(nanoseconds: 2_000_000)
        realtime.changeLogLag(nanoseconds: 120_000_000)
        realtime.record(.init(conflations: 2, revocations: 1, resumesReplayed: 3), subscriptions: 5)
        realtime.record(.init(conflations: 3, slowConsumerCloses: 1, revocations: 1, resumesReplayed: 3, resumesReset: 1), subscriptions: 4)
        let e = Exposition(metrics.exposition())
        #expect(e["chronir_realtime_conflations_total"] == 3)
        #expect(e["chronir_realtime_slow_consumer_closes_total"] == 1)
        #expect(e["chronir_realtime_revocations_total"] == 1)
        #expect(e[#"chronir_realtime_resumes_total{outcome="replayed"}"#] == 3)
        #expect(e[#"chronir_realtime_resumes_total{outcome="reset"}"#] == 1)
        #expect(e["chronir_realtime_subscriptions"] == 4)
        #expect(e[#"chronir_realtime_fanout_latency_seconds_bucket{le="0.0025"}"#] == 1)
        #expect(e[#"chronir_realtime_fanout_latency_seconds_bucket{le="0.001"}"#] == 0)
        #expect(e["chronir_realtime_changelog_lag_seconds_count"] == 1)
        #expect(e[#"chronir_realtime_changelog_lag_seconds_bucket{le="0.15"}"#] == 1)
    }
}

/// closures kept behind a lock must not be re-wrapped on each access (see
/// `CommitObserverTests`); the scrape's samplers are the other such place.
@Suite("Metrics samplers: per-scrape cost does not grow")
struct MetricsSamplerDepthTests {
    @Test("a sampler runs at the same stack depth on the 1st and the 5,000th scrape")
    func samplerDepthStaysFlat() throws {
        let metrics = ChronirMetrics()
        let depths = Mutex<[Int]>([])
        metrics.addSampler { if let depth = StackDepth.current() { depths.withLock { $0.append(depth) } } }
        for _ in 0..<5_000 { _ = metrics.exposition() }
        let seen = depths.withLock { $0 }
        #expect(seen.count == 5_000)
        #expect(seen.first == seen.last, "sampler depth went from \(seen.first ?? 0) to \(seen.last ?? 0)")
    }
}

@Suite("Parser errors: one mapping for every listener")
struct ParseErrorMappingTests {
    @Test(
        "the API and the metrics port answer the same parser error with the same status and code",
        arguments: [
            (HTTPStatus.contentTooLarge, "PAYLOAD_TOO_LARGE"), (.requestHeaderFieldsTooLarge, "HEADERS_TOO_LARGE"),
            (.uriTooLong, "URI_TOO_LONG"), (.badRequest, "INVALID_REQUEST"),
        ])
    func sameMapping(status: HTTPStatus, name: String) throws {
        let h = try AppHarness()
        let error = HTTPParseError(status: status, reason: "refused by the parser")
        for response in [
            h.app.errorResponse(for: error), MetricsResponder(metrics: ChronirMetrics(), token: nil).errorResponse(for: error),
        ] {
            #expect(response.status.code == status.code)
            let body = String(decoding: response.body, as: UTF8.self)
            #expect(body.contains("\"name\":\"\(name)\""), "\(body)")
        }
    }
}

@Suite("Metrics: time without a writable primary")
struct DatabaseUnavailableMetricTests {
    @Test(
        """
        chronir_database_unavailable_seconds_total counts from a transaction that found no primary to the next one that \
        succeeded, an outage under way included at each scrape, and nothing while writes reach a primary
        """
    )
    func countsOutagesOnTheInjectedClock() {
        let start = ContinuousClock.now
        let offset = Mutex(Duration.zero)
        let metrics = ChronirMetrics(now: { start + offset.withLock { $0 } })
        func advance(_ duration: Duration) { offset.withLock { $0 += duration } }
        func seconds() -> Double? { Exposition(metrics.exposition())["chronir_database_unavailable_seconds_total"] }
        let database = metrics.database

        #expect(seconds() == 0)
        database.primaryReached()
        advance(.seconds(10))
        #expect(seconds() == 0)
        database.primaryUnreachable()
        advance(.seconds(2))
        database.primaryUnreachable()  // the same outage: it began at the first failure
        advance(.milliseconds(500))
        #expect(seconds() == 2.5)  // under way
        advance(.seconds(1))
        database.primaryReached()
        advance(.seconds(30))
        #expect(seconds() == 3.5)
        database.primaryUnreachable()
        advance(.seconds(4))
        database.primaryReached()
        #expect(seconds() == 7.5)
    }
}
