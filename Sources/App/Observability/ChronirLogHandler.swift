@preconcurrency import Dispatch
import Domain
import Foundation
public import Logging
import Synchronization

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
        // Values are rendered before the sink's lock is taken: a `description` runs no code under it.
        enum Value {
            case text(String), signed(Int64), unsigned(UInt64), json(String)
        }
        let fields = all.keys.sorted().map { key -> (String, Value) in
            switch all[key]! {
            case .string(let s): (key, .text(s))
            case .stringConvertible(let c as Int): (key, .signed(Int64(c)))
            case .stringConvertible(let c as Int64): (key, .signed(c))
            case .stringConvertible(let c as UInt64): (key, .unsigned(c))
            case .stringConvertible(let c): (key, .text(c.description))
            case let value: (key, .json(Self.json(value)))
            }
        }
        let time = logTimeMilliseconds()
        let message = event.message.description
        sink.append(urgent: event.level >= .warning) { buffer in
            var line = LogLine(
                format: format, timeMilliseconds: time, level: event.level, logger: label, message: message, in: &buffer)
            for (key, value) in fields {
                switch value {
                case .text(let s): line.field(named: key, s)
                case .signed(let n): line.field(named: key, n)
                case .unsigned(let n): line.field(named: key, n)
                case .json(let s): line.field(named: key, json: s)
                }
            }
            line.finish(into: &buffer)
        }
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
