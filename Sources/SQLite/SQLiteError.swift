import CSQLite
public import Storage

/// An error reported by SQLite, with its extended result code (https://sqlite.org/rescode.html).
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Extended result code (`sqlite3_extended_errcode`), e.g. 2067 for SQLITE_CONSTRAINT_UNIQUE.
    public var code: Int32
    /// SQLite's message (`sqlite3_errmsg`).
    public var message: String
    /// The SQL text involved, when there is one. Never contains bound values.
    public var sql: String?

    /// Creates an error from its parts.
    public init(code: Int32, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    /// The primary result code (low 8 bits of `code`).
    public var primaryCode: Int32 { code & 0xFF }
    /// Any constraint failure: UNIQUE, PRIMARY KEY, FOREIGN KEY, CHECK, NOT NULL, trigger RAISE(ABORT).
    public var isConstraintViolation: Bool { primaryCode == SQLITE_CONSTRAINT }
    /// A trigger's `RAISE(ABORT, 'rule')`: the rule (SQLite's message is the raised text itself).
    public var raisedRule: String? { code == SQLiteCode.constraintTrigger ? message : nil }
    /// A UNIQUE or PRIMARY KEY constraint failure.
    public var isUniqueViolation: Bool { code == SQLiteCode.constraintUnique || code == SQLiteCode.constraintPrimaryKey }
    /// A FOREIGN KEY constraint failure.
    public var isForeignKeyViolation: Bool { code == SQLiteCode.constraintForeignKey }
    /// The database was locked by another connection beyond the busy timeout (SQLITE_BUSY*).
    public var isBusy: Bool { primaryCode == SQLITE_BUSY }
    /// The disk (or a size limit) is full (SQLITE_FULL).
    public var isFull: Bool { primaryCode == SQLITE_FULL }
    /// A write was attempted on a read-only database or connection (SQLITE_READONLY*).
    public var isReadOnly: Bool { primaryCode == SQLITE_READONLY }
    /// The OS reported an I/O error (SQLITE_IOERR*).
    public var isIOError: Bool { primaryCode == SQLITE_IOERR }
    /// The storage cannot take writes right now (full, read-only, I/O error, locked): the request may
    /// succeed later, so the API answers 503 rather than 500.
    public var isStorageUnavailable: Bool { isFull || isReadOnly || isIOError || isBusy }

    /// "SQLite error 2067 (constraint failed): UNIQUE constraint failed: t.x [in: INSERT …]".
    public var description: String {
        let name = String(cString: sqlite3_errstr(code))
        let statement = sql.map { " [in: \($0)]" } ?? ""
        return "SQLite error \(code) (\(name)): \(message)\(statement)"
    }

    /// An API-misuse error raised by this layer rather than by SQLite (SQLITE_MISUSE).
    static func misuse(_ message: String, sql: String? = nil) -> SQLiteError {
        SQLiteError(code: SQLITE_MISUSE, message: message, sql: sql)
    }
}

/// Extended result codes whose C macros Swift does not import (they are shift expressions).
enum SQLiteCode {
    /// SQLITE_CONSTRAINT_FOREIGNKEY.
    static let constraintForeignKey: Int32 = SQLITE_CONSTRAINT | (3 << 8)
    /// SQLITE_CONSTRAINT_PRIMARYKEY.
    static let constraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)
    /// SQLITE_CONSTRAINT_UNIQUE.
    static let constraintUnique: Int32 = SQLITE_CONSTRAINT | (8 << 8)
    /// SQLITE_CONSTRAINT_TRIGGER: a trigger's RAISE(ABORT, …).
    static let constraintTrigger: Int32 = SQLITE_CONSTRAINT | (7 << 8)
}

extension SQLiteError: StorageFailure {}
