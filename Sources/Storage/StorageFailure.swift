/// An error a backend throws, classified the same way for both engines so the Store and the API map
/// them once (`ErrorMapping`): SQLite's extended result codes and PostgreSQL's SQLSTATEs each
/// answer these questions.
public protocol StorageFailure: Error, Sendable, CustomStringConvertible {
    /// The engine's message (never contains bound values).
    var message: String { get }
    /// Any constraint failure: unique, primary key, foreign key, check, not null, or a trigger's
    /// rule (`raisedRule`).
    var isConstraintViolation: Bool { get }
    /// The rule a trigger refused the write with — the name the migration raises, e.g. `group_frozen`
    /// (SQLite `RAISE(ABORT, 'name')`, PostgreSQL `RAISE EXCEPTION 'name' USING ERRCODE =
    /// 'check_violation'`); nil for every other failure. The Store names its rules (`StoreRule`).
    var raisedRule: String? { get }
    /// A unique or primary-key constraint failure.
    var isUniqueViolation: Bool { get }
    /// Another writer held a lock too long, or the transaction lost a serialisation race: retrying
    /// later may succeed.
    var isBusy: Bool { get }
    /// The storage cannot take this request now (disk full, read-only, I/O error, locked, server
    /// down or restarting): the API answers 503 rather than 500.
    var isStorageUnavailable: Bool { get }
    /// A row lock asked for without waiting (`RowLockWait.fail`) was held by another transaction.
    var isRowLockUnavailable: Bool { get }
}

extension StorageFailure {
    /// False: only an engine with row locks (PostgreSQL's `FOR NO KEY UPDATE NOWAIT`) reports it.
    public var isRowLockUnavailable: Bool { false }
}

extension Error {
    /// This error as a classified storage failure, when a backend threw it.
    public var storageFailure: (any StorageFailure)? { self as? any StorageFailure }
}

/// A failure of this layer itself rather than of an engine.
public enum StorageError: StorageFailure, Equatable {
    /// The database was closed (shutdown); nothing ran.
    case closed
    /// A lock asked for without waiting (`SQLConnection.keyLock`) was held by another transaction:
    /// the writer queue runs the write again, first in the next transaction.
    case rowLockUnavailable
    /// A `.concurrent` write found it must do what only an `.immediate` one may
    /// (`SQLConnection.writesAlone`), having changed nothing: the writer queue runs it again as
    /// `.immediate` (so its body runs twice).
    case exclusiveWriteNeeded

    public var message: String {
        switch self {
        case .closed: "database is closed"
        case .rowLockUnavailable: "a lock asked for without waiting is held by another transaction"
        case .exclusiveWriteNeeded: "a concurrent write needs to run alone"
        }
    }
    public var isConstraintViolation: Bool { false }
    public var raisedRule: String? { nil }
    public var isUniqueViolation: Bool { false }
    public var isBusy: Bool { false }
    public var isStorageUnavailable: Bool { self == .closed }
    public var isRowLockUnavailable: Bool { self == .rowLockUnavailable }
    public var description: String { message }
}
