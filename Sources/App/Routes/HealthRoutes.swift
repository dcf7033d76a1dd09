import Storage
import Store
import Wire

/// `GET /healthz` (the process is up and serving) and `GET /readyz` (the database answers and every
/// migration this binary knows for its dialect is applied). While the database is unreachable
/// /readyz answers 503 CA027 with Retry-After, as every request needing it does, and /healthz stays
/// 200: the process is fine and will reconnect by itself (docs/operations.md, PostgreSQL outages).
/// A 200 from /readyz names the database role reached (`primary`: a standby answers 503) and the
/// realtime feed's state (`FeedHealth.state`: idle, live, polling, failing).
enum HealthRoutes {
    static let healthyBody = Array(#"{"status":"ok"}"#.utf8)
    /// Always the same answer: made once (load balancers and benchmarks call it at full rate).
    static let healthy = HTTPResponse(status: .ok, headers: ["Content-Type": JSONText.contentType], body: healthyBody)

    /// `feed`: the realtime feed's state, reported by /readyz.
    static func register(in router: inout Router<Handler>, services: Services, feed: FeedHealth) {
        router.add(
            .get, "/healthz",
            .sync { _ in healthy })
        router.add(
            .get, "/readyz",
            .async { _ in
                let database = services.database
                let (pending, standby) = try await services.workers.run {
                    let pending = try MigrationRunner.pending(database, migrations: Schema.migrations(for: database.dialect))
                    // The role of the server reached: a standby (a URL without target_session_attrs=read-write,
                    // or a primary demoted under it) refuses every write.
                    guard database.dialect == .postgres else { return (pending, false) }
                    let recovery = try database.readSync { try $0.scalar("SELECT pg_is_in_recovery()") }
                    return (pending, recovery == .integer(1))
                }
                guard pending.isEmpty else {
                    throw APIError(.serviceUnavailable, "migrations pending: \(pending.joined(separator: ", "))")
                }
                guard !standby else { throw APIError(.serviceUnavailable, "the database reached is a read-only standby") }
                let body = #"{"status":"ready","database_role":"primary","change_feed":"\#(feed.state)"}"#
                return HTTPResponse(status: .ok, headers: ["Content-Type": JSONText.contentType], body: Array(body.utf8))
            })
    }
}
