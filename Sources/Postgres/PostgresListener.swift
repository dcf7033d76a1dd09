@preconcurrency public import Dispatch

/// A connection that `LISTEN`s on channels and reports what arrives. Its socket (`PQsocket`) is
/// watched by a `DispatchSource`, so notifications come through the same event machinery as the
/// rest of the server; the connection is touched only on `queue` (checked). Reconnecting with
/// back-off and catching up from the last change-log seq is the caller's job: after `.disconnected`
/// the listener is stopped for good.
public final class PostgresListener: @unchecked Sendable {
    /// What the handler is told.
    public enum Event: Sendable, Equatable {
        /// A `NOTIFY` on one of the channels.
        case notification(PostgresNotification)
        /// The connection broke; no more events follow.
        case disconnected(message: String)
    }

    /// The serial queue that owns the connection and runs the handler.
    public let queue: DispatchQueue
    private let handler: @Sendable (Event) -> Void
    /// Owned by `queue`.
    private var connection: PostgresConnection?
    /// Owned by `queue`.
    private var source: (any DispatchSourceRead)?

    /// Connects (blocking the caller) and `LISTEN`s on `channels`; call `start()` to receive.
    public init(
        url: String, channels: [String], queue: DispatchQueue = DispatchQueue(label: "chronir.postgres.listener"),
        handler: @escaping @Sendable (Event) -> Void
    ) throws(PostgresError) {
        let connection = try PostgresConnection(url: url)
        for channel in channels {
            try connection.execute("LISTEN \(try connection.quoteIdentifier(channel))")
        }
        self.connection = connection
        self.queue = queue
        self.handler = handler
    }

    /// Starts watching the socket; notifications go to the handler on `queue`.
    public func start() {
        queue.async { [self] in
            guard let connection, source == nil else { return }
            let source = DispatchSource.makeReadSource(fileDescriptor: connection.socket, queue: queue)
            source.setEventHandler { [self] in readable() }
            self.source = source
            source.resume()
            readable()  // anything that arrived between LISTEN and now
        }
    }

    /// Stops watching and closes the connection (idempotent); no event follows once it returns
    /// on `queue`.
    public func stop() {
        queue.async { [self] in shutDown() }
    }

    private func readable() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let connection else { return }
        do {
            for notification in try connection.notifications() { handler(.notification(notification)) }
        } catch {
            shutDown()
            handler(.disconnected(message: error.message))
        }
    }

    private func shutDown() {
        dispatchPrecondition(condition: .onQueue(queue))
        source?.cancel()
        source = nil
        connection?.close()
        connection = nil
    }
}
