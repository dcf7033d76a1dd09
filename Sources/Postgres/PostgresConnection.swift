import CLibPQ
import Hashing
public import Storage

/// A notification received on a channel this connection `LISTEN`s to.
public struct PostgresNotification: Sendable, Equatable {
    /// The channel named in `NOTIFY`.
    public let channel: String
    /// The payload (empty when none was sent).
    public let payload: String
    /// The backend process that sent it.
    public let senderPID: Int32
}

/// One blocking libpq connection (`PQconnectdb`). Not thread-safe: like `SQLiteConnection`, it is
/// owned by one serial queue (the storage queues), never used from an event loop.
///
/// Statements use the extended protocol: each distinct SQL text is prepared once per connection and
/// parameter-type signature (`PQprepare`) and run with `PQexecPrepared`, parameters in text format
/// (bytes in binary format), so values never go through SQL string escaping. Parameter types come
/// from the values, as SQLite's dynamic typing would take them: `.integer` → int8, `.real` → float8,
/// `.text` → text, `.blob` → bytea, NULL → inferred from the parameter's first use, which is
/// why Store SQL writes an optional filter as `CAST(?1 AS TEXT) IS NULL OR topic = ?1`. The Store's `?n` parameters are
/// rewritten to `$n` (`ParameterStyle`).
///
/// Transactions (`transaction`): `.immediate` is `BEGIN` plus the cluster-wide writer lock in
/// exclusive mode (`pg_advisory_xact_lock(writerLockKey)`, released at COMMIT/ROLLBACK), so such a
/// write runs alone across every instance, like SQLite's `BEGIN IMMEDIATE`; `.concurrent` takes the
/// same lock in shared mode, so concurrent writes of all instances run together (each locking the
/// rows it decides on, `forUpdate`) while no `.immediate` one runs. Change-log seqs commit in order
/// whatever the kind: the log is appended at COMMIT under a lock of its own (`sendAtCommit`,
/// `ChangeLog.append`). `.deferred` is a read-only REPEATABLE READ snapshot; `.statement` is no
/// transaction at all: its one statement runs in autocommit, its own snapshot.
///
/// Round trips (docs/scaling.md): a database across a network costs a round trip per message
/// exchange, so inside a transaction this connection holds back every statement whose result nobody
/// waits for yet — BEGIN and the writer lock, SAVEPOINT and RELEASE, `send`'s statements, `prefetch`'s
/// reads, a failed savepoint's ROLLBACK TO — and sends them, in order, in one libpq pipeline (`PQenterPipelineMode`,
/// one `PQpipelineSync`) with the next statement whose result is needed: any `run`/`query`, or
/// COMMIT. So a lone `PATCH /v1/me` is two round trips (BEGIN + lock + its reads; the UPDATE, the
/// `sendAtCommit` appends and COMMIT) instead of one per statement, and one write
/// of a group commit is one round trip per read it makes: its SAVEPOINT and the previous write's
/// sends and RELEASE travel with its first read. A statement never sent has no effect, so a
/// savepoint whose SAVEPOINT had not left yet rolls back by dropping what it queued. A held-back
/// statement that fails fails the whole transaction (`poisoned`: every write of a group commit),
/// since it may belong to a savepoint that already returned; `send` documents that. Held back are
/// at most `pipelineLimits` statements or bytes; past them they are sent. Savepoints are this
/// connection's own, with `Savepoint`'s names and contract.
///
/// Outages (docs/operations.md, PostgreSQL outages): a connection the server closed (a restart, an
/// administrator, a network failure) is re-established at the start of the next top-level
/// transaction (`reconnectIfBroken`, `PQreset`), and a BEGIN that finds the connection closed
/// under it reconnects and begins once more — nothing of the transaction ran yet — so the first
/// request after a restart is served. A reconnect that fails is not tried again before a back-off
/// has passed (`ReconnectBackoff`, shared by a database's connections; a reconnect of any of them
/// that succeeds ends it for all): meanwhile transactions fail at once with a `.connection` error
/// (`isStorageUnavailable`: the API answers 503 with Retry-After) rather than each waiting for a
/// connect attempt. A connection that breaks inside a transaction fails that transaction with a
/// `.connection` error; whether a COMMIT that broke took effect is unknown, so it is reported as
/// a failure and never as a success.
public final class PostgresConnection: SQLConnection {
    /// Always `.postgres`.
    public var dialect: SQLDialect { .postgres }

    /// The advisory-lock key every writer takes (ASCII "chronir"): exclusive for `.immediate` writes,
    /// shared for `.concurrent` ones.
    public static let writerLockKey: Int64 = 0x63_68_72_6f_6e_69_72

    /// Most statements kept prepared; past this the server-side statements are deallocated and the
    /// cache starts over (the app uses a bounded set of static SQL).
    static let statementCacheLimit = 256

