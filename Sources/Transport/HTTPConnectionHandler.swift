import Glibc
import Wire

/// HTTP/1.1 settings each connection handler needs, derived once from `ServerConfiguration`.
struct HTTPSettings: Sendable {
    var limits: HTTPLimits
    var headerTimeout: UInt64
    var bodyTimeout: UInt64
    var idleTimeout: UInt64
    /// While a request is with the responder, input beyond this many buffered bytes pauses
    /// reading (pipelined requests wait in the kernel, not in our memory).
    var readAheadLimit: Int
    /// The `Strict-Transport-Security` value added to responses (TLS servers only), or nil.
    var strictTransportSecurity: String?
    /// `ServerConfiguration.uploadDirectory`.
    var uploadDirectory: String?

    init(_ configuration: ServerConfiguration) {
        limits = configuration.limits
        headerTimeout = UInt64(configuration.requestHeaderTimeout.clampedNanoseconds)
        bodyTimeout = UInt64(configuration.requestBodyTimeout.clampedNanoseconds)
        idleTimeout = UInt64(configuration.idleTimeout.clampedNanoseconds)
        readAheadLimit = configuration.limits.maxRequestLineBytes + configuration.limits.maxHeaderBlockBytes
        uploadDirectory = configuration.uploadDirectory
        if configuration.tls != nil, let maxAge = configuration.strictTransportSecurityMaxAge {
            strictTransportSecurity = "max-age=\(maxAge)"
        }
    }
}

/// Serves HTTP/1.1 on one connection: the I/O shell of a `Wire.HTTP1ConnectionStateMachine`, which
/// decides everything (keep-alive, pipelining, `100-continue`, read-ahead, streamed uploads, upgrade,
/// shutdown, which deadline runs). This class feeds it the connection's bytes and events, performs
/// the actions it returns (switching over them without `default:`), hands requests to the
/// `HTTPResponder`, writes the responses, and keeps what is I/O: the streamed body's file, the
/// deadline's clock reading, the response head's `Date`.
///
/// Pipelining: one request at a time (see the machine). A responder that answers inline has all the
/// answers to one read's worth of pipelined requests leave in one `send`: its answer only queues the
/// machine's next actions, which the drain in progress performs.
///
/// A streamed body (an upload, `HTTPRequestHead.streamsBody`) is first admitted or refused from its
/// head by the responder (`admitBody`: reading pauses meanwhile), then goes chunk by chunk to a
/// `BodyFileWriter` (or, without `uploadDirectory`, into memory) and reaches the responder as
/// `HTTPRequest.bodyFile`; a refusal or a close before then removes the file. A response with a
/// `bodyFile` is sent from the file by the connection (`Connection.write(file:)`); the next pipelined
/// request waits until it is all sent.
///
/// Deadlines: one per connection, swept by the loop; setting one is a store, not a timer. The
/// machine names the timeout (`.setDeadline(.header/.body/.idle/.none)`); this shell adds it to the
/// clock reading taken at the start of the current turn.
final class HTTPConnectionHandler: ConnectionHandler, @unchecked Sendable {
    // @unchecked: all state is confined to the connection's loop; `ResponseSink` holds this
    // object only to hop back to that loop before calling `deliver`.

    private let responder: any HTTPResponder
    private let settings: HTTPSettings
    private var machine: HTTP1ConnectionStateMachine
    private var connection: Connection?
    private var context = RequestContext(remoteAddress: "", connectionID: 0)
    /// True while `process` drains the machine: an input arriving meanwhile (an inline answer) only
    /// queues its actions, which that drain performs.
    private var isProcessing = false
    /// The streamed body being received: in a file, or in memory without `uploadDirectory`.
    private var bodyFile: BodyFileWriter?
    private var streamedBody: [UInt8]?
    /// The handler `ResponseSink.upgrade` asked for, installed by the machine's `.upgrade`.
    private var pendingUpgrade: (@Sendable () -> any ConnectionHandler)?
    /// The connection's clock (`Connection.now`) read at the start of the current turn, for deadlines.
    private var now: UInt64 = 0
    /// `ResponseSink.onCancel`'s handler for the request with the responder: run if the connection
    /// closes before its response is written.
    private var cancellation: (request: UInt64, handler: @Sendable () -> Void)?
    /// The number of the last request whose response was written.
    private var answered: UInt64 = 0
    /// `connectionClosed` was called.
    private var closed = false

    init(responder: any HTTPResponder, settings: HTTPSettings) {
        self.responder = responder
        self.settings = settings
        self.machine = HTTP1ConnectionStateMachine(limits: settings.limits, readAheadLimit: settings.readAheadLimit)
    }

    // MARK: ConnectionHandler

    func handlerAdded(to connection: Connection) {
        self.connection = connection
        context = RequestContext(remoteAddress: connection.remoteAddress, connectionID: connection.id)
        now = connection.now
        // A fresh connection must deliver its first head within the header timeout.
        connection.setDeadline(monotonicNanoseconds: now &+ settings.headerTimeout)
    }

