import CLibPQ

/// The rows and row count of one statement.
public struct PostgresRows: Sendable {
    /// Column names, in order.
    public let columns: [String]
    /// Values, one array per row, in column order.
    public let rows: [[PostgresValue]]
    /// Rows the statement inserted, updated or deleted (`PQcmdTuples`; 0 when not applicable).
    public let affected: Int
}

/// A notification received on a channel this connection `LISTEN`s to.
public struct PostgresNotification: Sendable, Equatable {
    /// The channel named in `NOTIFY`.
    public let channel: String
    /// The payload (empty when none was sent).
    public let payload: String
    /// The backend process that sent it.
    public let senderPID: Int32
}

/// One blocking libpq connection (`PQconnectdb`). Not thread-safe: like `SQLite.Connection`, it is
/// owned by one serial queue (the storage queues), never used from an event loop. Statements use the
/// extended protocol (`PQexecParams`) with parameters in text format (bytes in binary format), so
/// values never go through SQL string escaping.
public final class PostgresConnection {
    /// The libpq handle; nil after `close()`.
    private var handle: OpaquePointer?

    /// Connects with a libpq connection string or URI (`postgres://user@host:port/db?sslmode=…`).
    /// Blocks until connected or failed.
    public init(url: String) throws(PostgresError) {
        guard let connection = PQconnectdb(url) else {
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

    /// Runs one or more statements with no parameters (the simple query protocol); results discarded.
    public func execute(_ sql: String) throws(PostgresError) {
        let connection = try open()
        let result = PQexec(connection, sql)
        defer { PQclear(result) }
        try check(result, connection, sql: sql)
    }

    /// Runs one statement with `$1…$n` parameters and returns its rows.
    @discardableResult
    public func query(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresRows {
        let connection = try open()
        var encoded: [[UInt8]?] = []
        var formats: [Int32] = []
        encoded.reserveCapacity(parameters.count)
        for parameter in parameters {
            let (bytes, format) = try Self.encode(parameter, sql: sql)
            encoded.append(bytes)
            formats.append(format)
        }
        let result = Self.withParameterPointers(encoded) { values, lengths in
            PQexecParams(connection, sql, Int32(parameters.count), nil, values, lengths, formats, 0)
        }
        defer { PQclear(result) }
        try check(result, connection, sql: sql)
        return Self.rows(of: result)
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

    // MARK: - Internals

    private func open() throws(PostgresError) -> OpaquePointer {
        guard let handle else { throw PostgresError(.misuse, message: "connection is closed") }
        return handle
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
            let message = String(cString: PQresultErrorMessage(result))
                .trimmingTrailingNewlines()
            let kind: PostgresError.Kind = PQstatus(connection) == CONNECTION_OK ? .statement : .connection
            throw PostgresError(kind, sqlState: sqlState, message: message, sql: sql)
        }
    }

    /// Text format (0) for everything but bytes, which go in binary format (1): no escaping needed.
    private static func encode(_ value: PostgresValue, sql: String) throws(PostgresError) -> ([UInt8]?, Int32) {
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
        case .bytes(let bytes): return (bytes, 1)
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

    /// Materialises every row of a successful result.
    private static func rows(of result: OpaquePointer?) -> PostgresRows {
        guard let result else { return PostgresRows(columns: [], rows: [], affected: 0) }
        let columnCount = PQnfields(result)
        let rowCount = PQntuples(result)
        var columns: [String] = []
        var oids: [UInt32] = []
        for column in 0..<columnCount {
            columns.append(String(cString: PQfname(result, column)))
            oids.append(PQftype(result, column))
        }
        var rows: [[PostgresValue]] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var values: [PostgresValue] = []
            values.reserveCapacity(Int(columnCount))
            for column in 0..<columnCount {
                if PQgetisnull(result, row, column) == 1 {
                    values.append(.null)
                    continue
                }
                let length = Int(PQgetlength(result, row, column))
                let pointer = PQgetvalue(result, row, column)!
                let value = pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
                    PostgresValue.decode(text: UnsafeBufferPointer(start: $0, count: length), oid: oids[Int(column)])
                }
                values.append(value)
            }
            rows.append(values)
        }
        let affected = Int(String(cString: PQcmdTuples(result))) ?? 0
        return PostgresRows(columns: columns, rows: rows, affected: affected)
    }

    private static func message(_ connection: OpaquePointer) -> String {
        String(cString: PQerrorMessage(connection)).trimmingTrailingNewlines()
    }
}

extension String {
    /// libpq messages end in a newline.
    fileprivate func trimmingTrailingNewlines() -> String {
        var text = Substring(self)
        while text.last == "\n" { text = text.dropLast() }
        return String(text)
    }
}