    /// The libpq handle; nil after `close()`.
    private var handle: OpaquePointer?
    /// Prepared statement name by the caller's SQL text and parameter types.
    private var statements: [StatementKey: String] = [:]
    /// Names handed out so far (statement names are never reused on one connection).
    private var statementCounter = 0
    /// Nesting of `transaction` calls: 0 outside a transaction, 1 in one, more inside savepoints.
    private var transactionDepth = 0
    /// See `SQLConnection.transactionMemo`: emptied at BEGIN, at the end and on a savepoint's rollback.
    public var transactionMemo: [String: [SQLValue]] = [:]
    /// See `SQLConnection.rowLockWait`: `.wait` at each BEGIN.
    public var rowLockWait = RowLockWait.wait
    /// See `SQLConnection.writesAlone`: inside an `.immediate` transaction (the writer lock exclusive).
    public var writesAlone: Bool { transactionDepth > 0 && transactionKind == .immediate }
    /// The kind of the open top-level transaction.
    private var transactionKind = TransactionKind.deferred
    /// Statements held back until the next one whose result is needed (see the type's comment).
    private var queued: [QueuedStatement] = []
    /// Statements held back until COMMIT (`sendAtCommit`), in order.
    private var atCommit: [QueuedStatement] = []
    /// Statements held back until COMMIT once each (`sendOnceAtCommit`), sent after `atCommit`.
    private var onceAtCommit: [QueuedStatement] = []
    /// Whether `queued` begins with this transaction's BEGIN (nothing of it reached the server yet).
    private var beginQueued = false
    /// Round trips to the server so far: each `PQexec`, `PQprepare`, `PQexecPrepared` and pipeline
    /// is one (what a write costs across a network; tests hold the pipelining to it).
    public private(set) var roundTrips = 0
    /// Inside a `.statement` read: how many statements it may still run (one, then none); nil elsewhere.
    private var statementsLeft: Int?
    /// Pipelines sent so far: a savepoint compares it to learn whether its SAVEPOINT left.
    private var pipelinesSent = 0
    /// The failure of a held-back statement in this transaction: it cannot be pinned on the savepoint
    /// that is running now, so the whole transaction fails with it (no savepoint rolls back).
    private var poisoned: PostgresError?
    /// Most statements and bytes of parameters held back before they are sent anyway: bounds the
    /// memory and keeps a pipeline well inside the socket buffers (libpq writes it blocking while the
    /// server may already answer).
    public static let pipelineLimits = (statements: 64, bytes: 256 * 1024)
    /// When this connection may dial again after a failed reconnect: shared by a database's
    /// connections (`ReconnectBackoff`), or its own.
    private let backoff: ReconnectBackoff

    /// libpq parameters every connection gets unless its URL sets them
    /// (https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-PARAMKEYWORDS):
    /// - `connect_timeout`: a connect — at start-up, a reconnect, /readyz — to an address that drops
    ///   packets fails within 5 s instead of blocking a storage queue for the kernel's minutes;
    /// - `keepalives_idle` / `keepalives_interval` / `keepalives_count`: a connection whose server
    ///   vanished without closing it (a host down, a network partition, a failover) is probed after
    ///   5 s of silence, so the idle LISTEN connection of the realtime feed notices a dead primary;
    /// - `tcp_user_timeout`: data (a statement, a keepalive probe) unacknowledged for 10 s declares
    ///   the connection dead — a write in flight to a machine that died fails with a retryable
    ///   error within 10 s instead of the kernel's ~15 minutes of retransmissions, and a silent
    ///   connection is found dead about 5 + 10 s after its last answer.
    public static let defaultParameters: KeyValuePairs<String, String> = [
        "connect_timeout": "5", "keepalives_idle": "5", "keepalives_interval": "2", "keepalives_count": "3",
        "tcp_user_timeout": "10000",
    ]

    /// Connects with a libpq connection string or URI (`postgres://user@host:port/db?sslmode=…`),
    /// with `defaultParameters` for what it leaves unset. Blocks until connected or failed (at most
    /// the connect timeout). `backoff` paces its reconnects (shared with the other connections to the
    /// same database, or its own).
    public init(url: String, backoff: ReconnectBackoff = ReconnectBackoff()) throws(PostgresError) {
        self.backoff = backoff
        // libpq initialises OpenSSL when a connection negotiates TLS: set it up our way first.
        LibCrypto.prepare()
        // Keywords are applied in order and `dbname` is expanded in place (expand_dbname = 1), so
        // the URL's own settings override the defaults before it.
        let keywords = Self.defaultParameters.map { $0.key } + ["dbname"]
        let values = Self.defaultParameters.map { $0.value } + [url]
        let keywordArray = CStringArray(keywords)
        let valueArray = CStringArray(values)
        defer {
            keywordArray.deallocate()
            valueArray.deallocate()
        }
        guard let connection = PQconnectdbParams(keywordArray.base, valueArray.base, 1) else {
            throw PostgresError(.connection, message: "out of memory allocating a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.message(connection)
            PQfinish(connection)
            throw PostgresError(.connection, message: message)
        }
        handle = connection
    }

    deinit { close() }

    /// Closes the connection (idempotent).
    public func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        statements.removeAll()
    }

