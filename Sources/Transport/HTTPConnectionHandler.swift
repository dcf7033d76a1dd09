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

/// Serves HTTP/1.1 on one connection: feeds input to `HTTPRequestParser`, hands each complete
/// request to the `HTTPResponder`, writes the responses, and enforces the request deadlines.
///
/// Pipelining: one request at a time. While a request is with the responder, later pipelined
/// requests stay unparsed in the parser's buffer (reading pauses past `readAheadLimit`); when the
/// response arrives it is serialised into the connection's outbound buffer and parsing resumes
/// with the buffered input. Responses are therefore in request order by construction, however
/// late or from whichever thread the responder answers. A responder that answers inline has all
/// the answers to one read's worth of pipelined requests leave in one `send`.
///
/// A streamed body (an upload, `HTTPRequestHead.streamsBody`) is first admitted or refused from its
/// head by the responder (`admitBody`: reading pauses meanwhile), then goes chunk by chunk to a
/// `BodyFileWriter` (or, without `uploadDirectory`, into memory) and reaches the responder as
/// `HTTPRequest.bodyFile` at `.bodyEnd`; a refusal or a close before then removes the file. A
/// response with a `bodyFile` is sent from the file by the connection (`Connection.write(file:)`);
/// the next pipelined request waits until it is all sent.
///
/// Deadlines (one per connection, swept by the loop; setting one is a store, not a timer):
///
///     waiting (fresh)  --first byte-->  head  --.head-->  body  --.request/.bodyEnd-->  responding
///       ^  header timeout: close          |  header: 408   |  body: 408                  |
///       |                                 '----------------'-----------------------------'
///       '-- waiting (keep-alive, idle timeout: close) <--- response written (file sent) -'
final class HTTPConnectionHandler: ConnectionHandler, @unchecked Sendable {
    // @unchecked: all state is confined to the connection's loop; `ResponseSink` holds this
    // object only to hop back to that loop before calling `deliver`.

    private enum Phase {
        /// Between requests, nothing of the next one buffered.
        case waiting
        /// Some of a request head has arrived.
        case head
        /// A streamed body's head is with the responder's `admitBody`; none of the body is read.
        case admitting
        /// The head is parsed; the body is arriving.
        case body
        /// The request is with the responder.
        case responding
        /// The response's head is written; the connection is sending its body from a file.
        case sendingFile
        /// Handed to another protocol after `101`.
        case upgraded
        /// Closing or closed; nothing more to do.
        case finished
    }

    private let responder: any HTTPResponder
    private let settings: HTTPSettings
    private var parser: HTTPRequestParser
    private var connection: Connection?
    private var context = RequestContext(remoteAddress: "", connectionID: 0)

    private var phase = Phase.waiting
    private var servedRequests: UInt64 = 0
    private var currentKeepAlive = true
    private var currentVersion = HTTPVersion.http1_1
    private var currentIsHead = false
    private var continuePending = false
    private var isProcessing = false
    private var readingPausedForReadAhead = false
    private var inputEnded = false
    private var shuttingDown = false
    /// The streamed body being received: in a file, or in memory without `uploadDirectory`.
    private var bodyFile: BodyFileWriter?
    private var streamedBody: [UInt8]?
    private var streamedHead: HTTPRequestHead?
    /// Numbers `admitBody` calls, so an answer to an earlier one is ignored.
    private var admissions: UInt64 = 0
    /// The connection's clock (`Connection.now`) read at the start of the current turn, for deadlines.
    private var now: UInt64 = 0

    init(responder: any HTTPResponder, settings: HTTPSettings) {
        self.responder = responder
        self.settings = settings
        self.parser = HTTPRequestParser(limits: settings.limits)
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
        parser.append(bytes)
        if phase == .responding || phase == .sendingFile || phase == .admitting {
            if !readingPausedForReadAhead && parser.bufferedByteCount > settings.readAheadLimit {
                readingPausedForReadAhead = true
                connection.pauseReading()
            }
            return
        }
        now = connection.now
        process(connection)
    }

    func inputEnded(on connection: Connection) {
        inputEnded = true
        // A request in flight is still answered (the peer may have half-closed after sending),
        // and so are complete requests behind it; `process` closes when nothing is left.
        if phase != .responding && phase != .sendingFile && phase != .admitting { process(connection) }
    }

    func writabilityChanged(on connection: Connection) {
        if phase == .sendingFile {
            guard !connection.isSendingFile else { return }
            now = connection.now
            phase = .waiting
            connection.setDeadline(monotonicNanoseconds: now &+ settings.idleTimeout)
            if shuttingDown {
                phase = .finished
                connection.close()
                return
            }
        }
        if phase != .responding { process(connection) }
    }

