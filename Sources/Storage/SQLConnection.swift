/// How a top-level transaction takes its locks.
public enum TransactionKind: Sendable {
    /// A read snapshot (SQLite `BEGIN DEFERRED`; PostgreSQL `BEGIN ISOLATION LEVEL REPEATABLE READ,
    /// READ ONLY`): every statement sees the same committed state.
    case deferred
    /// A write that runs alone (SQLite `BEGIN IMMEDIATE`; PostgreSQL `BEGIN` then the writer lock
    /// `pg_advisory_xact_lock` in exclusive mode): writers are serialised — within a process and
    /// across processes and instances — so a transaction that reads then writes cannot race another
    /// writer. What every write uses unless it was written for `.concurrent`.
    case immediate
    /// A write that may run beside other `.concurrent` writes of other instances (PostgreSQL: the
    /// writer lock in shared mode, so no `.immediate` write runs meanwhile; SQLite: as `.immediate`,
    /// one writer). Its body must make its own checks safe: before it reads what it decides on, it
    /// locks the row that owns that state (`SQLConnection.forUpdate`, e.g. the user row for a
    /// profile change) and changes only rows under that row (docs/scaling.md, "Concurrent writes").
    case concurrent
    /// A read of one statement outside an explicit transaction (`SQLDatabase.readStatement`): the
    /// statement is its own snapshot in both engines' autocommit, so on PostgreSQL it costs one
    /// statement and one round trip instead of BEGIN, the statement and COMMIT. The body runs at most
    /// one statement: PostgreSQL refuses a second one (`misuse`); SQLite runs the body as `.deferred`.
    case statement
}

/// Whether a statement that locks rows (`SQLConnection.forUpdate`) waits for another transaction's
/// lock on them. A transaction waits only while it holds no row locks of its own (its first write);
/// a later write of a group commit must not wait — two instances' batches that lock the same rows
/// in different orders would deadlock — so it fails at once (`StorageFailure.isRowLockUnavailable`)
/// and runs again first in the next transaction (`ConnectionQueues.write`).
public enum RowLockWait: Sendable {
    /// Wait for the lock (`FOR NO KEY UPDATE`).
    case wait
    /// Fail at once when another transaction holds it (`FOR NO KEY UPDATE NOWAIT`).
    case fail
}

/// Which SQL engine a connection talks to. Store SQL is written once, in the common subset both
/// engines accept (`?1…?n` parameters, `ON CONFLICT … DO`, `RETURNING`, `COALESCE`); the few places
/// that must differ ask the dialect (docs/architecture.md, Storage).
public enum SQLDialect: String, Sendable {
    /// The embedded default: one SQLite file.
    case sqlite
    /// A PostgreSQL server shared by every instance.
    case postgres

    /// An SQL expression for the 1-based position of `needle` in `haystack`, 0 when absent (both are
    /// SQL expressions): SQLite's `instr`, PostgreSQL's `strpos`.
    public func position(of needle: String, in haystack: String) -> String {
        switch self {
        case .sqlite: "instr(\(haystack), \(needle))"
        case .postgres: "strpos(\(haystack), \(needle))"
        }
    }
}

/// One connection to the database, owned by one queue at a time (not Sendable). The Store's SQL
/// runs over this interface, whichever backend implements it. Parameters are `?1…?n`; values are
/// `SQLValue`s; errors thrown conform to `StorageFailure`.
public protocol SQLConnection: AnyObject, SendableMetatype {
    /// The engine behind this connection.
    var dialect: SQLDialect { get }

    /// Runs one statement to completion and returns the number of rows it changed; rows it returns
    /// are discarded.
    @discardableResult
    func run(_ sql: String, _ bindings: [SQLValue]) throws -> Int

    /// Runs one statement and returns all its rows.
    func query(_ sql: String, _ bindings: [SQLValue]) throws -> [Row]

    /// Runs one statement and returns its first row, or nil.
    func queryOne(_ sql: String, _ bindings: [SQLValue]) throws -> Row?

    /// Runs one statement and returns the first column of its first row, or `.null` without rows.
    func scalar(_ sql: String, _ bindings: [SQLValue]) throws -> SQLValue

    /// Runs one or more `;`-separated statements without parameters (migrations, scripts).
    func execute(_ script: String) throws

