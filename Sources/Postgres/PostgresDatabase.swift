public import Storage

/// How a `PostgresDatabase` opens its connections.
public struct PostgresConfiguration: Sendable {
    /// Reader connections per instance (at least 1). Each is one server backend process.
    public var readerCount: Int
    /// Writer connections for `.concurrent` writes, besides the one writer of `.immediate` writes
    /// (0: concurrent writes queue for that writer). Each runs its own group commits, so this is how
    /// many transactions of this instance can wait on the network at once (docs/scaling.md).
    public var concurrentWriterCount: Int
    /// Told how long each transaction waited and ran, and whether each transaction reached the
    /// primary (metrics); nil: nothing timed.
    public var observer: (any DatabaseObserver)?
    /// How often the commit watcher's `LISTEN` connection probes the server (`PostgresListener`):
    /// a server that stops answering is left within twice this (nil: never probed).
    public var listenerHeartbeat: Duration?

    /// The default `listenerHeartbeat`: a silent primary is left within 10 s, about when
    /// `tcp_user_timeout` gives up on a statement in flight (`PostgresConnection.defaultParameters`).
    public static let defaultListenerHeartbeat: Duration = .seconds(5)

    /// Creates options; the defaults suit one small instance.
    public init(
        readerCount: Int = 4, concurrentWriterCount: Int = 4, observer: (any DatabaseObserver)? = nil,
        listenerHeartbeat: Duration? = defaultListenerHeartbeat
    ) {
        self.readerCount = readerCount
        self.concurrentWriterCount = concurrentWriterCount
        self.observer = observer
        self.listenerHeartbeat = listenerHeartbeat
    }
}

/// A PostgreSQL database shared by every instance: one writer connection on a serial queue, a few
/// more for `.concurrent` writes, and a pool of reader connections (`ConnectionQueues`, the same
/// machinery as SQLite's). Writers of all instances meet at the advisory writer lock
/// (`PostgresConnection.writerLockKey`: exclusive for `.immediate` writes, shared for concurrent ones)
/// and at the change log's append lock, taken at COMMIT (`ChangeLog.append`).
public final class PostgresDatabase: QueuedDatabase {
    /// Always `.postgres`.
    public var dialect: SQLDialect { .postgres }
    /// The connection URL (may contain a password: never log it whole).
    public let url: String
    /// The writer queue and the reader pool (`QueuedDatabase` forwards `write`, `read`, … to them).
    public let queues: ConnectionQueues<PostgresConnection>
    /// `PostgresConfiguration.listenerHeartbeat`, for `watchCommits`.
    let listenerHeartbeat: Duration?

    /// Connects the writer and the readers (blocking); throws the first connection error. They share
    /// one `ReconnectBackoff`: after an outage, the first reconnect that succeeds frees them all.
    public init(url: String, options: PostgresConfiguration = PostgresConfiguration()) throws(PostgresError) {
        precondition(options.readerCount >= 1, "PostgresConfiguration.readerCount must be at least 1")
        self.url = url
        listenerHeartbeat = options.listenerHeartbeat
        let backoff = ReconnectBackoff()
        let writer = try PostgresConnection(url: url, backoff: backoff)
        writer.availabilityObserver = options.observer
        var readers: [PostgresConnection] = []
        for _ in 0..<options.readerCount {
            let reader = try PostgresConnection(url: url, backoff: backoff)
            reader.availabilityObserver = options.observer
            readers.append(reader)
        }
        var concurrentWriters: [PostgresConnection] = []
        for _ in 0..<max(0, options.concurrentWriterCount) {
            let connection = try PostgresConnection(url: url, backoff: backoff)
            connection.availabilityObserver = options.observer
            concurrentWriters.append(connection)
        }
        queues = ConnectionQueues(
            writer: writer, readers: readers, concurrentWriters: concurrentWriters, label: "chronir.postgres",
            observer: options.observer)
    }

    /// The migrations' entry point: re-establishes a broken writer connection first.
    @discardableResult
    public func withWriter<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        try queues.withWriter { connection in
            try connection.reconnectIfBroken()
            return try body(connection)
        }
    }
}