    func deadlinePassed(on connection: Connection) {
        switch phase {
        case .waiting:
            connection.reportTimeout(servedRequests == 0 ? .header : .idle)
            phase = .finished
            connection.closeNow()
        case .head:
            connection.reportTimeout(.header)
            fail(HTTPParseError(status: .requestTimeout, reason: "request head not received in time"), on: connection)
        case .admitting, .body:
            connection.reportTimeout(.body)
            fail(HTTPParseError(status: .requestTimeout, reason: "request body not received in time"), on: connection)
        case .responding, .sendingFile, .upgraded, .finished:
            break
        }
    }

    func shutdownRequested(on connection: Connection) {
        shuttingDown = true
        // Idle keep-alive connections close now; a request being received or answered finishes
        // first and its response carries `Connection: close`.
        if phase == .waiting {
            phase = .finished
            connection.close()
        }
    }

    func connectionClosed(_ connection: Connection) {
        phase = .finished
        dropStreamedBody()
        self.connection = nil  // breaks the connection ⇄ handler cycle
    }

    // MARK: Requests

    /// Parses and dispatches buffered requests until one is with the responder, input runs out,
    /// or the peer must read before we answer more; then sends what was produced.
    private func process(_ connection: Connection) {
        isProcessing = true
        defer { isProcessing = false }
        while connection.isWritable {
            switch phase {
            case .waiting, .head, .body: break
            case .admitting, .responding, .sendingFile, .upgraded, .finished:
                connection.flush()
                return
            }
            let event: HTTPParserEvent?
            do {
                event = try parser.next()
            } catch {
                fail(error, on: connection)
                return
            }
            guard let event else {
                awaitInput(connection)
                break
            }
            switch consume event {  // a request's payload moves on to the responder
            case .head(let head):
                continuePending = head.expectsContinue
                phase = .body
                connection.setDeadline(monotonicNanoseconds: now &+ settings.bodyTimeout)
                if head.streamsBody {
                    // Nothing of the body is read until the responder admits it (`admitted`). The
                    // admission is the server's own work, like a handler's: no deadline runs meanwhile
                    // (a busy server must not answer 408 for its own delay); the body's starts at `admitted`.
                    connection.setDeadline(monotonicNanoseconds: .max)
                    phase = .admitting
                    streamedHead = head
                    admissions &+= 1
                    let admission = BodyAdmission(handler: self, admission: admissions, loop: connection.loop)
                    responder.admitBody(of: head, context: context, admission: admission)
                    continue
                }
            case .request(let request):
                continuePending = false
                dispatch(request, on: connection)
            case .bodyChunk(let bytes):
                do throws(HTTPParseError) { try appendStreamedBody(bytes) } catch {
                    fail(error, on: connection)
                    return
                }
            case .bodyEnd:
                continuePending = false
                dispatch(finishStreamedBody(), on: connection)
            }
        }
        if readingPausedForReadAhead && phase != .responding {
            readingPausedForReadAhead = false
            connection.resumeReading()
        }
        connection.flush()
    }

    /// The parser needs more bytes: track which deadline applies, answer `Expect: 100-continue`.
    private func awaitInput(_ connection: Connection) {
        if inputEnded {
            // Nothing more will come: an incomplete request can never complete.
            phase = .finished
            connection.close()
            return
        }
        switch parser.state {
        case .idle:
            if phase != .waiting {
                phase = .waiting
                connection.setDeadline(monotonicNanoseconds: now &+ settings.idleTimeout)
            }
        case .head:
            if phase != .head {  // the header deadline runs from the head's first byte
                phase = .head
                connection.setDeadline(monotonicNanoseconds: now &+ settings.headerTimeout)
            }
        case .body:
            if continuePending {  // RFC 9110 §10.1.1: the client waits for this before the body
                continuePending = false
                connection.withOutbound { HTTPResponseWriter.writeContinue(into: &$0) }
            }
        }
    }

    // MARK: Streamed bodies

    /// `admitBody`'s `admit()` (on the loop): the body may now be read into its file.
    func admitted(_ admission: UInt64) {
        guard let connection, phase == .admitting, admission == admissions, let head = streamedHead else { return }
        now = connection.now
        phase = .body
        connection.setDeadline(monotonicNanoseconds: now &+ settings.bodyTimeout)
        do throws(HTTPParseError) { try startStreamedBody(head) } catch {
            fail(error, on: connection)
            return
        }
        if !isProcessing { process(connection) }
    }

    /// `admitBody`'s `refuse(_:)` (on the loop): `response` answers the request; the body is never read.
    func refused(_ admission: UInt64, with response: HTTPResponse) {
        guard let connection, phase == .admitting, admission == admissions, let head = streamedHead else { return }
        streamedHead = nil
        phase = .responding
        servedRequests &+= 1
        currentKeepAlive = false  // the unread body stands between this request and the next
        currentVersion = head.version
        currentIsHead = false
        if !isProcessing { now = connection.now }
        deliver(response, adding: nil, request: servedRequests, upgrade: nil)
    }