    /// Runs one statement whose outcome the caller does not read. Inside a transaction an engine may
    /// hold it back and send it with the next statement whose result is needed or with COMMIT
    /// (PostgreSQL pipelines them: one round trip for several; SQLite runs it at once). Its error, if
    /// any, is thrown by that later call at the latest — perhaps in a later savepoint — and fails the
    /// whole top-level transaction (every write of a group commit), as a failed COMMIT does. So it is
    /// for statements that succeed unless an invariant is broken; a caller that must react to a
    /// particular error (a unique violation) uses `run`.
    func send(_ sql: String, _ bindings: [SQLValue]) throws

    /// Runs one statement right before this transaction's COMMIT, after every other statement of it,
    /// in the order such statements were given (PostgreSQL: held back and sent in the pipeline that
    /// carries the COMMIT — no round trip of its own; SQLite: at once, its single writer makes the
    /// moment the same). Dropped with a savepoint that rolls back; its failure fails the whole
    /// top-level transaction, as `send`'s does. Outside a transaction: `run`. For work that must
    /// happen as late as possible — the change log's append under its lock (`ChangeLog.append`).
    func sendAtCommit(_ sql: String, _ bindings: [SQLValue]) throws

    /// `sendAtCommit` for a statement a transaction needs once however often it is given (a
    /// notification that something committed): PostgreSQL holds it back until COMMIT and sends it
    /// once, after every `sendAtCommit` statement, however many times the same SQL and bindings were
    /// given; a savepoint that rolls back forgets only what was given inside it. SQLite: `run` at
    /// once, each time.
    func sendOnceAtCommit(_ sql: String, _ bindings: [SQLValue]) throws

    /// Starts one read whose first row the caller takes later with `PrefetchedRow.row()`, so that it
    /// costs no round trip of its own: PostgreSQL holds it back inside a transaction and sends it with
    /// the next statement whose result is needed (or, when `row()` comes first, then); SQLite and a
    /// call outside a transaction run it at once. The statements sent with it or after it run whatever
    /// its row holds: a caller that decides on the row (a session check for the write it goes with)
    /// reads it before its transaction or savepoint ends and throws to undo them. Like `send`, its
    /// failure is thrown by the call that carried it and fails the whole top-level transaction.
    func prefetch(_ sql: String, _ bindings: [SQLValue]) throws -> PrefetchedRow

    /// Runs independent statements (none needs another's result) and returns each one's rows, in
    /// order. An engine may send them together (PostgreSQL: one pipeline, one round trip); the first
    /// failure is thrown.
    func queryEach(_ statements: [(sql: String, bindings: [SQLValue])]) throws -> [[Row]]

    /// Values that live for the current top-level transaction only: emptied when it begins and ends
    /// and whenever a savepoint inside it rolls back, so they never describe undone writes. A Store
    /// keeps here what it wrote last and would otherwise read back (the change log's head).
    var transactionMemo: [String: [SQLValue]] { get set }

    /// How `forUpdate` locks rows in the current write: set by the writer queue before each write of a
    /// group commit (`RowLockWait`); `.wait` outside them. SQLite ignores it (one writer at a time).
    var rowLockWait: RowLockWait { get set }

    /// True when no other write runs beside the current one: always on SQLite (one writer), and on
    /// PostgreSQL inside an `.immediate` transaction (the writer lock held exclusively). A `.concurrent`
    /// write that finds it must do what only such a write may (delete rows another transaction may be
    /// pointing at) throws `StorageError.exclusiveWriteNeeded` when this is false.
    var writesAlone: Bool { get }

    /// Runs `body` in one transaction of `kind`: COMMIT when it returns, ROLLBACK and rethrow when it
    /// (or COMMIT) throws. Called inside an open transaction, it uses a SAVEPOINT instead: an error
    /// undoes the savepoint only and the outer transaction goes on.
    func transaction<T>(_ kind: TransactionKind, _ body: (any SQLConnection) throws -> T) throws -> T

    /// Closes the connection (idempotent); later calls throw.
    func close()
}

