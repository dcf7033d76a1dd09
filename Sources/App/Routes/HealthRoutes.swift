import Storage
import Store
import Wire

/// `GET /healthz` (the process is up and serving) and `GET /readyz` (the database answers and every
/// migration this binary knows for its dialect is applied). While the database is unreachable
/// /readyz answers 503 CA027 with Retry-After, as every request needing it does, and /healthz stays
/// 200: the process is fine and will reconnect by itself (docs/operations.md, PostgreSQL outages).
enum HealthRoutes {
    static let healthyBody = Array(#"{"status":"ok"}"#.utf8)
    /// Always the same answer: made once (load balancers and benchmarks call it at full rate).
    static let healthy = HTTPResponse(status: .ok, headers: ["Content-Type": JSONText.contentType], body: healthyBody)

    static func register(in router: inout Router<Handler>, services: Services) {
        router.add(
            .get, "/healthz",
            .sync { _ in healthy })
        router.add(
            .get, "/readyz",
            .async { _ in
                let database = services.database
                let pending = try await services.workers.run {
                    try MigrationRunner.pending(database, migrations: Schema.migrations(for: database.dialect))
                }
                guard pending.isEmpty else {
                    throw APIError(.serviceUnavailable, "migrations pending: \(pending.joined(separator: ", "))")
                }
                return HTTPResponse(
                    status: .ok, headers: ["Content-Type": JSONText.contentType], body: Array(#"{"status":"ready"}"#.utf8))
            })
    }
}