    /// Whether the connection is open and healthy (`PQstatus` is CONNECTION_OK).
    public var isHealthy: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// The server's version as an integer (150018 for 15.18).
    public var serverVersion: Int { handle.map { Int(PQserverVersion($0)) } ?? 0 }

    /// The socket of the connection, to watch with a `DispatchSource` (-1 when closed).
    public var socket: Int32 { handle.map { PQsocket($0) } ?? -1 }

    /// Whether a transaction is open (`PQtransactionStatus` is not idle).
    public var isInTransaction: Bool {
        guard let handle else { return false }
        return PQtransactionStatus(handle) != PQTRANS_IDLE
    }

    /// Runs one or more statements with no parameters (the simple query protocol); results discarded.
    public func execute(_ script: String) throws(PostgresError) {
        try spend(1, sql: script)
        let connection = try open()
        if !queued.isEmpty { try flush(own: []) { _, _ in } }
        roundTrips += 1
        let result = PQexec(connection, script)
        defer { PQclear(result) }
        try check(result, connection, sql: script)
    }

    @discardableResult
    public func run(_ sql: String, _ bindings: [SQLValue]) throws(PostgresError) -> Int {
        try perform(sql, bindings) { result in Int(String(cString: PQcmdTuples(result))) ?? 0 }
    }

    public func query(_ sql: String, _ bindings: [SQLValue]) throws(PostgresError) -> [Row] {
        try perform(sql, bindings) { Self.rows(of: $0) }
    }

    public func queryOne(_ sql: String, _ bindings: [SQLValue]) throws(PostgresError) -> Row? {
        try perform(sql, bindings) { Self.rows(of: $0, limit: 1).first }
    }

    /// All of them in one pipeline, with whatever is held back: one round trip.
    public func queryEach(_ statements: [(sql: String, bindings: [SQLValue])]) throws(PostgresError) -> [[Row]] {
        guard !statements.isEmpty else { return [] }
        try spend(statements.count, sql: statements[0].sql)
        var rows = [[Row]](repeating: [], count: statements.count)
        try flush(own: statements.map { QueuedStatement(sql: $0.sql, bindings: $0.bindings, control: false) }) { index, result in
            rows[index] = Self.rows(of: result)
        }
        return rows
    }

    /// Held back until COMMIT, then queued after everything else (`SQLConnection.sendAtCommit`):
    /// they travel with the COMMIT, in pipelines of at most `pipelineLimits` (a longer list is sent in
    /// parts, the last with the COMMIT).
    public func sendAtCommit(_ sql: String, _ bindings: [SQLValue]) throws(PostgresError) {
        guard transactionDepth > 0 else {
            try run(sql, bindings)
            return
        }
        atCommit.append(QueuedStatement(sql: sql, bindings: bindings, control: false))
    }

    /// Held back until COMMIT like `sendAtCommit`, once, after every `sendAtCommit` statement
    /// (`SQLConnection.sendOnceAtCommit`); outside a transaction, `run`.
    public func sendOnceAtCommit(_ sql: String, _ bindings: [SQLValue]) throws(PostgresError) {
        guard transactionDepth > 0 else {
            try run(sql, bindings)
            return
        }
        guard !onceAtCommit.contains(where: { $0.sql == sql && $0.bindings == bindings }) else { return }
        onceAtCommit.append(QueuedStatement(sql: sql, bindings: bindings, control: false))
    }

    /// Held back inside a transaction until the next statement whose result is needed (the type's
    /// comment); outside one, `run`.
    public func send(_ sql: String, _ bindings: [SQLValue]) throws(PostgresError) {
        guard transactionDepth > 0 else {
            try run(sql, bindings)
            return
        }
        try hold(QueuedStatement(sql: sql, bindings: bindings, control: false))
    }

    /// Held back inside a transaction like `send`, its first row kept for `PrefetchedRow.row()`
    /// (`SQLConnection.prefetch`); outside one, `queryOne` at once.
    public func prefetch(_ sql: String, _ bindings: [SQLValue]) throws(PostgresError) -> PrefetchedRow {
        guard transactionDepth > 0 else { return PrefetchedRow(row: try queryOne(sql, bindings)) }
        let pending = PrefetchedRow { [weak self] in
            guard let self, !self.queued.isEmpty else { return }
            try self.flush(own: []) { _, _ in }
        }
        try hold(QueuedStatement(sql: sql, bindings: bindings, control: false, prefetched: pending))
        return pending
    }

