import Logging

/// The fast path of the access log and of the transport log's connection lines: lines at level
/// `info`, in the same layout as every other log line, written straight into the sink without
/// swift-log's per-call metadata dictionary (why: see `AccessLog`).
struct InfoLineWriter: Sendable {
    let sink: LogSink
    let format: LogFormat
    let label: String
    /// Whether lines are written: the configured level is `info` or more verbose.
    let isEnabled: Bool

    init(sink: LogSink, format: LogFormat, level: Logger.Level, label: String) {
        self.sink = sink
        self.format = format
        self.label = label
        isEnabled = level <= .info
    }

    /// Writes the line `message` with what `fields` adds to it; nothing when not enabled.
    func write(_ message: String, _ fields: (inout LogLine) -> Void) {
        guard isEnabled else { return }
        let time = logTimeMilliseconds()
        sink.append { buffer in
            var line = LogLine(format: format, timeMilliseconds: time, level: .info, logger: label, message: message, in: &buffer)
            fields(&line)
            line.finish(into: &buffer)
        }
    }
}
