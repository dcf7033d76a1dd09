@preconcurrency import Dispatch
import Domain
import Foundation
public import Logging
import Synchronization

/// The access log: one line per request at level `info`, in the same layout as every other log
/// line, written straight into the sink. It skips swift-log's per-call metadata dictionary on
/// purpose: building, merging and sorting that dictionary halved `/healthz` throughput
/// (measured 56k → 29k req/s with wrk -t2 -c64, see Benchmarks/README.md#http).
public final class AccessLog: Sendable {
    let lines: InfoLineWriter
    /// Whether lines are written: the configured level is `info` or more verbose.
    public var isEnabled: Bool { lines.isEnabled }

    public init(sink: LogSink, format: LogFormat, level: Logger.Level, label: String = "chronir.access") {
        lines = InfoLineWriter(sink: sink, format: format, level: level, label: label)
    }

    /// Writes the line for one finished request. The path is logged without its query string.
    func record(
        method: String, path: Substring, route: String, status: Int, bytes: Int, durationMicroseconds: UInt64,
        requestID: String, clientIP: String
    ) {
        lines.write("request") { line in
            line.field("method", method)
            line.field("path", path)
            line.field("route", route)
            line.field("status", status)
            line.field("bytes", bytes)
            line.field("duration_us", durationMicroseconds)
            line.field("request_id", requestID)
            line.field("client_ip", clientIP)
        }
    }
}
