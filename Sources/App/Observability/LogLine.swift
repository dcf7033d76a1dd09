@preconcurrency import Dispatch
import Domain
import Foundation
import Logging
import Synchronization
import Transport
import Wire

/// Builds one log line as bytes, the same layout for every logger:
/// text `2026-02-06T09:00:00.000Z INFO chronir.access: request key=value key="two words"`;
/// json `{"ts":"…","level":"info","logger":"…","msg":"…","key":"value","n":3}`.
///
/// Written under the sink's lock (`LogSink.append`) into the sink's one line scratch — plain stores
/// into memory allocated once, no array per line and no uniqueness check per byte — then copied to
/// the end of the sink's buffer with its newline by `finish(into:)`. A line longer than
/// `LogSink.maxLineBytes` keeps its first `maxLineBytes` bytes and ends in `…[truncated]`.
struct LogLine {
    let format: LogFormat
    private let scratch: LineScratch
    /// `scratch.base` and `.capacity`, read once: every byte stored goes through them, and a read
    /// through the class reference costs a retain and a release.
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private var count = 0
    private var overflowed = false

    init(format: LogFormat, timeMilliseconds: Int64, level: Logger.Level, logger: String, message: String, in buffer: inout LogBuffer) {
        self.format = format
        scratch = buffer.scratch
        base = scratch.base
        capacity = scratch.capacity
        let time = buffer.timestamps.text(timeMilliseconds)  // RFC 3339, no intermediate strings
        switch format {
        case .text:
            put(time)
            put(32)
            put(Self.upperCaseName(level))
            put(32)
            logger.utf8.withContiguousBytes { put($0) }
            put(58)
            put(32)
            message.utf8.withContiguousBytes { put($0) }
        case .json:
            put(#"{"ts":""#)
            put(time)
            put(#"","level":""#)
            put(Self.lowerCaseName(level))
            put(#"","logger":"#)
            logger.utf8.withContiguousBytes { putQuoted($0) }
            put(#","msg":"#)
            message.utf8.withContiguousBytes { putQuoted($0) }
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

    /// `Logger.Level.rawValue` without a `String`.
    static func lowerCaseName(_ level: Logger.Level) -> StaticString {
        switch level {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        case .critical: "critical"
        }
    }

    /// Adds a string field (quoted in text only when it holds spaces, quotes, `=` or controls).
    /// Keys are `StaticString`s (no retain, no copy per field); `field(named:…)` takes a key made at run time.
    mutating func field(_ key: StaticString, _ value: String) {
        beginField(key)
        value.utf8.withContiguousBytes { putValue($0) }
    }

    /// Adds a string field from a substring (e.g. the request path).
    mutating func field(_ key: StaticString, _ value: Substring) {
        beginField(key)
        value.utf8.withContiguousBytes { putValue($0) }
    }

    /// Adds a numeric field (a JSON number).
    mutating func field(_ key: StaticString, _ value: some BinaryInteger) {
        beginField(key)
        putDecimal(UInt64(clamping: value.magnitude), negative: value < 0)
    }

    /// `field(_:_:)` with a key made at run time (metadata keys).
    mutating func field(named key: String, _ value: String) {
        beginField(named: key)
        value.utf8.withContiguousBytes { putValue($0) }
    }

    /// `field(_:_:)` with a key made at run time (metadata keys).
    mutating func field(named key: String, _ value: some BinaryInteger) {
        beginField(named: key)
        putDecimal(UInt64(clamping: value.magnitude), negative: value < 0)
    }

    /// Adds a field whose value is already JSON (arrays, objects); in text it is written as is.
    mutating func field(named key: String, json: String) {
        beginField(named: key)
        json.utf8.withContiguousBytes { put($0) }
    }

    private mutating func putValue(_ value: UnsafeBufferPointer<UInt8>) {
        if format == .text, !value.isEmpty, !value.contains(where: { $0 <= 32 || $0 == 34 || $0 == 61 || $0 == 127 }) {
            put(value)
        } else {
            putQuoted(value)
        }
    }

    /// Ends the line and appends it, cut if it overflowed, and its newline to `buffer.bytes`.
    mutating func finish(into buffer: inout LogBuffer) {
        if format == .json { put(125) }
        buffer.bytes.append(contentsOf: UnsafeBufferPointer(start: base, count: count))
        if overflowed { buffer.bytes.append(contentsOf: "…[truncated]".utf8) }
        buffer.bytes.append(10)
        count = 0
    }

    private mutating func beginField(_ key: StaticString) {
        beginField(utf8: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
    }

    private mutating func beginField(named key: String) {
        key.utf8.withContiguousBytes { beginField(utf8: $0) }
    }

    private mutating func beginField(utf8 key: UnsafeBufferPointer<UInt8>) {
        switch format {
        case .text:
            put(32)
            put(key)
            put(61)
        case .json:
            put(44)
            putQuoted(key)
            put(58)
        }
    }

    private mutating func put(_ byte: UInt8) {
        guard count < capacity else {
            overflowed = true
            return
        }
        base[count] = byte
        count += 1
    }

    private mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        let fitting = min(bytes.count, capacity - count)
        (base + count).update(from: source, count: fitting)
        count += fitting
        if fitting < bytes.count { overflowed = true }
    }

    private mutating func put(_ text: StaticString) {
        put(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private mutating func put(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { put($0) }
    }

    /// JSON string literal (`JSONString`), escaped into the scratch's reused array first.
    private mutating func putQuoted(_ utf8: UnsafeBufferPointer<UInt8>) {
        scratch.quoted.removeAll(keepingCapacity: true)
        JSONString.append(utf8, to: &scratch.quoted)
        put(scratch.quoted)
    }

    private mutating func putDecimal(_ value: UInt64, negative: Bool) {
        if negative { put(45) }
        var divisor: UInt64 = 1
        while value / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            put(48 + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }
}

/// The memory one line is formatted in (`LogLine`), allocated once per sink and used under its lock.
final class LineScratch {
    /// Longest line kept (`LogSink.maxLineBytes`).
    let capacity: Int
    let base: UnsafeMutablePointer<UInt8>
    /// Where `LogLine` escapes a JSON string before copying it in.
    var quoted: [UInt8] = []

    init(capacity: Int) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
    }

    deinit { base.deallocate() }
}

/// Wall-clock milliseconds for log lines.
func logTimeMilliseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}
