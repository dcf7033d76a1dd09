import CSQLite
public import Storage
import Dispatch
import Synchronization

/// How a `Database` opens its connections.
public struct DatabaseOptions: Sendable {
    /// `PRAGMA synchronous` for every connection.
    public var durability: Durability = .normal
    /// How long a connection waits for a lock held by another connection or process before SQLITE_BUSY.
    public var busyTimeoutMilliseconds: Int32 = 5000
    /// Number of read-only connections in the reader pool (at least 1).
    public var readerCount = 2
    /// Told how long each `write`/`read` transaction waited and ran (metrics); nil: nothing timed.
    public var observer: (any DatabaseObserver)?

    /// Creates options; the defaults suit one small server.
    public init(
        durability: Durability = .normal, busyTimeoutMilliseconds: Int32 = 5000, readerCount: Int = 2,
        observer: (any DatabaseObserver)? = nil
    ) {
        self.durability = durability
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.readerCount = readerCount
        self.observer = observer
    }
}

/// Receives the timing of every transaction run through `write`, `read`, `writeSync` and `readSync`
/// (not `withWriter`: migrations, PRAGMAs, checkpoints). Called on the thread that ran the
/// transaction, right after it ended (committed or rolled back): must be cheap and never block.
public protocol DatabaseObserver: Sendable {
    /// A transaction on `side` waited `waitNanoseconds` for its connection (the writer queue, or a
    /// free reader) and then ran for `runNanoseconds` from BEGIN to COMMIT/ROLLBACK.
    func transactionFinished(_ side: DatabaseSide, waitNanoseconds: UInt64, runNanoseconds: UInt64)
}

/// Which side of the database a timed transaction ran on.
public enum DatabaseSide: String, Sendable {
    /// On the writer connection (IMMEDIATE).
    case write
    /// On a pooled reader connection (DEFERRED).
    case read
}

/// Monotonic nanoseconds for transaction timings (only read when an observer is set).
@inline(__always)
private func uptimeNanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// One database file in WAL mode: a single writer connection owned by a serial queue, and a
/// small pool of read-only connections so reads run concurrently with the writer and each other.
///
/// Never call the blocking or async entry points from inside a `write`/`withWriter` body (the writer
/// queue would wait on itself), nor `readSync` from inside a read body (the pool may be empty).
public final class Database: SQLDatabase {
    /// Always `.sqlite`.
    public var dialect: SQLDialect { .sqlite }

    /// The SQLite library version this process runs against (`sqlite3_libversion`).
    public static let sqliteVersion = String(cString: sqlite3_libversion())

    /// The database file.
    public let path: String
    /// The options the connections were opened with.
    public let options: DatabaseOptions
    /// Files the writer narrowed to owner-only at open (`Connection.narrowedFiles`), for a warning.
    public let narrowedFiles: [String]
    /// The writer's serial queue; the writer connection is touched only on it.
    private let writerQueue = DispatchQueue(label: "chronir.sqlite.writer")
    /// The writer connection (owned by `writerQueue`).
    private let writer: WriterSlot
    /// The read-only connections.
    private let readers: ReaderPool
    /// Called after every committed `write`/`writeSync` (see `onCommit`). Held in a struct, never as a
    /// bare closure: a closure stored directly as a generic `Mutex` value is reabstracted on every
    /// `inout` write-back of `withLock`, so each call wrapped it in one more thunk — after N commits a
    /// call walked N nested thunks, and the process overflowed its stack after ~400,000 commits
    /// (issue 13; `CommitObserverTests`).
    private let commitObserver = Mutex<CommitObserver?>(nil)

    /// The commit callback, boxed in a struct so its stored representation is fixed (see above).
    private struct CommitObserver: Sendable {
        let call: @Sendable () -> Void
    }

    /// Opens the writer first (creating the file and switching it to WAL), then the readers.
    /// A file path is required: each connection to ":memory:" would see its own empty database.
    public init(path: String, options: DatabaseOptions = DatabaseOptions()) throws(SQLiteError) {
        guard !path.isEmpty, path != ":memory:" else {
            throw .misuse("Database needs a file path; readers cannot share an in-memory database")
        }
        precondition(options.readerCount >= 1, "DatabaseOptions.readerCount must be at least 1")
        self.path = path
        self.options = options
        let writerConnection = try Connection(
            path: path, mode: .readWrite, durability: options.durability,
            busyTimeoutMilliseconds: options.busyTimeoutMilliseconds)
        var readerConnections: [Connection] = []
        for _ in 0..<options.readerCount {
            readerConnections.append(
                try Connection(
                    path: path, mode: .readOnly, durability: options.durability,
                    busyTimeoutMilliseconds: options.busyTimeoutMilliseconds))
        }
        narrowedFiles = writerConnection.narrowedFiles
        writer = WriterSlot(writerConnection, queue: writerQueue)
        readers = ReaderPool(readerConnections)
    }

