@preconcurrency public import Dispatch
import Domain
import Foundation
public import Logging
import Synchronization
public import Transport

/// Log line format: `text` for people, `json` (one object per line) for collectors.
public enum LogFormat: String, Sendable, CaseIterable {
    case text, json
}

/// A buffered, thread-safe line sink on a file descriptor (stderr by default). Lines are appended to
/// an in-memory buffer and written in batches — every `flushInterval`, when the buffer passes
/// `flushThreshold`, for every line at `warning` or above, and on `flush()` — so per-request logging
/// costs no syscall on the event loop.
public final class LogSink: Sendable {
    /// Buffer size that triggers an immediate write.
    public static let flushThreshold = 64 * 1024
    /// Longest time a line waits in the buffer.
    public static let flushInterval: DispatchTimeInterval = .milliseconds(200)
    /// A line longer than this is cut (a log line must never be a memory problem).
    public static let maxLineBytes = 16 * 1024

    private let fd: Int32
    private let buffer = Mutex<[UInt8]>([])
    private let timer: any DispatchSourceTimer

    /// Writes to `fd` (not closed by the sink).
    public init(fd: Int32 = 2) {
        self.fd = fd
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "chronir.log.flush"))
        self.timer = timer
        timer.schedule(deadline: .now() + Self.flushInterval, repeating: Self.flushInterval)
        timer.setEventHandler { [weak self] in self?.flush() }
        timer.resume()
    }

    deinit { timer.cancel() }

    /// Appends one finished line (without its newline; one is added) and writes at once when
    /// `urgent` or the buffer is full.
    public func append(line: [UInt8], urgent: Bool = false) {
        let full = buffer.withLock { buffer -> Bool in
            if line.count > Self.maxLineBytes {
                buffer.append(contentsOf: line[..<Self.maxLineBytes])
                buffer.append(contentsOf: "…[truncated]".utf8)
            } else {
                buffer.append(contentsOf: line)
            }
            buffer.append(10)
            return buffer.count >= Self.flushThreshold
        }
        if urgent || full { flush() }
    }

    /// Writes everything buffered so far.
    public func flush() {
        let bytes = buffer.withLock { buffer -> [UInt8] in
            let taken = buffer
            buffer = []
            buffer.reserveCapacity(taken.count)
            return taken
        }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return  // nowhere left to report a failing log descriptor
            }
            offset += n
        }
    }
}

/// Builds one log line as bytes, the same layout for every logger:
/// text `2026-02-06T09:00:00.000Z INFO chronir.access: request key=value key="two words"`;
/// json `{"ts":"…","level":"info","logger":"…","msg":"…","key":"value","n":3}`.
struct LogLine {
    private(set) var bytes: [UInt8] = []
    let format: LogFormat