    public func scalar(_ sql: String, _ bindings: [SQLValue]) throws(PostgresError) -> SQLValue {
        try perform(sql, bindings) { result in
            guard PQntuples(result) > 0, PQnfields(result) > 0 else { return .null }
            return Self.value(result, row: 0, column: 0)
        }
    }

    /// Told whether each top-level transaction reached the primary: success, or a failure for lack of
    /// one (`isUnavailable`, or 25006 read_only_sql_transaction from a standby). `PostgresDatabase`
    /// sets it on every connection; nil: nobody is told.
    public var availabilityObserver: (any DatabaseObserver)?

    public func transaction<T>(_ kind: TransactionKind, _ body: (any SQLConnection) throws -> T) throws -> T {
        if transactionDepth > 0 { return try savepoint(body) }
        guard let availabilityObserver else { return try topLevelTransaction(kind, body) }
        do {
            let result = try topLevelTransaction(kind, body)
            availabilityObserver.primaryReached()
            return result
        } catch let error as PostgresError where error.isUnavailable || error.sqlState == "25006" {
            availabilityObserver.primaryUnreachable()
            throw error
        }
    }

    /// `transaction` outside any other: BEGIN, the body, COMMIT (or ROLLBACK when the body threw).
    private func topLevelTransaction<T>(_ kind: TransactionKind, _ body: (any SQLConnection) throws -> T) throws -> T {
        if kind == .statement { return try singleStatement(body) }
        try reconnectIfBroken()
        // BEGIN (and the lock) leave with the body's first statement; `flush` begins again on a
        // fresh connection if the server closed this idle one since its last transaction.
        queued = [QueuedStatement(control: kind == .deferred ? "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY" : "BEGIN")]
        switch kind {
        case .deferred, .statement: break
        case .immediate:
            queued.append(
                QueuedStatement(sql: "SELECT pg_advisory_xact_lock($1)", bindings: [.integer(Self.writerLockKey)], control: false))
        case .concurrent:
            queued.append(
                QueuedStatement(
                    sql: "SELECT pg_advisory_xact_lock_shared($1)", bindings: [.integer(Self.writerLockKey)], control: false))
        }
        rowLockWait = .wait
        transactionKind = kind
        let preamble = queued.count
        beginQueued = true
        transactionDepth = 1
        transactionMemo = [:]
        poisoned = nil
        atCommit = []
        onceAtCommit = []
        defer {
            transactionDepth = 0
            transactionMemo = [:]
            queued = []
            atCommit = []
            onceAtCommit = []
            beginQueued = false
            poisoned = nil
        }
        do {
            let result = try body(self)
            if let poisoned { throw poisoned }
            let last = atCommit + onceAtCommit
            atCommit = []
            onceAtCommit = []
            for statement in last { try hold(statement) }
            if let poisoned { throw poisoned }
            // Nothing reached the server and nothing is queued: there is nothing to commit.
            if beginQueued, queued.count == preamble { return result }
            // COMMIT of a transaction an earlier error aborted answers "ROLLBACK" without an error:
            // refuse instead, so a swallowed failure can never look like a commit.
            if queued.isEmpty, let handle, PQtransactionStatus(handle) == PQTRANS_INERROR {
                throw PostgresError(.misuse, message: "transaction aborted by an earlier failed statement; rolled back")
            }
            var tag = ""
            try flush(own: [QueuedStatement(control: "COMMIT")]) { _, result in tag = String(cString: PQcmdStatus(result)) }
            guard tag == "COMMIT" else {
                throw PostgresError(.misuse, message: "transaction aborted by an earlier failed statement; rolled back")
            }
            return result
        } catch {
            let sent = !beginQueued
            queued = []
            if sent, isInTransaction { _ = try? execute("ROLLBACK") }
            throw poisoned ?? error
        }
    }

