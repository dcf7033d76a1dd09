import Postgres
import Storage
import TestSupport
import Testing

/// A connection LISTENing on one channel of a PostgreSQL test database: what commits notified there.
struct ChannelListener {
    let connection: PostgresConnection

    init(_ database: any SQLDatabase, channel: String) throws {
        connection = try PostgresConnection(url: try #require(database as? PostgresDatabase).url)
        try connection.execute("LISTEN \(channel)")
    }

    /// The payloads received so far, in order, once at least `count` have arrived (a bounded wait:
    /// fewer when it ran out, so the caller's comparison fails).
    func payloads(atLeast count: Int) -> [String] {
        var payloads: [String] = []
        _ = eventually {
            (try? connection.notifications())?.forEach { payloads.append($0.payload) }
            return payloads.count >= count
        }
        return payloads
    }
}
