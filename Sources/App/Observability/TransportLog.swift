@preconcurrency import Dispatch
import Domain
import Foundation
public import Logging
import Synchronization
public import Transport

/// The transport's events as log lines. Connection events — `connection opened` (with the client
/// IP), `connection upgraded` (to WebSocket), `connection closed`, `connection timed out` (which
/// deadline) and `request rejected` (what the parser refused) — are one line each at `info`,
/// written like the access log's (fast path, same layout, logger `chronir.connection`), so with
/// `--log-format json` every request and connection event is one JSON object on its own line.
/// Trouble (socket errors, the connection limit, accept pauses) goes through `logger` at warning
/// or error; the rest (listening, shutdown progress) at debug.
public final class TransportLog: Sendable {
    let connectionLines: InfoLineWriter
    let logger: Logger
    /// Whether connection lines are written: the configured level is `info` or more verbose.
    public var connectionLinesEnabled: Bool { connectionLines.isEnabled }
    static let label = "chronir.connection"

    public init(sink: LogSink, format: LogFormat, level: Logger.Level, logger: Logger) {
        connectionLines = InfoLineWriter(sink: sink, format: format, level: level, label: Self.label)
        self.logger = logger
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
        case .tlsFailed(let id, let reason):
            // Debug: scanners, plain HTTP on the https port and broken clients are routine.
            logger.debug("TLS failed; closed", metadata: ["connection": "\(id)", "reason": "\(reason)"])
        case .acceptPaused(let error):
            logger.error("accept paused: out of file descriptors", metadata: ["error": "\(error)"])
        case .listening, .shutdownStarted, .shutdownCompleted:
            logger.debug("\(event)")
        }
    }

    private func connectionLine(_ message: String, _ id: UInt64, _ fields: (inout LogLine) -> Void) {
        connectionLines.write(message) { line in
            line.field("connection_id", id)
            fields(&line)
        }
    }
}