    private func startStreamedBody(_ head: HTTPRequestHead) throws(HTTPParseError) {
        streamedHead = head
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

    private func finishStreamedBody() -> HTTPRequest {
        let head = streamedHead ?? HTTPRequestHead(method: .post, target: "/")
        let request = HTTPRequest(head: head, body: streamedBody ?? [], bodyFile: bodyFile?.finish())
        bodyFile = nil
        streamedBody = nil
        streamedHead = nil
        return request
    }

    /// Removes a streamed body that will never be complete.
    private func dropStreamedBody() {
        bodyFile?.discard()
        bodyFile = nil
        streamedBody = nil
        streamedHead = nil
    }

    /// A body that cannot be written: 503 when the disk is full or read-only (worth retrying), else 500.
    static func storageFailure(_ error: SocketError) -> HTTPParseError {
        [ENOSPC, EDQUOT, EROFS].contains(error.errno)
            ? HTTPParseError(status: .serviceUnavailable, reason: "the upload cannot be stored now")
            : HTTPParseError(status: .internalServerError, reason: "the upload could not be stored")
    }

    private func dispatch(_ request: consuming HTTPRequest, on connection: Connection) {
        phase = .responding
        connection.setDeadline(monotonicNanoseconds: .max)
        servedRequests &+= 1
        currentKeepAlive = request.head.keepAlive
        currentVersion = request.head.version
        currentIsHead = request.head.method == .head
        let sink = ResponseSink(handler: self, request: servedRequests, loop: connection.loop)
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
        guard let connection, phase == .responding, request == servedRequests else { return }
        if !isProcessing { now = connection.now }
        // `now` was read this turn; on the system clock it is the reading the `Date` cache wants.
        let stamp = connection.environment.clockIsSystem ? now : monotonicNanoseconds()
        let keepAlive =
            upgrade != nil
            || (currentKeepAlive && !shuttingDown && !Self.asksToClose(response.headers))
        let date = connection.loop.state.httpDate(now: stamp, format: HTTPDate.format(epochSeconds:))
        let version = currentVersion
        let isHead = currentIsHead
        // Copied only when a field must be added (TLS): a copy retains every field of the response.
        if let hsts = settings.strictTransportSecurity, !response.headers.contains(name: "Strict-Transport-Security") {
            var stamped = response
            stamped.headers.add(name: "Strict-Transport-Security", value: hsts)
            Self.write(stamped, field, on: connection, date: date, keepAlive: keepAlive, version: version, isHead: isHead)
        } else {
            Self.write(response, field, on: connection, date: date, keepAlive: keepAlive, version: version, isHead: isHead)
        }
        let code = response.status.code
        if let file = response.bodyFile, !isHead, code >= 200, code != 204, code != 304, upgrade == nil {
            connection.write(file: file)
        }
        if let upgrade {
            phase = .upgraded
            connection.flush()
            let rest = parser.takeBufferedBytes()
            if readingPausedForReadAhead { connection.resumeReading() }
            self.connection = nil
            connection.replaceHandler(upgrade(), initialBytes: rest)
            return
        }
        guard keepAlive else {
            phase = .finished
            connection.close()
            return
        }
        if connection.isSendingFile {
            // The next request waits for the file; the write timeout bounds a peer that stops reading.
            phase = .sendingFile
            connection.flush()
            return
        }
        phase = .waiting
        connection.setDeadline(monotonicNanoseconds: now &+ settings.idleTimeout)
        if !isProcessing { process(connection) }  // inline answers: the running loop continues
    }

    private static func write(
        _ response: HTTPResponse, _ field: HTTPHeaders.Element?, on connection: Connection, date: String, keepAlive: Bool,
        version: HTTPVersion, isHead: Bool
    ) {
        connection.withOutbound { buffer in
            HTTPResponseWriter.write(
                response, into: &buffer, date: date, keepAlive: keepAlive, requestVersion: version, isHeadRequest: isHead,
                extraField: field)
        }
    }

    /// Answers a request that cannot be served (parse error, timeout) and closes.
    private func fail(_ error: HTTPParseError, on connection: Connection) {
        phase = .finished
        dropStreamedBody()
        if error.status.code != 408 {
            connection.environment.onEvent(
                .badRequest(connectionID: connection.id, status: error.status.code, reason: error.reason))
        }
        let response = responder.errorResponse(for: error)
        let date = connection.loop.state.httpDate(now: monotonicNanoseconds(), format: HTTPDate.format(epochSeconds:))
        Self.write(response, nil, on: connection, date: date, keepAlive: false, version: .http1_1, isHead: false)
        connection.close()
    }

    /// Whether the application set `Connection: close` on its response.
    private static func asksToClose(_ headers: HTTPHeaders) -> Bool {
        for field in headers where HTTPHeaders.namesEqual(field.name, "connection") {
            for token in field.value.split(separator: ",") {
                var token = token[...]
                while token.first == " " || token.first == "\t" { token = token.dropFirst() }
                while token.last == " " || token.last == "\t" { token = token.dropLast() }
                if HTTPHeaders.namesEqual(String(token), "close") { return true }
            }
        }
        return false
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
