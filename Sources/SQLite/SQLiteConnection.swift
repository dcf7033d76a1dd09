import CSQLite
public import Storage

/// How `COMMIT` waits for the disk (`PRAGMA synchronous`, https://sqlite.org/pragma.html#pragma_synchronous).
public enum Durability: String, Sendable, CaseIterable {
    /// `synchronous=NORMAL`: in WAL mode a power loss may drop the last commits but never corrupts.
    case normal
    /// `synchronous=FULL`: every commit is on disk before COMMIT returns.
    case full

    /// The value `PRAGMA synchronous` reports for this level (NORMAL = 1, FULL = 2).
    public var pragmaValue: Int64 {
        switch self {
        case .normal: 1
        case .full: 2
        }
    }
}

/// One sqlite3 connection. Not thread-safe and not Sendable: exactly one queue owns it (it is
/// opened with SQLITE_OPEN_NOMUTEX). Prepared statements are cached per connection by SQL text.
public final class SQLiteConnection: SQLConnection {
    /// Always `.sqlite`.
    public var dialect: SQLDialect { .sqlite }

    /// Whether the connection may write.
    public enum OpenMode: Sendable {
        /// Read and write; creates the file if missing and switches it to WAL.
        case readWrite
        /// Read-only (the file must exist).
        case readOnly
    }

    /// Most statements kept prepared; past this the cache is emptied (the app uses a bounded set of
    /// static SQL, so this only guards against SQL built from data).
    static let statementCacheLimit = 256

    /// The database file this connection opened.
    public let path: String
    /// The mode it was opened in.
    public let mode: OpenMode
    /// The open handle; nil once closed.
    private var handle: OpaquePointer?
    /// Prepared statements by SQL text.
    private var statements: [String: OpaquePointer] = [:]
    /// Result column names by prepared statement (emptied whenever `statements` is).
    private var columnNamesByStatement: [OpaquePointer: ColumnNames] = [:]
    /// Savepoints currently open through `transaction` (names are unique per depth).
    private var savepointDepth = 0
    /// See `SQLConnection.transactionMemo`: emptied at BEGIN, at the end and on a savepoint's rollback.
    public var transactionMemo: [String: [SQLValue]] = [:]
    /// See `SQLConnection.rowLockWait`: SQLite locks no rows (its writer lock excludes every other
    /// writer), so it is only kept.
    public var rowLockWait = RowLockWait.wait
    /// See `SQLConnection.writesAlone`: SQLite has one writer at a time.
    public var writesAlone: Bool { true }

    /// At once: SQLite's writer holds its lock from BEGIN, so nothing can come between this and
    /// COMMIT that a later moment would order differently.
    public func sendAtCommit(_ sql: String, _ bindings: [SQLValue]) throws { try run(sql, bindings) }
    public func sendOnceAtCommit(_ sql: String, _ bindings: [SQLValue]) throws { try run(sql, bindings) }

    /// SQLiteDatabase files this connection narrowed to owner-only when opening (`FileProtection`): they had
    /// group/other permissions, e.g. written by an older version. Empty normally.
    public let narrowedFiles: [String]

    /// Opens `path` (read-write: created 0600 first, see `FileProtection`) and applies at every open: `PRAGMA foreign_keys=ON`,
    /// `journal_mode=WAL` (read-write
    /// only), `synchronous=NORMAL|FULL`, and the busy timeout. Throws the open or pragma error.
    public init(
        path: String, mode: OpenMode = .readWrite, durability: Durability = .normal,
        busyTimeoutMilliseconds: Int32 = 5000
    ) throws(SQLiteError) {
        self.path = path
        self.mode = mode
        let access = mode == .readWrite ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY
        if mode == .readWrite, !path.isEmpty, path != ":memory:" {
            narrowedFiles = try FileProtection.prepare(databasePath: path)
        } else {
            narrowedFiles = []
        }
        var db: OpaquePointer?
        let status = sqlite3_open_v2(path, &db, access | SQLITE_OPEN_NOMUTEX, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(status))
            let code = db.map { sqlite3_extended_errcode($0) } ?? status
            sqlite3_close_v2(db)
            throw SQLiteError(code: code, message: "\(message) (opening \(path))")
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        try execute("PRAGMA foreign_keys = ON")
        if mode == .readWrite {
            let journal = try scalar("PRAGMA journal_mode = WAL", [])
            // In-memory databases report "memory"; every file database must really be in WAL.
            guard journal == .text("wal") || path == ":memory:" || path.isEmpty else {
                throw SQLiteError(code: SQLITE_ERROR, message: "could not enable WAL (journal_mode is \(journal))")
            }
        }
        try execute("PRAGMA synchronous = \(durability.rawValue.uppercased())")
    }