extension SQLConnection {
    /// `run` without parameters.
    @discardableResult
    public func run(_ sql: String) throws -> Int { try run(sql, []) }
    /// `query` without parameters.
    public func query(_ sql: String) throws -> [Row] { try query(sql, []) }
    /// `queryOne` without parameters.
    public func queryOne(_ sql: String) throws -> Row? { try queryOne(sql, []) }
    /// `scalar` without parameters.
    public func scalar(_ sql: String) throws -> SQLValue { try scalar(sql, []) }
    /// The clause that locks the rows a `SELECT` reads until COMMIT, for a `.concurrent` write that
    /// decides on them (PostgreSQL ` FOR NO KEY UPDATE`, or with ` NOWAIT` by `rowLockWait`; empty on
    /// SQLite, whose writer lock already excludes every other writer). Append it to the statement.
    /// Two writes taking it on one row run one after the other, as with `FOR UPDATE`; but it leaves
    /// alone the `FOR KEY SHARE` a foreign-key check takes on the row it references, so another write
    /// that inserts a row pointing at a locked one (a delivery for a user whose profile is being
    /// changed) neither waits for it nor — inside a group commit, where a wait may close a cycle
    /// between two instances' batches — deadlocks with it. Concurrent writes never delete the rows
    /// they lock nor change their keys (only `.immediate` writes do), which is all `FOR UPDATE` adds.
    public var forUpdate: String {
        guard dialect == .postgres else { return "" }
        return rowLockWait == .wait ? " FOR NO KEY UPDATE" : " FOR NO KEY UPDATE NOWAIT"
    }
    /// The clause that takes rows of the table aliased `alias` that no other transaction holds and
    /// locks them until COMMIT, passing over the held ones (PostgreSQL ` FOR UPDATE OF alias SKIP
    /// LOCKED`; empty on SQLite). For a `.concurrent` write that claims work from a queue: two
    /// claimers never take the same row and never wait for each other (so never deadlock), whatever
    /// `rowLockWait` says. Append it to the statement.
    public func forUpdateSkipLocked(of alias: String) -> String {
        dialect == .postgres ? " FOR UPDATE OF \(alias) SKIP LOCKED" : ""
    }
    /// A statement that takes a lock on `key` until COMMIT, for `.concurrent` writes that must run one
    /// after the other for something no row stands for yet (two registrations of one push address):
    /// PostgreSQL's transaction-scoped advisory lock in the two-integer key space (apart from the
    /// writer and append locks' one-integer keys), waiting or — by `rowLockWait`, as `forUpdate` —
    /// answering at once; SQLite takes nothing (its writer lock already excludes every other writer).
    /// Send it like `forUpdate`'s statement, before the reads it guards, and pass its rows to
    /// `requireKeyLock`.
    public func keyLock(space: Int32, key: Int32) -> (sql: String, bindings: [SQLValue]) {
        guard dialect == .postgres else { return ("SELECT 1 AS held", []) }
        let bindings: [SQLValue] = [.integer(Int64(space)), .integer(Int64(key))]
        return rowLockWait == .wait
            ? ("SELECT 1 AS held FROM (SELECT pg_advisory_xact_lock(?1::int4, ?2::int4)) AS waited", bindings)
            : ("SELECT CASE WHEN pg_try_advisory_xact_lock(?1::int4, ?2::int4) THEN 1 ELSE 0 END AS held", bindings)
    }
    /// Throws `StorageError.rowLockUnavailable` unless `keyLock`'s rows say the lock is held (it was
    /// asked for without waiting and another transaction holds it): the write runs again, first in the
    /// next transaction, as when `forUpdate`'s `NOWAIT` finds a row taken.
    public func requireKeyLock(_ rows: [Row]) throws {
        guard rows.first?.int("held") == 1 else { throw StorageError.rowLockUnavailable }
    }
    /// `transaction` of kind `.immediate`.
    @discardableResult
    public func transaction<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        try transaction(.immediate, body)
    }
}

/// The first row of a `SQLConnection.prefetch` read, once it arrived. Confined to the connection's
/// queue like the connection, inside the transaction or savepoint that started the read.
public final class PrefetchedRow {
    /// What the read answered: nil until it arrived; `.some(nil)` when it found no row.
    private var answer: Row??
    /// Sends whatever the connection holds back (the read among it), once the read is still pending.
    private let sendHeldBack: () throws -> Void

    /// A read that arrives later (`arrived`), sent by `sendHeldBack` at the latest.
    public init(sendHeldBack: @escaping () throws -> Void) { self.sendHeldBack = sendHeldBack }

    /// A read that already ran.
    public init(row: Row?) {
        answer = .some(row)
        sendHeldBack = {}
    }

    /// Records the read's first row (nil: none). Called by the connection when its result arrived.
    public func arrived(_ row: Row?) { answer = .some(row) }

    /// The read's first row, or nil when it found none; sends what is held back first when the read
    /// has not left yet (one round trip). Throws the failure of that pipeline, or `StorageError.closed`
    /// when the read was dropped unsent (its savepoint rolled back).
    public func row() throws -> Row? {
        if answer == nil { try sendHeldBack() }
        guard let answer else { throw StorageError.closed }
        return answer
    }
}
