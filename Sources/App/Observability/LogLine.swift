@preconcurrency import Dispatch
import Domain
import Foundation
import Logging
import Synchronization
import Transport

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
            Timestamp.append(timeMilliseconds, to: &bytes)  // RFC 3339, no intermediate strings
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
            Timestamp.append(timeMilliseconds, to: &bytes)  // RFC 3339, no intermediate strings
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

    /// JSON string literal (`JSONString`).
    private mutating func appendQuoted(_ utf8: UnsafeBufferPointer<UInt8>) { JSONString.append(utf8, to: &bytes) }

    private mutating func appendDecimal(_ value: UInt64, negative: Bool) {
        if negative { bytes.append(45) }
        var divisor: UInt64 = 1
        while value / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            bytes.append(48 + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }
}

/// Wall-clock milliseconds for log lines.
func logTimeMilliseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}