    init(format: LogFormat, timeMilliseconds: Int64, level: Logger.Level, logger: String, message: String) {
        self.format = format
        bytes.reserveCapacity(256)
        switch format {
        case .text:
            appendTimestamp(timeMilliseconds)
            bytes.append(32)
            let name = Self.upperCaseName(level)
            bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            bytes.append(32)
            var logger = logger
            logger.withUTF8 { bytes.append(contentsOf: $0) }
            bytes.append(58)
            bytes.append(32)
            var message = message
            message.withUTF8 { bytes.append(contentsOf: $0) }
        case .json:
            bytes.append(contentsOf: #"{"ts":""#.utf8)
            appendTimestamp(timeMilliseconds)
            bytes.append(contentsOf: #"","level":""#.utf8)
            bytes.append(contentsOf: level.rawValue.utf8)
            bytes.append(contentsOf: #"","logger":"#.utf8)
            var logger = logger
            logger.withUTF8 { appendQuoted($0) }
            bytes.append(contentsOf: #","msg":"#.utf8)
            var message = message
            message.withUTF8 { appendQuoted($0) }
        }
    }

    static func upperCaseName(_ level: Logger.Level) -> StaticString {
        switch level {
        case .trace: "TRACE"
        case .debug: "DEBUG"
        case .info: "INFO"
        case .notice: "NOTICE"
        case .warning: "WARNING"
        case .error: "ERROR"
        case .critical: "CRITICAL"
        }
    }

    /// Adds a string field (quoted in text only when it holds spaces, quotes, `=` or controls).
    mutating func field(_ key: String, _ value: String) {
        var value = value
        value.withUTF8 { field(key, utf8: $0) }
    }

    /// Adds a string field from a substring (e.g. the request path).
    mutating func field(_ key: String, _ value: Substring) {
        var value = value
        value.withUTF8 { field(key, utf8: $0) }
    }

    private mutating func field(_ key: String, utf8 value: UnsafeBufferPointer<UInt8>) {
        beginField(key)
        if format == .text, !value.isEmpty, !value.contains(where: { $0 <= 32 || $0 == 34 || $0 == 61 || $0 == 127 }) {
            bytes.append(contentsOf: value)
        } else {
            appendQuoted(value)
        }
    }

    /// Adds a numeric field (a JSON number).
    mutating func field(_ key: String, _ value: some BinaryInteger) {
        beginField(key)
        appendDecimal(UInt64(clamping: value), negative: value < 0)
    }

    /// Adds a field whose value is already JSON (arrays, objects); in text it is written as is.
    mutating func field(_ key: String, json: String) {
        beginField(key)
        bytes.append(contentsOf: json.utf8)
    }

    /// The finished line.
    mutating func finish() -> [UInt8] {
        if format == .json { bytes.append(125) }
        return bytes
    }

    private mutating func beginField(_ key: String) {
        var key = key
        key.withUTF8 { key in
            switch format {
            case .text:
                bytes.append(32)
                bytes.append(contentsOf: key)
                bytes.append(61)
            case .json:
                bytes.append(44)
                appendQuoted(key)
                bytes.append(58)
            }
        }
    }

    /// JSON string literal (RFC 8259 §7).
    private mutating func appendQuoted(_ utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(34)
        for b in utf8 {
            switch b {
            case 34: bytes.append(contentsOf: [92, 34])
            case 92: bytes.append(contentsOf: [92, 92])
            case 10: bytes.append(contentsOf: [92, 110])
            case 13: bytes.append(contentsOf: [92, 114])
            case 9: bytes.append(contentsOf: [92, 116])
            case 0..<32, 127:
                func hex(_ n: UInt8) -> UInt8 { n < 10 ? 48 + n : 87 + n }
                bytes.append(contentsOf: [92, 117, 48, 48, hex(b >> 4), hex(b & 15)])
            default: bytes.append(b)
            }
        }
        bytes.append(34)
    }

    private mutating func appendDecimal(_ value: UInt64, negative: Bool) {
        if negative { bytes.append(45) }
        var divisor: UInt64 = 1
        while value / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            bytes.append(48 + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }

    private mutating func appendPadded(_ value: Int64, width: Int) {
        var divisor: Int64 = 1
        for _ in 1..<width { divisor *= 10 }
        var v = value
        while divisor > 0 {
            bytes.append(48 + UInt8((v / divisor) % 10))
            v %= divisor
            divisor /= 10
        }
    }

    /// RFC 3339 UTC with milliseconds, written digit by digit (no intermediate strings).
    private mutating func appendTimestamp(_ ms: Int64) {
        let (y, mo, d, h, mi, s, milli) = Timestamp.components(ms)
        appendPadded(y, width: 4)
        bytes.append(45)
        appendPadded(mo, width: 2)
        bytes.append(45)
        appendPadded(d, width: 2)
        bytes.append(84)
        appendPadded(h, width: 2)
        bytes.append(58)
        appendPadded(mi, width: 2)
        bytes.append(58)
        appendPadded(s, width: 2)
        bytes.append(46)
        appendPadded(milli, width: 3)
        bytes.append(90)
    }
}

/// Wall-clock milliseconds for log lines.
func logTimeMilliseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

/// swift-log handler that formats lines as text or JSON into a `LogSink`. Metadata values are
/// written as given; callers never pass secrets (tokens, passwords) as metadata.
public struct ChronirLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public var logLevel: Logger.Level
    let label: String
    let format: LogFormat
    let sink: LogSink

    /// A handler for `label` writing to `sink`.
    public init(label: String, level: Logger.Level, format: LogFormat, sink: LogSink) {
        self.label = label
        self.logLevel = level
        self.format = format
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let extra = event.metadata { all.merge(extra) { _, new in new } }
        var line = LogLine(
            format: format, timeMilliseconds: logTimeMilliseconds(), level: event.level, logger: label,
            message: event.message.description)
        for key in all.keys.sorted() {
            switch all[key]! {
            case .string(let s): line.field(key, s)
            case .stringConvertible(let c as Int): line.field(key, c)
            case .stringConvertible(let c as Int64): line.field(key, c)
            case .stringConvertible(let c as UInt64): line.field(key, c)
            case .stringConvertible(let c): line.field(key, c.description)
            case let value: line.field(key, json: Self.json(value))
            }
        }
        sink.append(line: line.finish(), urgent: event.level >= .warning)
    }

    /// Nested metadata (arrays, dictionaries) as JSON text.
    static func json(_ value: Logger.MetadataValue) -> String {
        switch value {
        case .string(let s): return JSONText.quote(s)
        case .stringConvertible(let c): return JSONText.quote(c.description)
        case .array(let a): return "[" + a.map(json).joined(separator: ",") + "]"
        case .dictionary(let d):
            return "{" + d.keys.sorted().map { JSONText.quote($0) + ":" + json(d[$0]!) }.joined(separator: ",") + "}"
        }
    }
}

/// The access log: one line per request at level `info`, in the same layout as every other log
/// line, written straight into the sink. It skips swift-log's per-call metadata dictionary on
/// purpose: building, merging and sorting that dictionary halved `/healthz` throughput
/// (measured 56k → 29k req/s with wrk -t2 -c64, see README "Performance").
public final class AccessLog: Sendable {
    let sink: LogSink
    let format: LogFormat
    let label: String
    /// Whether lines are written: the configured level is `info` or more verbose.
    public let isEnabled: Bool

    public init(sink: LogSink, format: LogFormat, level: Logger.Level, label: String = "chronir.access") {
        self.sink = sink
        self.format = format
        self.label = label
        isEnabled = level <= .info
    }

    /// Writes the line for one finished request. The path is logged without its query string.
    func record(
        method: String, path: Substring, route: String, status: Int, bytes: Int, durationMicroseconds: UInt64,
        requestID: String, clientIP: String
    ) {
        guard isEnabled else { return }
        var line = LogLine(
            format: format, timeMilliseconds: logTimeMilliseconds(), level: .info, logger: label, message: "request")
        line.field("method", method)
        line.field("path", path)
        line.field("route", route)
        line.field("status", status)
        line.field("bytes", bytes)
        line.field("duration_us", durationMicroseconds)
        line.field("request_id", requestID)
        line.field("client_ip", clientIP)
        sink.append(line: line.finish())
    }
}

/// The transport's events as log lines. Connection events — `connection opened` (with the client
/// IP), `connection upgraded` (to WebSocket), `connection closed`, `connection timed out` (which
/// deadline) and `request rejected` (what the parser refused) — are one line each at `info`,
/// written like the access log's (fast path, same layout, logger `chronir.connection`), so with
/// `--log-format json` every request and connection event is one JSON object on its own line.
/// Trouble (socket errors, the connection limit, accept pauses) goes through `logger` at warning
/// or error; the rest (listening, shutdown progress) at debug.
public final class TransportLog: Sendable {
    let sink: LogSink
    let format: LogFormat
    let logger: Logger
    /// Whether connection lines are written: the configured level is `info` or more verbose.
    public let connectionLinesEnabled: Bool
    static let label = "chronir.connection"

    public init(sink: LogSink, format: LogFormat, level: Logger.Level, logger: Logger) {
        self.sink = sink
        self.format = format
        self.logger = logger
        connectionLinesEnabled = level <= .info
    }

    public func record(_ event: TransportEvent) {
        switch event {
        case .accepted(let id, let remoteAddress):
            connectionLine("connection opened", id) { $0.field("client_ip", remoteAddress) }
        case .upgraded(let id):
            connectionLine("connection upgraded", id) { $0.field("protocol", "websocket") }
        case .closed(let id):
            connectionLine("connection closed", id) { _ in }
        case .timedOut(let id, let kind):
            connectionLine("connection timed out", id) { $0.field("deadline", kind.rawValue) }
        case .badRequest(let id, let status, let reason):
            connectionLine("request rejected", id) { line in
                line.field("status", status)
                line.field("reason", reason)
            }
        case .error(let id, let error):
            logger.warning(
                "socket error", metadata: ["connection": "\(id.map(String.init) ?? "listener")", "error": "\(error)"])
        case .connectionLimitReached(let limit):
            logger.warning("connection limit reached; refusing with 503", metadata: ["limit": "\(limit)"])
        case .addressConnectionLimitReached(let limit, let network):
            // Notice, not warning: one client over its share is that client's doing, not the server's.
            logger.notice(
                "per-address connection limit reached; refusing with 429",
                metadata: ["limit": "\(limit)", "client_network": "\(network)"])
        case .acceptPaused(let error):
            logger.error("accept paused: out of file descriptors", metadata: ["error": "\(error)"])
        case .listening, .shutdownStarted, .shutdownCompleted:
            logger.debug("\(event)")
        }
    }

    private func connectionLine(_ message: String, _ id: UInt64, _ fields: (inout LogLine) -> Void) {
        guard connectionLinesEnabled else { return }
        var line = LogLine(
            format: format, timeMilliseconds: logTimeMilliseconds(), level: .info, logger: Self.label, message: message)
        line.field("connection_id", id)
        fields(&line)
        sink.append(line: line.finish())
    }
}