    /// Runs body on the writer queue inside one IMMEDIATE transaction; commits or rolls back. Never call from the writer queue itself.
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        let observer = options.observer
        let queued = observer == nil ? 0 : uptimeNanoseconds()
        return try await withCheckedThrowingContinuation { continuation in
            writerQueue.async { [writer] in
                let started = observer == nil ? 0 : uptimeNanoseconds()
                let result = Result { try writer.connection().transaction(.immediate, body) }
                if let observer { Self.report(observer, .write, queued, started) }
                if case .success = result { self.committed() }
                continuation.resume(with: result)
            }
        }
    }

    private static func report(_ observer: any DatabaseObserver, _ side: DatabaseSide, _ queued: UInt64, _ started: UInt64) {
        observer.transactionFinished(
            side, waitNanoseconds: started &- queued, runNanoseconds: uptimeNanoseconds() &- started)
    }

    /// Sets the one observer called (on the writer queue, right after the COMMIT, so a reader that
    /// starts now sees the change) after every successful `write`/`writeSync` of this process — so
    /// the realtime feed reads new change-log rows at once instead of on its next poll. It must only
    /// schedule work (no database calls). Replaces any earlier observer.
    public func onCommit(_ observer: @escaping @Sendable () -> Void) {
        commitObserver.withLock { $0 = CommitObserver(call: observer) }
    }

    private func committed() {
        commitObserver.withLock { $0 }?.call()
    }

    /// Runs body on a reader connection, inside a DEFERRED transaction (one consistent snapshot),
    /// on the readers' Dispatch queue; waits without blocking a thread when all readers are busy.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        let observer = options.observer
        let queued = observer == nil ? 0 : uptimeNanoseconds()
        return try await withCheckedThrowingContinuation { continuation in
            readers.acquire { [readers] slot in
                guard let slot else { return continuation.resume(throwing: SQLiteError.misuse("database is closed")) }
                let started = observer == nil ? 0 : uptimeNanoseconds()
                let result = Result { try slot.connection.transaction(.deferred, body) }
                readers.release(slot)
                if let observer { Self.report(observer, .read, queued, started) }
                continuation.resume(with: result)
            }
        }
    }

    /// Blocking `write`: runs body on the writer queue in one IMMEDIATE transaction and waits.
    @discardableResult
    public func writeSync<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        let observer = options.observer
        let queued = observer == nil ? 0 : uptimeNanoseconds()
        let result = try withWriter { connection in
            let started = observer == nil ? 0 : uptimeNanoseconds()
            defer { if let observer { Self.report(observer, .write, queued, started) } }
            return try connection.transaction(.immediate, body)
        }
        committed()
        return result
    }

    /// Blocking `read`: takes a reader (waiting if all are busy) and runs body on the calling thread
    /// inside a DEFERRED transaction.
    public func readSync<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        let observer = options.observer
        let queued = observer == nil ? 0 : uptimeNanoseconds()
        let slot = try readers.acquireSync()
        let started = observer == nil ? 0 : uptimeNanoseconds()
        defer {
            readers.release(slot)
            if let observer { Self.report(observer, .read, queued, started) }
        }
        return try slot.connection.transaction(.deferred, body)
    }

    /// The distinct SQL the writer and the idle readers keep prepared: every statement this process
    /// ran through them recently (`Connection.preparedStatementTexts`). For query-plan checks in tests.
    public func preparedStatementTexts() throws -> Set<String> {
        var texts = Set(try withWriterConnection { $0.preparedStatementTexts })
        readers.withIdleConnections { connections in
            for connection in connections { texts.formUnion(connection.preparedStatementTexts) }
        }
        return texts
    }

    /// Runs `body` on the writer connection WITHOUT an enclosing transaction (for migrations, PRAGMAs, checkpoints).
    @discardableResult
    public func withWriter<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        try withWriterConnection(body)
    }

    /// `withWriter` with the SQLite connection itself (PRAGMAs, checkpoints, statement texts).
    @discardableResult
    public func withWriterConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        dispatchPrecondition(condition: .notOnQueue(writerQueue))
        return try writerQueue.sync {
            try body(writer.connection())
        }
    }

    /// Copies the WAL into the database file and truncates it (`PRAGMA wal_checkpoint(TRUNCATE)`);
    /// throws SQLITE_BUSY when readers kept it from completing.
    public func checkpoint() throws {
        try withWriterConnection { connection in
            let row = try connection.queryOne("PRAGMA wal_checkpoint(TRUNCATE)")
            if let row, row[0] == .integer(1) {
                throw SQLiteError(code: SQLITE_BUSY, message: "checkpoint could not complete: readers are active",
                                  sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            }
        }
    }

    /// Closes the writer (after queued writes finish) and the readers (busy ones when released).
    /// Later calls throw SQLITE_MISUSE "database is closed". Idempotent.
    public func close() {
        dispatchPrecondition(condition: .notOnQueue(writerQueue))
        writerQueue.sync { writer.close() }
        readers.close()
    }
}

/// Holds the writer connection. Only `queue` touches it (checked with `dispatchPrecondition`),
/// which is what makes the unchecked Sendable sound.
final class WriterSlot: @unchecked Sendable {
    /// The connection; nil after close.
    private var open: Connection?
    /// The serial queue that owns the connection.
    private let queue: DispatchQueue

    /// Takes ownership of `connection` for `queue`.
    init(_ connection: Connection, queue: DispatchQueue) {
        open = connection
        self.queue = queue
    }

    /// The connection, or "database is closed". Must be called on the owning queue.
    func connection() throws(SQLiteError) -> Connection {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let open else { throw .misuse("database is closed") }
        return open
    }

    /// Closes and drops the connection. Must be called on the owning queue.
    func close() {
        dispatchPrecondition(condition: .onQueue(queue))
        open?.close()
        open = nil
    }
}

extension Database {
    /// Writes a consistent snapshot of the database to a new file (`Connection.backup`), using a
    /// reader connection so writers are never blocked.
    public func backup(to destinationPath: String) throws {
        let slot = try readers.acquireSync()
        defer { readers.release(slot) }
        try slot.connection.transaction(.deferred) { _ in try slot.connection.backup(to: destinationPath) }
    }
}