    /// A `.statement` read: the body's one statement in autocommit, no BEGIN or COMMIT; a second
    /// statement throws `misuse` (`spend`). A connection the server closed since its last use is
    /// re-established and the body run once more, as a transaction whose BEGIN found it closed is:
    /// a read has no effect to lose.
    private func singleStatement<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        try reconnectIfBroken()
        transactionMemo = [:]
        defer {
            statementsLeft = nil
            transactionMemo = [:]
        }
        statementsLeft = 1
        do {
            return try body(self)
        } catch {
            guard !isHealthy else { throw error }
            try reconnectIfBroken()
            statementsLeft = 1
            return try body(self)
        }
    }

    /// Counts `count` statements against a `.statement` read's one (nothing elsewhere).
    private func spend(_ count: Int, sql: String) throws(PostgresError) {
        guard let left = statementsLeft else { return }
        guard count <= left else {
            throw PostgresError(.misuse, message: "a .statement read runs one statement; this is one more", sql: sql)
        }
        statementsLeft = left - count
    }

    /// A transaction inside the open one: `Savepoint`'s contract, with its SAVEPOINT and RELEASE held
    /// back like any statement whose result nobody reads. A body that throws rolls back to the
    /// savepoint (by dropping what never left, else with ROLLBACK TO) — unless the transaction is
    /// `poisoned`, which no savepoint undoes.
    private func savepoint<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        transactionDepth += 1
        defer { transactionDepth -= 1 }
        let name = "chronir_savepoint_\(transactionDepth)"
        let mark = queued.count
        let commitMark = atCommit.count
        let onceBefore = onceAtCommit
        let pipelinesBefore = pipelinesSent
        queued.append(QueuedStatement(control: "SAVEPOINT \(name)"))
        do {
            let result = try body(self)
            if let poisoned { throw poisoned }
            try hold(QueuedStatement(control: "RELEASE SAVEPOINT \(name)"))
            return result
        } catch {
            transactionMemo = [:]
            if atCommit.count > commitMark { atCommit.removeSubrange(commitMark...) }
            onceAtCommit = onceBefore
            if let poisoned { throw poisoned }
            if pipelinesSent == pipelinesBefore {
                // The SAVEPOINT never left, nor anything after it: dropping them undoes the body.
                queued.removeSubrange(mark...)
            } else {
                // The SAVEPOINT left with the last pipeline, sent inside the body: what is queued
                // now is the body's too.
                queued = [QueuedStatement(control: "ROLLBACK TO SAVEPOINT \(name)"), QueuedStatement(control: "RELEASE SAVEPOINT \(name)")]
            }
            throw error
        }
    }

    /// Reads whatever the server sent (`PQconsumeInput`) and returns the notifications received
    /// since the last call. Does not block when called after the socket became readable.
    public func notifications() throws(PostgresError) -> [PostgresNotification] {
        let connection = try open()
        guard PQconsumeInput(connection) == 1 else {
            throw PostgresError(.connection, message: Self.message(connection))
        }
        var received: [PostgresNotification] = []
        while let notify = PQnotifies(connection) {
            let value = notify.pointee
            received.append(
                PostgresNotification(
                    channel: String(cString: value.relname), payload: value.extra.map { String(cString: $0) } ?? "",
                    senderPID: value.be_pid))
            PQfreemem(notify)
        }
        return received
    }

    /// Sends `SELECT 1` without waiting for its answer: a liveness probe on a connection that
    /// otherwise only listens. `probeAnswered()` reads the answer once `notifications()` consumed
    /// the input; send no other statement while a probe is outstanding.
    public func sendProbe() throws(PostgresError) {
        let connection = try open()
        guard PQsendQuery(connection, "SELECT 1") == 1 else {
            throw PostgresError(.connection, message: Self.message(connection))
        }
    }

    /// Whether the outstanding probe's whole answer has arrived (its results are consumed); never
    /// blocks. Call only while a probe is outstanding, after `notifications()`.
    public func probeAnswered() throws(PostgresError) -> Bool {
        let connection = try open()
        while PQisBusy(connection) == 0 {
            guard let result = PQgetResult(connection) else { return true }
            let status = PQresultStatus(result)
            PQclear(result)
            guard status == PGRES_TUPLES_OK else { throw PostgresError(.connection, message: Self.message(connection)) }
        }
        return false
    }

    /// Quotes `name` as an SQL identifier (`PQescapeIdentifier`), e.g. for `LISTEN`.
    public func quoteIdentifier(_ name: String) throws(PostgresError) -> String {
        let connection = try open()
        let utf8 = Array(name.utf8)
        guard let quoted = PQescapeIdentifier(connection, name, utf8.count) else {
            throw PostgresError(.misuse, message: Self.message(connection))
        }
        defer { PQfreemem(quoted) }
        return String(cString: quoted)
    }

    /// Re-establishes a broken connection (`PQreset`, blocking for at most the connect timeout)
    /// between transactions; prepared statements died with the old session. Throws a `.connection`
    /// error when the server is still unreachable — at once, without dialling, while the back-off
    /// after the last failed attempt (`ReconnectBackoff`) has not passed.
    public func reconnectIfBroken() throws(PostgresError) {
        let connection = try open()
        guard PQstatus(connection) != CONNECTION_OK else { return }
        let attempt = try backoff.permit()
        statements.removeAll()
        PQreset(connection)
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.message(connection)
            backoff.failed(attempt, message: message)
            throw PostgresError(.connection, message: message)
        }
        backoff.succeeded()
    }

    // MARK: - Internals

    private func open() throws(PostgresError) -> OpaquePointer {
        guard let handle else { throw PostgresError(.misuse, message: "connection is closed") }
        return handle
    }

    /// Prepares `sql` once (cached), runs it with `bindings`, and hands the successful result to
    /// `read` before clearing it.
    private func perform<R>(
        _ sql: String, _ bindings: [SQLValue], _ read: (OpaquePointer) -> R
    ) throws(PostgresError) -> R {
        try spend(1, sql: sql)
        let connection = try open()
        if !queued.isEmpty {
            var value: R?
            try flush(own: [QueuedStatement(sql: sql, bindings: bindings, control: false)]) { _, result in value = read(result) }
            // `flush` read the statement's result unless it threw.
            return value!
        }
        let name = try prepared(sql, types: bindings.map(Self.typeOID), connection)
        var encoded: [[UInt8]?] = []
        var formats: [Int32] = []
        encoded.reserveCapacity(bindings.count)
        for binding in bindings {
            let (bytes, format) = try Self.encode(binding, sql: sql)
            encoded.append(bytes)
            formats.append(format)
        }
        roundTrips += 1
        let result = Self.withParameterPointers(encoded) { values, lengths in
            PQexecPrepared(connection, name, Int32(bindings.count), values, lengths, formats, 0)
        }
        defer { PQclear(result) }
        try check(result, connection, sql: sql)
        return read(result!)
    }

    /// A statement held back inside a transaction (see the type's comment).
    private struct QueuedStatement {
        let sql: String
        let bindings: [SQLValue]
        /// Transaction control (BEGIN, SAVEPOINT, RELEASE, ROLLBACK TO, COMMIT): sent unprepared.
        let control: Bool
        /// A `prefetch` read: told its first row when its result arrives.
        let prefetched: PrefetchedRow?

        init(sql: String, bindings: [SQLValue], control: Bool, prefetched: PrefetchedRow? = nil) {
            self.sql = sql
            self.bindings = bindings
            self.control = control
            self.prefetched = prefetched
        }

        init(control sql: String) { self.init(sql: sql, bindings: [], control: true) }

        /// What it adds to a pipeline, roughly: its text and parameters.
        var bytes: Int {
            bindings.reduce(sql.utf8.count) { total, value in
                switch value {
                case .text(let text): total + text.utf8.count
                case .blob(let bytes): total + bytes.count
                case .null, .integer, .real: total + 8
                }
            }
        }
    }

    /// Queues `statement`; sends the queue when it reaches `pipelineLimits`.
    private func hold(_ statement: QueuedStatement) throws(PostgresError) {
        queued.append(statement)
        if queued.count >= Self.pipelineLimits.statements
            || queued.reduce(0, { $0 + $1.bytes }) >= Self.pipelineLimits.bytes
        {
            try flush(own: []) { _, _ in }
        }
    }

    /// Sends the queued statements and then `own` — the caller's statements, whose results it reads
    /// (`read` gets each one's index in `own` and its result) — as one pipeline with one sync, and
    /// reads every result. The first failure is thrown; the server skipped what came after it; a
    /// queued statement's failure also poisons the transaction (`poisoned`). When the pipeline starts
    /// with the transaction's BEGIN and the connection turns out closed (the server restarted since
    /// the last transaction), nothing of the transaction ran: it reconnects and sends the pipeline once more.
    private func flush(own: [QueuedStatement], _ read: (Int, OpaquePointer) -> Void) throws(PostgresError) {
        let statements = queued + own
        let ownFrom = queued.count
        let startsTransaction = beginQueued
        queued = []
        beginQueued = false
        do {
            try sendPipeline(statements, ownFrom: ownFrom, read)
        } catch {
            // The server may answer a closed session's first statement with a FATAL error (57P01)
            // before libpq notices the closed socket: whatever the error, a connection that is gone
            // now lost nothing of a transaction whose BEGIN was in the pipeline.
            guard startsTransaction, !isHealthy else { throw error }
            poisoned = nil
            try reconnectIfBroken()
            try sendPipeline(statements, ownFrom: ownFrom, read)
        }
    }

    /// What one result of a pipeline answers.
    private enum PipelineStep {
        /// `PQsendPrepare` of a statement not prepared yet: cached once it succeeded.
        case prepare(StatementKey, name: String, index: Int)
        /// The statement at this index of the pipeline.
        case statement(Int)
    }

    /// One pipeline: every statement (prepared on first use, like `perform`), one sync, every result.
    private func sendPipeline(
        _ items: [QueuedStatement], ownFrom: Int, _ read: (Int, OpaquePointer) -> Void
    ) throws(PostgresError) {
        let connection = try open()
        // Everything that can fail before a byte is sent: encoding, and room in the statement cache
        // (DEALLOCATE cannot run inside the pipeline).
        var encoded: [(values: [[UInt8]?], formats: [Int32])] = []
        for item in items {
            var values: [[UInt8]?] = []
            var formats: [Int32] = []
            for binding in item.bindings {
                let (bytes, format) = try Self.encode(binding, sql: item.sql)
                values.append(bytes)
                formats.append(format)
            }
            encoded.append((values, formats))
        }
        if statements.count + items.count >= Self.statementCacheLimit {
            try execute("DEALLOCATE ALL")
            statements.removeAll()
        }
        guard PQenterPipelineMode(connection) == 1 else {
            throw PostgresError(.misuse, message: "cannot enter pipeline mode: \(Self.message(connection))")
        }
        pipelinesSent += 1
        roundTrips += 1
        var steps: [PipelineStep] = []
        var preparing: [StatementKey: String] = [:]
        var sent = true
        for (index, item) in items.enumerated() {
            if item.control {
                sent = PQsendQueryParams(connection, item.sql, 0, nil, nil, nil, nil, 0) == 1
            } else {
                let key = StatementKey(sql: item.sql, types: item.bindings.map(Self.typeOID))
                var name = statements[key] ?? preparing[key]
                if name == nil {
                    statementCounter += 1
                    let fresh = "chronir_\(statementCounter)"
                    sent = key.types.withUnsafeBufferPointer { types in
                        PQsendPrepare(connection, fresh, ParameterStyle.postgres(item.sql), Int32(types.count), types.baseAddress) == 1
                    }
                    guard sent else { break }
                    steps.append(.prepare(key, name: fresh, index: index))
                    preparing[key] = fresh
                    name = fresh
                }
                sent = Self.withParameterPointers(encoded[index].values) { values, lengths in
                    PQsendQueryPrepared(connection, name, Int32(item.bindings.count), values, lengths, encoded[index].formats, 0) == 1
                }
            }
            guard sent else { break }
            steps.append(.statement(index))
        }
        if sent { sent = PQpipelineSync(connection) == 1 }
        var failure: PostgresError? = sent ? nil : PostgresError(.connection, message: Self.message(connection))
        for step in steps {
            guard let result = PQgetResult(connection) else {
                failure = failure ?? PostgresError(.connection, message: Self.message(connection))
                break
            }
            let status = PQresultStatus(result)
            switch step {
            case .prepare(let key, let name, let index):
                if status == PGRES_COMMAND_OK { statements[key] = name }
                if failure == nil, status != PGRES_PIPELINE_ABORTED {
                    do { try check(result, connection, sql: key.sql) } catch {
                        failure = error
                        if index < ownFrom, transactionDepth > 0 { poisoned = poisoned ?? error }
                    }
                }
            case .statement(let index):
                // PGRES_PIPELINE_ABORTED: skipped after the failure already recorded.
                if failure == nil, status != PGRES_PIPELINE_ABORTED {
                    do {
                        try check(result, connection, sql: items[index].sql)
                        if index >= ownFrom {
                            read(index - ownFrom, result)
                        } else if let prefetched = items[index].prefetched {
                            prefetched.arrived(Self.rows(of: result, limit: 1).first)
                        }
                    } catch {
                        failure = error
                        if index < ownFrom, transactionDepth > 0 { poisoned = poisoned ?? error }
                    }
                }
            }
            PQclear(result)
            // Each statement's results end with a NULL.
            while let extra = PQgetResult(connection) { PQclear(extra) }
        }
        if sent, failure?.kind != .connection {
            // The sync's own result ends the pipeline (the server is then ready for the next).
            while let result = PQgetResult(connection) {
                let status = PQresultStatus(result)
                PQclear(result)
                if status == PGRES_PIPELINE_SYNC { break }
            }
        }
        _ = PQexitPipelineMode(connection)
        if let failure {
            // A FATAL answer read before libpq saw the socket close is a broken connection too.
            guard failure.kind == .statement, PQstatus(connection) != CONNECTION_OK else { throw failure }
            throw PostgresError(.connection, sqlState: failure.sqlState, message: failure.message, sql: failure.sql)
        }
    }

    /// The server-side statement name for `sql` with parameters of `types`, preparing it on first use.
    private func prepared(_ sql: String, types: [UInt32], _ connection: OpaquePointer) throws(PostgresError) -> String {
        let key = StatementKey(sql: sql, types: types)
        if let cached = statements[key] { return cached }
        if statements.count >= Self.statementCacheLimit {
            try execute("DEALLOCATE ALL")
            statements.removeAll()
        }
        statementCounter += 1
        let name = "chronir_\(statementCounter)"
        roundTrips += 1
        let result = types.withUnsafeBufferPointer { types in
            PQprepare(connection, name, ParameterStyle.postgres(sql), Int32(types.count), types.baseAddress)
        }
        defer { PQclear(result) }
        try check(result, connection, sql: sql)
        statements[key] = name
        return name
    }

    /// What a prepared statement is cached by.
    private struct StatementKey: Hashable {
        let sql: String
        let types: [UInt32]
    }

    /// The parameter type sent for `value` (0 for NULL: the server infers it from its first use).
    private static func typeOID(_ value: SQLValue) -> UInt32 {
        switch value {
        case .null: 0
        case .integer: PostgresTypeOID.int8
        case .real: PostgresTypeOID.float8
        case .text: PostgresTypeOID.text
        case .blob: PostgresTypeOID.bytea
        }
    }

    /// Throws unless `result` is a success (command or rows).
    private func check(_ result: OpaquePointer?, _ connection: OpaquePointer, sql: String) throws(PostgresError) {
        guard let result else {
            throw PostgresError(.connection, message: Self.message(connection), sql: sql)
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            let sqlState = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = String(cString: PQresultErrorMessage(result)).trimmingTrailingNewlines()
            let kind: PostgresError.Kind = PQstatus(connection) == CONNECTION_OK ? .statement : .connection
            throw PostgresError(kind, sqlState: sqlState, message: message, sql: sql)
        }
    }

    /// Text format (0) for everything but bytes, which go in binary format (1): no escaping needed.
    private static func encode(_ value: SQLValue, sql: String) throws(PostgresError) -> ([UInt8]?, Int32) {
        switch value {
        case .null: return (nil, 0)
        case .integer(let integer): return (Array(String(integer).utf8), 0)
        case .real(let real):
            let text =
                real.isNaN ? "NaN" : real == .infinity ? "Infinity" : real == -.infinity ? "-Infinity" : "\(real)"
            return (Array(text.utf8), 0)
        case .text(let text):
            guard !text.utf8.contains(0) else {
                throw PostgresError(.misuse, message: "text parameter contains NUL, which PostgreSQL text cannot hold", sql: sql)
            }
            return (Array(text.utf8), 0)
        case .blob(let bytes): return (bytes, 1)
        }
    }

    /// Calls `body` with C arrays of parameter pointers (NUL-terminated copies) and lengths.
    private static func withParameterPointers<R>(
        _ parameters: [[UInt8]?],
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?) -> R
    ) -> R {
        var storage: [UnsafeMutablePointer<CChar>?] = []
        var lengths: [Int32] = []
        storage.reserveCapacity(parameters.count)
        for parameter in parameters {
            guard let parameter else {
                storage.append(nil)
                lengths.append(0)
                continue
            }
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: parameter.count + 1)
            parameter.withUnsafeBufferPointer { source in
                source.withMemoryRebound(to: CChar.self) { copy.initialize(from: $0.baseAddress!, count: parameter.count) }
            }
            copy[parameter.count] = 0
            storage.append(copy)
            lengths.append(Int32(parameter.count))
        }
        defer { for pointer in storage { pointer?.deallocate() } }
        let constant = storage.map { UnsafePointer($0) }
        return constant.withUnsafeBufferPointer { values in
            lengths.withUnsafeBufferPointer { lengths in body(values.baseAddress, lengths.baseAddress) }
        }
    }

    /// Materialises the rows of a successful result (at most `limit`).
    private static func rows(of result: OpaquePointer, limit: Int32 = .max) -> [Row] {
        let columnCount = PQnfields(result)
        let rowCount = min(PQntuples(result), limit)
        let columns = ColumnNames((0..<columnCount).map { String(cString: PQfname(result, $0)) })
        var rows: [Row] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            rows.append(Row(columns: columns, values: (0..<columnCount).map { value(result, row: row, column: $0) }))
        }
        return rows
    }

    /// One column value of one row.
    private static func value(_ result: OpaquePointer, row: Int32, column: Int32) -> SQLValue {
        if PQgetisnull(result, row, column) == 1 { return .null }
        let length = Int(PQgetlength(result, row, column))
        let pointer = PQgetvalue(result, row, column)!
        return pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
            PostgresDecoding.decode(text: UnsafeBufferPointer(start: $0, count: length), oid: PQftype(result, column))
        }
    }

    private static func message(_ connection: OpaquePointer) -> String {
        String(cString: PQerrorMessage(connection)).trimmingTrailingNewlines()
    }
}

/// A NULL-terminated C array of NUL-terminated copies of strings (libpq's `const char *const *`),
/// owned until `deallocate()`.
private struct CStringArray {
    /// The array's first element.
    let base: UnsafeMutablePointer<UnsafePointer<CChar>?>
    private let count: Int

    init(_ strings: [String]) {
        count = strings.count
        base = .allocate(capacity: strings.count + 1)
        for (index, string) in strings.enumerated() {
            let utf8 = Array(string.utf8CString)
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: utf8.count)
            copy.initialize(from: utf8, count: utf8.count)
            (base + index).initialize(to: UnsafePointer(copy))
        }
        (base + strings.count).initialize(to: nil)
    }

    /// Frees the copies and the array.
    func deallocate() {
        for index in 0..<count { UnsafeMutablePointer(mutating: base[index])?.deallocate() }
        base.deallocate()
    }
}

@available(*, unavailable, message: "a PostgresConnection belongs to one queue; use PostgresDatabase to share access")
extension PostgresConnection: Sendable {}

extension String {
    /// libpq messages end in a newline.
    fileprivate func trimmingTrailingNewlines() -> String {
        var text = Substring(self)
        while text.last == "\n" { text = text.dropLast() }
        return String(text)
    }
}
