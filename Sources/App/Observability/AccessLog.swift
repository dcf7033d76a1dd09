@preconcurrency import Dispatch
import Domain
import Foundation
public import Logging
import Synchronization
import Transport

/// The access log: one line per request at level `info`, in the same layout as every other log
/// line, written straight into the sink. It skips swift-log's per-call metadata dictionary on
/// purpose: building, merging and sorting that dictionary halved `/healthz` throughput
/// (measured 56k → 29k req/s with wrk -t2 -c64, see Benchmarks/README.md#http).
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
