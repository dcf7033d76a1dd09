import CSQLite
import Dispatch
public import Storage
import Synchronization

/// How a `SQLiteDatabase` opens its connections.
public struct SQLiteConfiguration: Sendable {
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

/// One database file in WAL mode: a single writer connection owned by a serial queue, and a
/// small pool of read-only connections so reads run concurrently with the writer and each other.
///
/// Never call the blocking or async entry points from inside a `write`/`withWriter` body (the writer
/// queue would wait on itself), nor `readSync` from inside a read body (the pool may be empty).
public final class SQLiteDatabase: QueuedDatabase {
    /// Always `.sqlite`.
    public var dialect: SQLDialect { .sqlite }

    /// The SQLite library version this process runs against (`sqlite3_libversion`).
    public static let sqliteVersion = String(cString: sqlite3_libversion())

    /// The database file.
    public let path: String
    /// The options the connections were opened with.
    public let options: SQLiteConfiguration
    /// Files the writer narrowed to owner-only at open (`SQLiteConnection.narrowedFiles`), for a warning.
    public let narrowedFiles: [String]
    /// The writer queue and the reader pool (`QueuedDatabase` forwards `write`, `read`, … to them).
    public let queues: ConnectionQueues<SQLiteConnection>

    /// Opens the writer first (creating the file and switching it to WAL), then the readers.
    /// A file path is required: each connection to ":memory:" would see its own empty database.
    public init(path: String, options: SQLiteConfiguration = SQLiteConfiguration()) throws(SQLiteError) {
        guard !path.isEmpty, path != ":memory:" else {
            throw .misuse("SQLiteDatabase needs a file path; readers cannot share an in-memory database")
        }
        precondition(options.readerCount >= 1, "SQLiteConfiguration.readerCount must be at least 1")
        self.path = path
        self.options = options
        let writerConnection = try SQLiteConnection(
            path: path, mode: .readWrite, durability: options.durability,
            busyTimeoutMilliseconds: options.busyTimeoutMilliseconds)
        var readerConnections: [SQLiteConnection] = []
        for _ in 0..<options.readerCount {
            readerConnections.append(
                try SQLiteConnection(
                    path: path, mode: .readOnly, durability: options.durability,
                    busyTimeoutMilliseconds: options.busyTimeoutMilliseconds))
        }
        narrowedFiles = writerConnection.narrowedFiles
        queues = ConnectionQueues(
            writer: writerConnection, readers: readerConnections, label: "chronir.sqlite", observer: options.observer)
    }

    /// `withWriter` with the SQLite connection itself (PRAGMAs, checkpoints, query plans).
    @discardableResult
    public func withWriterConnection<T>(_ body: (SQLiteConnection) throws -> T) throws -> T { try queues.withWriter(body) }

    /// The distinct SQL the writer and the idle readers keep prepared: every statement this process
    /// ran through them recently (`SQLiteConnection.preparedStatementTexts`). For query-plan checks in tests.
    public func preparedStatementTexts() throws -> Set<String> {
        var texts = Set(try withWriterConnection { $0.preparedStatementTexts })
        queues.withIdleReaders { connections in
            for connection in connections { texts.formUnion(connection.preparedStatementTexts) }
        }
        return texts
    }

    /// Copies the WAL into the database file and truncates it (`PRAGMA wal_checkpoint(TRUNCATE)`);
    /// throws SQLITE_BUSY when readers kept it from completing.
    public func checkpoint() throws {
        try withWriterConnection { connection in
            let row = try connection.queryOne("PRAGMA wal_checkpoint(TRUNCATE)")
            if let row, row[0] == .integer(1) {
                throw SQLiteError(
                    code: SQLITE_BUSY, message: "checkpoint could not complete: readers are active",
                    sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            }
        }
    }

    /// Writes a consistent snapshot of the database to a new file (`SQLiteConnection.backup`), using a
    /// reader connection so writers are never blocked.
    public func backup(to destinationPath: String) throws {
        try queues.withReader { connection in
            try connection.transaction(.deferred) { _ in try connection.backup(to: destinationPath) }
        }
    }
}
