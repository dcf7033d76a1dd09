@preconcurrency import Dispatch
import Domain
import Foundation
public import Logging
import Synchronization
import Transport

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
        case .string(let s): return JSONString.quote(s)
        case .stringConvertible(let c): return JSONString.quote(c.description)
        case .array(let a): return "[" + a.map(json).joined(separator: ",") + "]"
        case .dictionary(let d):
            return "{" + d.keys.sorted().map { JSONString.quote($0) + ":" + json(d[$0]!) }.joined(separator: ",") + "}"
        }
    }
}
