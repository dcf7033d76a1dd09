@preconcurrency public import Dispatch
import Domain
import Foundation
public import Logging
import Synchronization

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

    /// Appends one line (a newline is added) and writes at once when `urgent` or the buffer is full.
    public func append(_ line: String, urgent: Bool = false) {
        let full = buffer.withLock { buffer -> Bool in
            let utf8 = line.utf8
            if utf8.count > Self.maxLineBytes {
                buffer.append(contentsOf: utf8.prefix(Self.maxLineBytes))
                buffer.append(contentsOf: "…[truncated]".utf8)
            } else {
                buffer.append(contentsOf: utf8)
            }
            buffer.append(10)
            return buffer.count >= Self.flushThreshold
        }
        if urgent || full { flush() }
    }

    /// Writes everything buffered so far.
    public func flush() {
        let bytes = buffer.withLock { buffer -> [UInt8] in
            defer { buffer.removeAll(keepingCapacity: true) }
            return buffer
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
        let time = Self.timestamp()
        let line: String
        switch format {
        case .text:
            var text = "\(time) \(event.level.rawValue.uppercased()) \(label): \(event.message)"
            for key in all.keys.sorted() { text += " \(key)=\(Self.textValue(all[key]!))" }
            line = text
        case .json:
            var json = #"{"ts":"# + JSONText.quote(time) + #","level":"# + JSONText.quote(event.level.rawValue)
            json += #","logger":"# + JSONText.quote(label) + #","msg":"# + JSONText.quote(event.message.description)
            for key in all.keys.sorted() { json += "," + JSONText.quote(key) + ":" + Self.jsonValue(all[key]!) }
            line = json + "}"
        }
        sink.append(line, urgent: event.level >= .warning)
    }

    static func timestamp() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Timestamp.format(Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
    }

    static func textValue(_ value: Logger.MetadataValue) -> String {
        let s = value.description
        return s.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) || s.isEmpty ? JSONText.quote(s) : s
    }

    static func jsonValue(_ value: Logger.MetadataValue) -> String {
        switch value {
        case .string(let s): return JSONText.quote(s)
        case .stringConvertible(let c):
            if c is Int || c is Int64 || c is UInt64 || c is Double { return c.description }
            return JSONText.quote(c.description)
        case .array(let a): return "[" + a.map(jsonValue).joined(separator: ",") + "]"
        case .dictionary(let d):
            return "{" + d.keys.sorted().map { JSONText.quote($0) + ":" + jsonValue(d[$0]!) }.joined(separator: ",") + "}"
        }
    }
}