    func received(_ bytes: UnsafeRawBufferPointer, on connection: Connection) {
        machine.receive(bytes)
        now = connection.now
        process(connection)
    }

    func inputEnded(on connection: Connection) {
        machine.receiveEndOfStream()
        process(connection)
    }

    func writabilityChanged(on connection: Connection) {
        guard !connection.isSendingFile else { return }
        now = connection.now
        machine.fileSent()
        process(connection)
    }

    func deadlinePassed(on connection: Connection) {
        machine.deadlinePassed()
        process(connection)
    }

    func shutdownRequested(on connection: Connection) {
        machine.shutdownRequested()
        process(connection)
    }

    func connectionClosed(_ connection: Connection) {
        closed = true
        if let cancellation {
            self.cancellation = nil
            cancellation.handler()
        }
        machine.connectionClosed()
        dropStreamedBody()
        pendingUpgrade = nil
        self.connection = nil  // breaks the connection ⇄ handler cycle
    }

    // MARK: Actions

    /// Performs the machine's actions until it needs an input, then sends what they produced. Parsing
    /// stops while the connection holds more output than it may (`isWritable`): the peer must read first.
    private func process(_ connection: Connection) {
        if isProcessing { return }
        isProcessing = true
        defer { isProcessing = false }
        while let action = machine.next(mayParse: connection.isWritable) {
            perform(action, on: connection)
        }
        connection.flush()
    }

    private func perform(_ action: consuming HTTP1ConnectionAction, on connection: Connection) {
        switch consume action {  // a request's payload moves on to the responder
        case .setDeadline(let deadline):
            let timeout: UInt64
            switch deadline {
            case .header: timeout = settings.headerTimeout
            case .body: timeout = settings.bodyTimeout
            case .idle: timeout = settings.idleTimeout
            case .none: timeout = .max
            }
            connection.setDeadline(monotonicNanoseconds: timeout == .max ? .max : now &+ timeout)
        case .sendContinue:
            connection.withOutbound { HTTPResponseWriter.writeContinue(into: &$0) }
        case .admitBody(let head, let admission):
            connection.setDeadline(monotonicNanoseconds: .max)
            responder.admitBody(
                of: head, context: context, admission: BodyAdmission(handler: self, admission: admission, loop: connection.loop))
        case .startStreamedBody:
            do throws(HTTPParseError) { try startStreamedBody() } catch { machine.storageFailed(error) }
        case .appendStreamedBody(let bytes):
            do throws(HTTPParseError) { try appendStreamedBody(bytes) } catch { machine.storageFailed(error) }
        case .respond(let request, let number):
            dispatch(request, number: number, on: connection)
        case .respondStreamed(let head, let number):
            dispatch(finishStreamedBody(head), number: number, on: connection)
        case .pauseReading:
            connection.pauseReading()
        case .resumeReading:
            connection.resumeReading()
        case .reportTimeout(let deadline):
            switch deadline {
            case .header: connection.reportTimeout(.header)
            case .body: connection.reportTimeout(.body)
            case .idle, .none: connection.reportTimeout(.idle)
            }
        case .fail(let error):
            fail(error, on: connection)
        case .close:
            connection.close()
        case .closeNow:
            connection.closeNow()
        case .upgrade(let rest):
            connection.flush()
            let makeHandler = pendingUpgrade
            pendingUpgrade = nil
            self.connection = nil
            if let makeHandler { connection.replaceHandler(makeHandler(), initialBytes: rest) } else { connection.close() }
        }
    }

    // MARK: Streamed bodies

    /// `admitBody`'s `admit()` (on the loop): the body may now be read into its file.
    func admitted(_ admission: UInt64) {
        guard let connection, machine.bodyAdmitted(admission) else { return }
        now = connection.now
        process(connection)
    }

    /// `admitBody`'s `refuse(_:)` (on the loop): `response` answers the request; the body is never read.
    func refused(_ admission: UInt64, with response: HTTPResponse) {
        guard connection != nil, let request = machine.bodyRefused(admission) else { return }
        deliver(response, adding: nil, request: request, upgrade: nil)
    }

    private func startStreamedBody() throws(HTTPParseError) {
        guard let directory = settings.uploadDirectory else {
            streamedBody = []
            return
        }
        do {
            bodyFile = try BodyFileWriter(directory: directory)
        } catch {
            connection?.environment.onEvent(.error(connectionID: connection?.id ?? 0, error))
            throw Self.storageFailure(error)
        }
    }

    private func appendStreamedBody(_ bytes: [UInt8]) throws(HTTPParseError) {
        if let bodyFile {
            do {
                try bodyFile.write(bytes)
            } catch {
                connection?.environment.onEvent(.error(connectionID: connection?.id ?? 0, error))
                throw Self.storageFailure(error)
            }
        } else {
            streamedBody?.append(contentsOf: bytes)
        }
    }

