@preconcurrency public import Dispatch

/// A connection that `LISTEN`s on channels and reports what arrives. Its socket (`PQsocket`) is
/// watched by a `DispatchSource`, so notifications come through the same event machinery as the
/// rest of the server; the connection is touched only on `queue` (checked). Reconnecting with
/// back-off and catching up from the last change-log seq is the caller's job: after `.disconnected`
/// the listener is stopped for good.
///
/// With a `heartbeat`, the connection also sends `SELECT 1` every `heartbeat`, and a probe still
/// unanswered at the next one ends it with `.disconnected`: a listening connection otherwise never
/// sends, so a server that stopped answering while the TCP path still looks alive — a hung or
/// stopped server whose kernel acknowledges everything, a proxy in front of a vanished one, where
/// keepalives and `tcp_user_timeout` see nothing wrong — would leave it deaf for good. Found within
/// 2 × `heartbeat` of the last answer.
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
    /// How often a probe is sent (nil: never).
    private let heartbeat: Duration?
    /// The probe timer; owned by `queue`.
    private var beat: (any DispatchSourceTimer)?
    /// Whether a probe was sent and its answer not read yet; owned by `queue`.
    private var probeOutstanding = false

    /// Connects (blocking the caller) and `LISTEN`s on `channels`; call `start()` to receive.
    public init(
        url: String, channels: [String], heartbeat: Duration? = nil,
        queue: DispatchQueue = DispatchQueue(label: "chronir.postgres.listener"), handler: @escaping @Sendable (Event) -> Void
    ) throws(PostgresError) {
        let connection = try PostgresConnection(url: url)
        for channel in channels {
            try connection.execute("LISTEN \(try connection.quoteIdentifier(channel))")
        }
        self.connection = connection
        self.heartbeat = heartbeat
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
            if let heartbeat {
                let interval = DispatchTimeInterval.nanoseconds(Int(heartbeat / .nanoseconds(1)))
                let beat = DispatchSource.makeTimerSource(queue: queue)
                beat.schedule(deadline: .now() + interval, repeating: interval)
                beat.setEventHandler { [self] in probe() }
                self.beat = beat
                beat.resume()
            }
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
            if probeOutstanding, try connection.probeAnswered() { probeOutstanding = false }
        } catch {
            disconnected(error.message)
        }
    }

    /// Sends the next probe, or ends the connection when the last one was never answered.
    private func probe() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let connection, let heartbeat else { return }
        guard !probeOutstanding else {
            return disconnected("no answer from the server to a heartbeat within \(heartbeat) (a hung or unreachable server)")
        }
        do {
            try connection.sendProbe()
            probeOutstanding = true
        } catch {
            disconnected(error.message)
        }
    }

    private func disconnected(_ message: String) {
        shutDown()
        handler(.disconnected(message: message))
    }

    private func shutDown() {
        dispatchPrecondition(condition: .onQueue(queue))
        beat?.cancel()
        beat = nil
        source?.cancel()
        source = nil
        connection?.close()
        connection = nil
    }
}
