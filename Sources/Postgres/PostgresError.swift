/// A failure reported by libpq or the server, with the SQLSTATE when the server sent one
/// (https://www.postgresql.org/docs/15/errcodes-appendix.html).
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// Where the failure happened.
    public enum Kind: Sendable, Equatable {
        /// Could not connect, or the connection broke (the server restarted, the socket closed).
        case connection
        /// The server rejected a statement (`sqlState` says why).
        case statement
        /// The library was used wrongly (a closed connection, a parameter it cannot encode).
        case misuse
    }

    /// Where the failure happened.
    public let kind: Kind
    /// The five-character SQLSTATE (e.g. "23505" unique_violation), when the server sent one.
    public let sqlState: String?
    /// libpq's or the server's message, trimmed.
    public let message: String
    /// The statement that failed, if any.
    public let sql: String?

    /// Creates an error.
    public init(_ kind: Kind, sqlState: String? = nil, message: String, sql: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.sql = sql
    }

    /// SQLSTATE class 23: a constraint (unique, foreign key, check, not null) was violated.
    public var isConstraintViolation: Bool { sqlState?.hasPrefix("23") ?? false }
    /// SQLSTATE 40001 / 40P01: a serialization failure or deadlock; the transaction may be retried.
    public var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }
    /// Class 08 (connection exception) or 57P0x (the server is shutting down / restarting), or no
    /// connection at all: the database is unavailable rather than the statement wrong.
    public var isUnavailable: Bool {
        kind == .connection || (sqlState?.hasPrefix("08") ?? false) || (sqlState?.hasPrefix("57P0") ?? false)
    }

    /// The message, with SQLSTATE and statement when known.
    public var description: String {
        var text = "PostgreSQL \(kind)"
        if let sqlState { text += " [\(sqlState)]" }
        text += ": \(message)"
        if let sql { text += " (in: \(sql))" }
        return text
    }
}