    private func finishStreamedBody(_ head: HTTPRequestHead) -> HTTPRequest {
        let request = HTTPRequest(head: head, body: streamedBody ?? [], bodyFile: bodyFile?.finish())
        bodyFile = nil
        streamedBody = nil
        return request
    }

    /// Removes a streamed body that will never be complete.
    private func dropStreamedBody() {
        bodyFile?.discard()
        bodyFile = nil
        streamedBody = nil
    }

    /// A body that cannot be written: 503 when the disk is full or read-only (worth retrying), else 500.
    static func storageFailure(_ error: SocketError) -> HTTPParseError {
        [ENOSPC, EDQUOT, EROFS].contains(error.errno)
            ? HTTPParseError(status: .serviceUnavailable, reason: "the upload cannot be stored now")
            : HTTPParseError(status: .internalServerError, reason: "the upload could not be stored")
    }

    private func dispatch(_ request: consuming HTTPRequest, number: UInt64, on connection: Connection) {
        connection.setDeadline(monotonicNanoseconds: .max)
        let sink = ResponseSink(handler: self, request: number, loop: connection.loop)
        context.arrivalNanoseconds = connection.environment.clockIsSystem ? now : nil
        responder.respond(to: consume request, context: context, sink: sink)
    }

    /// Writes the response to request number `request` (on the loop). Ignores a second response
    /// to the same request and responses for a connection that has closed meanwhile.
    /// `field`, when given, is written after the response's own fields (`ResponseSink.send(_:adding:)`).
    func deliver(
        _ response: HTTPResponse, adding field: HTTPHeaders.Element?, request: UInt64,
        upgrade: (@Sendable () -> any ConnectionHandler)?
    ) {
        guard let connection,
            let framing = machine.responseStarted(request: request, headers: response.headers, upgrade: upgrade != nil)
        else { return }
        answered = request
        cancellation = nil
        if !isProcessing { now = connection.now }
        // `now` was read this turn; on the system clock it is the reading the `Date` cache wants.
        let stamp = connection.environment.clockIsSystem ? now : monotonicNanoseconds()
        let date = connection.loop.state.httpDate(now: stamp, format: HTTPDate.format(epochSeconds:))
        // Copied only when a field must be added (TLS): a copy retains every field of the response.
        if let hsts = settings.strictTransportSecurity, !response.headers.contains(name: "Strict-Transport-Security") {
            var stamped = response
            stamped.headers.add(name: "Strict-Transport-Security", value: hsts)
            Self.write(stamped, field, on: connection, date: date, framing: framing)
        } else {
            Self.write(response, field, on: connection, date: date, framing: framing)
        }
        let code = response.status.code
        if let file = response.bodyFile, !framing.isHead, code >= 200, code != 204, code != 304, upgrade == nil {
            connection.write(file: file)
        }
        pendingUpgrade = upgrade
        machine.responseWritten(sendingFile: connection.isSendingFile)
        process(connection)  // inline answers: the drain in progress performs what follows
    }

    /// `ResponseSink.onCancel` (on the loop): keeps `handler` for request number `request` while it is
    /// with the responder; runs it at once when the connection closed before the request was answered.
    func setCancellation(request: UInt64, _ handler: @escaping @Sendable () -> Void) {
        guard request > answered else { return }  // answered: nothing left to cancel
        if closed { return handler() }
        cancellation = (request, handler)
    }

    private static func write(
        _ response: HTTPResponse, _ field: HTTPHeaders.Element?, on connection: Connection, date: String,
        framing: HTTP1ConnectionStateMachine.ResponseFraming
    ) {
        connection.withOutbound { buffer in
            HTTPResponseWriter.write(
                response, into: &buffer, date: date, keepAlive: framing.keepAlive, requestVersion: framing.version,
                isHeadRequest: framing.isHead, extraField: field)
        }
    }

    /// Answers a request that cannot be served (parse error, timeout) and closes.
    private func fail(_ error: HTTPParseError, on connection: Connection) {
        dropStreamedBody()
        if error.status.code != 408 {
            connection.environment.onEvent(
                .badRequest(connectionID: connection.id, status: error.status.code, reason: error.reason))
        }
        let response = responder.errorResponse(for: error)
        let date = connection.loop.state.httpDate(now: monotonicNanoseconds(), format: HTTPDate.format(epochSeconds:))
        let framing = HTTP1ConnectionStateMachine.ResponseFraming(keepAlive: false, version: .http1_1, isHead: false)
        Self.write(response, nil, on: connection, date: date, framing: framing)
        connection.close()
    }
}

extension HTTPServer {
    /// An HTTP/1.1 server answering every request with `responder`.
    /// `onEvent` receives `TransportEvent`s for the application's logger.
    public convenience init(
        configuration: ServerConfiguration, responder: any HTTPResponder,
        onEvent: @escaping @Sendable (TransportEvent) -> Void = { _ in }
    ) {
        let settings = HTTPSettings(configuration)
        self.init(configuration: configuration, onEvent: onEvent) {
            HTTPConnectionHandler(responder: responder, settings: settings)
        }
    }
}
