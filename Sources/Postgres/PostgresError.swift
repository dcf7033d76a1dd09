public import Storage

/// A failure reported by libpq or the server, with the SQLSTATE when the server sent one
/// (https://www.postgresql.org/docs/15/errcodes-appendix.html).
public struct PostgresError: StorageFailure {
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

    /// SQLSTATE class 23: a constraint (unique, foreign key, check, not null, or a trigger's rule,
    /// which the migrations raise as 23514) was violated.
    public var isConstraintViolation: Bool { sqlState?.hasPrefix("23") ?? false }
    /// A trigger's `RAISE EXCEPTION 'rule' USING ERRCODE = 'check_violation'`: the rule, the primary
    /// message of `ERROR:  rule` (followed by the CONTEXT lines). A check constraint's own 23514
    /// carries a sentence, never a bare identifier, so it is not a rule.
    public var raisedRule: String? {
        guard sqlState == "23514" else { return nil }
        var primary = Substring(message.prefix { $0 != "\n" })
        if primary.hasPrefix("ERROR:") { primary = primary.dropFirst("ERROR:".count) }
        let rule = primary.trimmingPrefix(while: { $0 == " " })
        guard !rule.isEmpty, rule.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { return nil }
        return String(rule)
    }
    /// SQLSTATE 23505 unique_violation (primary keys included).
    public var isUniqueViolation: Bool { sqlState == "23505" }
    /// A retryable serialisation failure or deadlock, or a lock or statement timeout (55P03, 57014).
    public var isBusy: Bool { isRetryable || sqlState == "55P03" || sqlState == "57014" }
    /// The server is unreachable or restarting, out of resources (class 53: disk full, too many
    /// connections), read-only (25006, a standby), or busy: the API answers 503 with Retry-After.
    public var isStorageUnavailable: Bool {
        isUnavailable || isBusy || (sqlState?.hasPrefix("53") ?? false) || sqlState == "25006"
    }
    /// SQLSTATE 55P03 `lock_not_available`: `FOR NO KEY UPDATE NOWAIT` found the row locked.
    public var isRowLockUnavailable: Bool { sqlState == "55P03" }
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