    deinit {
        close()
    }

    /// Whether `close()` has run.
    public var isClosed: Bool { handle == nil }

    /// Runs one or more `;`-separated statements without bindings (`sqlite3_exec`); rows are discarded.
    public func execute(_ sql: String) throws(SQLiteError) {
        let db = try openHandle(sql)
        var errorMessage: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(db, sql, nil, nil, &errorMessage)
        defer { sqlite3_free(errorMessage) }
        guard status == SQLITE_OK else {
            let message = errorMessage.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(db))
            throw SQLiteError(code: sqlite3_extended_errcode(db), message: message, sql: sql)
        }
    }

    /// Runs one statement to completion with `bindings` for `?1`, `?2`, … and returns the number of
    /// rows it changed (`sqlite3_changes64`). Any rows it returns are discarded.
    @discardableResult
    public func run(_ sql: String, _ bindings: [SQLValue] = []) throws(SQLiteError) -> Int {
        try withStatement(sql, bindings) { statement throws(SQLiteError) in
            while try step(statement, sql) {}
            return Int(sqlite3_changes64(handle))
        }
    }

    /// `run` at once: one process has no round trip to save (`SQLConnection.send`).
    public func send(_ sql: String, _ bindings: [SQLValue]) throws(SQLiteError) {
        try run(sql, bindings)
    }

    /// `queryOne` at once: one process has no round trip to save (`SQLConnection.prefetch`).
    public func prefetch(_ sql: String, _ bindings: [SQLValue]) throws(SQLiteError) -> PrefetchedRow {
        PrefetchedRow(row: try queryOne(sql, bindings))
    }

    /// One `query` after the other: one process has no round trip to save (`SQLConnection.queryEach`).
    public func queryEach(_ statements: [(sql: String, bindings: [SQLValue])]) throws(SQLiteError) -> [[Row]] {
        var rows: [[Row]] = []
        for statement in statements { rows.append(try query(statement.sql, statement.bindings)) }
        return rows
    }

    /// Runs one statement and returns all its rows.
    public func query(_ sql: String, _ bindings: [SQLValue] = []) throws(SQLiteError) -> [Row] {
        try withStatement(sql, bindings) { statement throws(SQLiteError) in
            let columns = columnNames(statement)
            var rows: [Row] = []
            while try step(statement, sql) { rows.append(row(statement, columns)) }
            return rows
        }
    }

    /// Runs one statement and returns its first row, or nil; later rows are not computed.
    public func queryOne(_ sql: String, _ bindings: [SQLValue] = []) throws(SQLiteError) -> Row? {
        try withStatement(sql, bindings) { statement throws(SQLiteError) in
            guard try step(statement, sql) else { return nil }
            return row(statement, columnNames(statement))
        }
    }

    /// Runs one statement and returns the first column of its first row, or `.null` when there is no row.
    public func scalar(_ sql: String, _ bindings: [SQLValue] = []) throws(SQLiteError) -> SQLValue {
        try withStatement(sql, bindings) { statement throws(SQLiteError) in
            guard try step(statement, sql), sqlite3_column_count(statement) > 0 else { return .null }
            return value(statement, 0)
        }
    }

    /// The rowid of the most recent successful INSERT on this connection (0 if none or closed).
    public var lastInsertRowID: Int64 {
        handle.map { sqlite3_last_insert_rowid($0) } ?? 0
    }

    /// Whether a transaction is open (the connection is not in autocommit mode).
    public var isInTransaction: Bool {
        handle.map { sqlite3_get_autocommit($0) == 0 } ?? false
    }

    /// Runs `body` in BEGIN IMMEDIATE (or DEFERRED for reads) … COMMIT; ROLLBACK and rethrow on any
    /// error thrown by body or by COMMIT. Nested calls (inside an open transaction) use SAVEPOINTs:
    /// an error rolls back to the savepoint only, and the outer transaction continues.
    @discardableResult
    public func transaction<T>(_ kind: TransactionKind = .immediate, _ body: (any SQLConnection) throws -> T) throws -> T {
        let db = try openHandle(nil)
        if sqlite3_get_autocommit(db) == 0 {
            savepointDepth += 1
            defer { savepointDepth -= 1 }
            do {
                return try Savepoint.run(
                    depth: savepointDepth, execute: { _ = try run($0) }, isOpen: { sqlite3_get_autocommit(db) == 0 }
                ) { try body(self) }
            } catch {
                transactionMemo = [:]
                throw error
            }
        }
        // `.statement` reads run as `.deferred`: a local BEGIN costs no round trip.
        try run(kind == .deferred || kind == .statement ? "BEGIN DEFERRED" : "BEGIN IMMEDIATE")
        transactionMemo = [:]
        defer { transactionMemo = [:] }
        do {
            let result = try body(self)
            try run("COMMIT")
            return result
        } catch {
            if sqlite3_get_autocommit(db) == 0 { _ = try? run("ROLLBACK") }
            throw error
        }
    }

    /// The SQL text of every statement this connection keeps prepared: each distinct statement it ran
    /// through `run`/`query`/`queryOne`/`scalar` since the cache was last emptied (for query-plan checks).
    public var preparedStatementTexts: [String] { Array(statements.keys) }

    /// The plan SQLite chooses for `sql` (`EXPLAIN QUERY PLAN`, one `detail` line per step, e.g.
    /// "SEARCH change_log USING INDEX change_log_topic (topic=? AND seq>?)"). Parameters stay unbound.
    /// Not cached; every parameter is left NULL (the plan does not depend on values).
    public func queryPlan(_ sql: String) throws(SQLiteError) -> [String] {
        let db = try openHandle(sql)
        let explain = "EXPLAIN QUERY PLAN " + sql
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(db, explain, -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        guard status == SQLITE_OK, let statement else {
            throw SQLiteError(code: sqlite3_extended_errcode(db), message: String(cString: sqlite3_errmsg(db)), sql: explain)
        }
        var details: [String] = []
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_ROW:
                // Columns: id, parent, notused, detail.
                if let text = sqlite3_column_text(statement, 3) { details.append(String(cString: text)) }
            case SQLITE_DONE:
                return details
            default:
                throw SQLiteError(code: sqlite3_extended_errcode(db), message: String(cString: sqlite3_errmsg(db)), sql: explain)
            }
        }
    }

    /// Finalizes cached statements and closes the handle (`sqlite3_close_v2`). Idempotent.
    public func close() {
        guard let db = handle else { return }
        for statement in statements.values { sqlite3_finalize(statement) }
        statements.removeAll()
        columnNamesByStatement.removeAll()
        sqlite3_close_v2(db)
        handle = nil
    }

    // MARK: - Statements

    /// The handle, or a misuse error naming `sql` once closed.
    func openHandle(_ sql: String?) throws(SQLiteError) -> OpaquePointer {
        guard let handle else { throw .misuse("connection is closed", sql: sql) }
        return handle
    }

    /// The current error of this connection as a `SQLiteError`.
    private func lastError(_ db: OpaquePointer, sql: String?) -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(db), message: String(cString: sqlite3_errmsg(db)), sql: sql)
    }

    /// Runs `body` with the cached prepared statement for `sql`, bound to `bindings`; afterwards the
    /// statement is reset and its bindings cleared, whether `body` succeeded or threw.
    private func withStatement<R>(
        _ sql: String, _ bindings: [SQLValue], _ body: (OpaquePointer) throws(SQLiteError) -> R
    ) throws(SQLiteError) -> R {
        let db = try openHandle(sql)
        let statement = try preparedStatement(sql, db)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        try bind(bindings, to: statement, sql: sql, db)
        return try body(statement)
    }

    /// The cached statement for `sql`, preparing it (SQLITE_PREPARE_PERSISTENT) on first use.
    /// Exactly one statement is allowed: trailing SQL other than whitespace and `;` is refused.
    private func preparedStatement(_ sql: String, _ db: OpaquePointer) throws(SQLiteError) -> OpaquePointer {
        if let cached = statements[sql] { return cached }
        var statement: OpaquePointer?
        var trailingIsEmpty = true
        let status = sql.withCString { text in
            var tail: UnsafePointer<CChar>?
            let status = sqlite3_prepare_v3(db, text, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, &tail)
            if let tail {
                var cursor = tail
                while cursor.pointee != 0 {
                    let character = UInt8(bitPattern: cursor.pointee)
                    if !(character == UInt8(ascii: ";") || character == 0x20 || (0x09...0x0D).contains(character)) {
                        trailingIsEmpty = false
                        break
                    }
                    cursor += 1
                }
            }
            return status
        }
        guard status == SQLITE_OK else { throw lastError(db, sql: sql) }
        guard let statement else { throw .misuse("no SQL statement to run", sql: sql) }
        guard trailingIsEmpty else {
            sqlite3_finalize(statement)
            throw .misuse("more than one statement; use execute(_:) for scripts", sql: sql)
        }
        if statements.count >= Self.statementCacheLimit {
            for cached in statements.values { sqlite3_finalize(cached) }
            statements.removeAll()
            columnNamesByStatement.removeAll()
        }
        statements[sql] = statement
        return statement
    }

    /// Binds `values` to parameters 1…n; the count must match the statement's parameters.
    private func bind(
        _ values: [SQLValue], to statement: OpaquePointer, sql: String, _ db: OpaquePointer
    ) throws(SQLiteError) {
        let expected = Int(sqlite3_bind_parameter_count(statement))
        guard values.count == expected else {
            throw .misuse("statement has \(expected) parameters but \(values.count) values were bound", sql: sql)
        }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .null:
                status = sqlite3_bind_null(statement, index)
            case .integer(let integer):
                status = sqlite3_bind_int64(statement, index, integer)
            case .real(let double):
                status = sqlite3_bind_double(statement, index, double)
            case .text(let text):
                var text = text
                status = text.withUTF8 { utf8 in
                    // A nil base address would bind NULL instead of the empty string.
                    utf8.isEmpty
                        ? sqlite3_bind_text64(statement, index, "", 0, sqliteTransient, UInt8(SQLITE_UTF8))
                        : sqlite3_bind_text64(
                            statement, index, UnsafeRawPointer(utf8.baseAddress!).assumingMemoryBound(to: CChar.self),
                            UInt64(utf8.count), sqliteTransient, UInt8(SQLITE_UTF8))
                }
            case .blob(let bytes):
                status = bytes.withUnsafeBytes { raw in
                    // A zero-length blob needs zeroblob: a nil pointer would bind NULL.
                    raw.isEmpty
                        ? sqlite3_bind_zeroblob(statement, index, 0)
                        : sqlite3_bind_blob64(statement, index, raw.baseAddress, UInt64(raw.count), sqliteTransient)
                }
            }
            guard status == SQLITE_OK else { throw lastError(db, sql: sql) }
        }
    }

    /// Steps once: true for a row, false when done; throws the step's error.
    private func step(_ statement: OpaquePointer, _ sql: String) throws(SQLiteError) -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw lastError(sqlite3_db_handle(statement), sql: sql)
        }
    }

    /// The statement's result column names: made once per prepared statement and reused while they
    /// still match (a statement SQLite re-prepared after a schema change may name other columns).
    private func columnNames(_ statement: OpaquePointer) -> ColumnNames {
        let count = Int(sqlite3_column_count(statement))
        if let cached = columnNamesByStatement[statement], cached.names.count == count,
            cached.names.indices.allSatisfy({ index in
                Self.equal(cached.names[index], sqlite3_column_name(statement, Int32(index)))
            })
        {
            return cached
        }
        let names = ColumnNames((0..<Int32(count)).map { String(cString: sqlite3_column_name(statement, $0)) })
        columnNamesByStatement[statement] = names
        return names
    }

    /// Whether the NUL-terminated `cString` holds exactly the UTF-8 of `name`.
    private static func equal(_ name: String, _ cString: UnsafePointer<CChar>?) -> Bool {
        guard var cursor = cString else { return false }
        for byte in name.utf8 {
            guard UInt8(bitPattern: cursor.pointee) == byte else { return false }
            cursor += 1
        }
        return cursor.pointee == 0
    }

    /// The current row of `statement`.
    private func row(_ statement: OpaquePointer, _ columns: ColumnNames) -> Row {
        Row(columns: columns, values: (0..<Int32(columns.names.count)).map { value(statement, $0) })
    }

    /// Column `index` of the current row.
    private func value(_ statement: OpaquePointer, _ index: Int32) -> SQLValue {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(statement, index))
        case SQLITE3_TEXT:
            guard let text = sqlite3_column_text(statement, index) else { return .text("") }
            let count = Int(sqlite3_column_bytes(statement, index))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            guard let bytes = sqlite3_column_blob(statement, index) else { return .blob([]) }
            let count = Int(sqlite3_column_bytes(statement, index))
            return .blob(Array(UnsafeRawBufferPointer(start: bytes, count: count)))
        default:
            return .null
        }
    }
}

@available(*, unavailable, message: "a SQLiteConnection belongs to one queue; use SQLiteDatabase to share access")
extension SQLiteConnection: Sendable {}

/// SQLITE_TRANSIENT: SQLite copies bound text and blobs before the bind call returns.
private var sqliteTransient: sqlite3_destructor_type {
    unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)
}
