/// What the I/O shell of an HTTP/1.1 connection must do; it switches over these without `default:`.
/// Performed in the order `HTTP1ConnectionStateMachine.next(mayParse:)` returns them.
public enum HTTP1ConnectionAction: Sendable {
    /// Arm the connection's one deadline: this timeout from now (`.none`: no deadline).
    case setDeadline(HTTP1ConnectionStateMachine.Deadline)
    /// Write `100 Continue` (RFC 9110 §10.1.1: the client waits for it before sending the body).
    case sendContinue
    /// Clear the deadline and ask the application whether the streamed body of `head` may be
    /// received; answer with `bodyAdmitted(_:)` or `bodyRefused(_:)` and this `admission` number.
    case admitBody(HTTPRequestHead, admission: UInt64)
    /// The streamed body of `head` was admitted: create where it goes (its file). A failure is reported
    /// with `storageFailed(_:)`.
    case startStreamedBody(HTTPRequestHead)
    /// Append the next de-chunked bytes of the streamed body (never empty); a failure is reported
    /// with `storageFailed(_:)`.
    case appendStreamedBody([UInt8])
    /// Clear the deadline and hand `request` (its body buffered whole) to the application; its
    /// response is number `request`: answer with `responseStarted(request:headers:upgrade:)`.
    case respond(HTTPRequest, request: UInt64)
    /// Clear the deadline; the streamed body of `head` is complete: finish its file and hand the
    /// request to the application, like `.respond`.
    case respondStreamed(HTTPRequestHead, request: UInt64)
    /// Stop reading from the socket: more than `readAheadLimit` bytes of later requests are buffered.
    case pauseReading
    /// Undo `.pauseReading`.
    case resumeReading
    /// Tell the operator this deadline passed (the action after it closes the connection).
    case reportTimeout(HTTP1ConnectionStateMachine.Deadline)
    /// The request cannot be served: discard a streamed body, write the error response for this
    /// error with `Connection: close`, and close after flushing. Nothing follows.
    case fail(HTTPParseError)
    /// Flush what is written, then close. Nothing follows.
    case close
    /// Close at once, dropping queued output (a connection that timed out between requests). Nothing follows.
    case closeNow
    /// The `101` response is written: flush, and hand the connection to the next protocol with these
    /// bytes (what the client sent after the upgrade request). Nothing follows.
    case upgrade([UInt8])
}

/// The server side of one HTTP/1.1 connection (RFC 9112 §9: keep-alive, pipelining, `100-continue`,
/// upgrade; a streamed upload's admission; graceful shutdown) as a sans-I/O state machine: bytes and
/// events in, actions out. It owns the `HTTPRequestParser`; it never touches a socket or a clock — a
/// deadline is an action naming which timeout to arm, and its passing is an event.
///
/// ```
///   waiting ──first byte──▶ head ──.head──▶ body ──.request / .bodyEnd──▶ responding
///      ▲   idle timeout:       header: 408    │  body: 408                    │ responseStarted
///      │   close                              │ streamed: admitting ──admit───┤ (refuse: responding,
///      │                                      ▼  (no deadline)   ▲           │  then close)
///      └── responseWritten (keep-alive) ◀─ sendingFile ◀──────────────────────┤
///                                              fileSent    upgrade, close, fail ──▶ upgraded / finished
/// ```
///
/// One request at a time: while one is with the application (`responding`), or its body's admission
/// (`admitting`), or its file response is being sent (`sendingFile`), later pipelined bytes wait
/// unparsed in the parser (past `readAheadLimit`, `.pauseReading`), so responses go out in request
/// order by construction. The shell calls `next(mayParse:)` until nil after every input; an input
/// that arrives while it drains (an application answering inline) only queues its actions, which the
/// same drain performs.
public struct HTTP1ConnectionStateMachine: Sendable {
    /// A connection's one deadline: which timeout the shell arms (`.setDeadline`), or which passed.
    public enum Deadline: Sendable, Equatable {
        /// From a request head's first byte until the head is complete (and for a fresh connection's first byte).
        case header
        /// From the end of the head until the body is complete.
        case body
        /// Between requests on a kept-alive connection.
        case idle
        /// No deadline (the application has the request, or a file response is being sent).
        case none
    }

    /// How `responseStarted` says the response must be framed.
    public struct ResponseFraming: Sendable, Equatable {
        /// Whether the connection stays open (`Connection: keep-alive` / no `close`).
        public var keepAlive: Bool
        /// The request's version, which the response's framing follows.
        public var version: HTTPVersion
        /// Whether the request was `HEAD` (the response carries no body).
        public var isHead: Bool

        public init(keepAlive: Bool, version: HTTPVersion, isHead: Bool) {
            self.keepAlive = keepAlive
            self.version = version
            self.isHead = isHead
        }
    }

    /// The request with the application, and how its response is framed.
    struct Exchange: Sendable {
        var request: UInt64
        var keepAlive: Bool
        var version: HTTPVersion
        var isHead: Bool
    }

    enum Phase: Sendable {
        /// Between requests, nothing of the next one buffered.
        case waiting
        /// Some of a request head has arrived.
        case head
        /// A streamed body's head is with the application's admission; none of the body is read.
        case admitting(HTTPRequestHead, admission: UInt64)
        /// The head is parsed; the body is arriving (`streamed`: the head of a streamed body).
        case body(continuePending: Bool, streamed: HTTPRequestHead?)
        /// The request is with the application.
        case responding(Exchange)
        /// The response's head is being written by the shell (`responseStarted` to `responseWritten`).
        case writingResponse(keepAlive: Bool, upgrade: Bool)
        /// The response's head is written; the shell is sending its body from a file.
        case sendingFile
        /// Handed to another protocol after `101`.
        case upgraded
        /// Closing or closed; nothing more to do.
        case finished
    }

    /// Where the connection stands.
    private(set) var phase = Phase.waiting
    private var parser: HTTPRequestParser
    /// Past this many buffered bytes while a request is with the application, reading pauses.
    public let readAheadLimit: Int
    /// Requests handed to the application so far (a response names its request by this number).
    public private(set) var servedRequests: UInt64 = 0
    /// Numbers `.admitBody` actions, so an answer to an earlier one is ignored.
    private var admissions: UInt64 = 0
    private var readingPaused = false
    private var inputEnded = false
    private var shuttingDown = false
    /// The parser returned nil since the last input: parsing again is pointless until something arrives.
    private var parserNeedsInput = false
    private var queue = ActionQueue<HTTP1ConnectionAction>()

    /// A connection whose requests are parsed under `limits`; reading pauses past `readAheadLimit`
    /// buffered bytes while a request is with the application.
    public init(limits: HTTPLimits, readAheadLimit: Int) {
        parser = HTTPRequestParser(limits: limits)
        self.readAheadLimit = readAheadLimit
    }

    /// Bytes of later requests buffered and not yet parsed.
    public var bufferedByteCount: Int { parser.bufferedByteCount }

    /// Whether the connection waits for the application (an answer, an admission) or for a file to
    /// be sent: nothing is parsed meanwhile.
    public var isWaitingForApplication: Bool {
        switch phase {
        case .admitting, .responding, .writingResponse, .sendingFile: true
        case .waiting, .head, .body, .upgraded, .finished: false
        }
    }

    // MARK: Input

    /// The peer sent `bytes`; drain `next(mayParse:)` afterwards.
    public mutating func receive(_ bytes: UnsafeRawBufferPointer) {
        parserNeedsInput = false
        parser.append(bytes)
        if isWaitingForApplication && !readingPaused && parser.bufferedByteCount > readAheadLimit {
            readingPaused = true
            enqueue(.pauseReading)
        }
    }

    /// The peer sent `bytes`; drain `next(mayParse:)` afterwards.
    public mutating func receive(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { receive($0) }
    }

    /// The peer closed its sending side. A request in flight is still answered, and so are complete
    /// requests behind it; then the connection closes. Drain `next(mayParse:)` afterwards.
    public mutating func receiveEndOfStream() {
        parserNeedsInput = false
        inputEnded = true
    }

    /// The deadline armed last passed (the shell has cleared it); drain `next(mayParse:)` afterwards.
    /// A silent connection is closed; a partial request gets 408.
    public mutating func deadlinePassed() {
        switch phase {
        case .waiting:
            enqueue(.reportTimeout(servedRequests == 0 ? .header : .idle))
            finish(.closeNow)
        case .head:
            enqueue(.reportTimeout(.header))
            finish(.fail(HTTPParseError(status: .requestTimeout, reason: "request head not received in time")))
        case .admitting, .body:
            enqueue(.reportTimeout(.body))
            finish(.fail(HTTPParseError(status: .requestTimeout, reason: "request body not received in time")))
        case .responding, .writingResponse, .sendingFile, .upgraded, .finished:
            break
        }
    }

    /// The server is shutting down gracefully: an idle connection closes now; a request being received
    /// or answered finishes first and its response carries `Connection: close`. Drain afterwards.
    public mutating func shutdownRequested() {
        parserNeedsInput = false
        shuttingDown = true
        if case .waiting = phase { finish(.close) }
    }

    /// The connection closed (for whatever reason): nothing more happens; pending actions are dropped.
    public mutating func connectionClosed() {
        phase = .finished
        queue.removeAll()
    }

    /// The application admitted the streamed body of `admission`: it is read from now on. False (and
    /// nothing changes) for an answer that came too late or twice. Drain afterwards.
    public mutating func bodyAdmitted(_ admission: UInt64) -> Bool {
        guard case .admitting(let head, let number) = phase, number == admission else { return false }
        parserNeedsInput = false
        phase = .body(continuePending: head.expectsContinue, streamed: head)
        enqueue(.setDeadline(.body))
        enqueue(.startStreamedBody(head))
        return true
    }

    /// The application refused the streamed body of `admission` with a response of its own: returns
    /// the number to deliver that response as (`responseStarted`), or nil for an answer that came too
    /// late or twice. The connection closes after the response (the unread body stands between this
    /// request and the next).
    public mutating func bodyRefused(_ admission: UInt64) -> UInt64? {
        guard case .admitting(let head, let number) = phase, number == admission else { return nil }
        servedRequests &+= 1
        phase = .responding(Exchange(request: servedRequests, keepAlive: false, version: head.version, isHead: false))
        return servedRequests
    }

    /// Storing the streamed body failed (`.startStreamedBody`, `.appendStreamedBody`): answer `error`
    /// and close. Drain afterwards.
    public mutating func storageFailed(_ error: HTTPParseError) {
        queue.removeAll()
        finish(.fail(error))
    }

    /// The application answered request number `request`, and its response has `headers`; `upgrade`:
    /// it switches protocols after it. Returns how to frame the response, or nil when it must be
    /// dropped (a second answer, or one for a connection that has moved on or closed). The shell writes
    /// it, then reports `responseWritten(sendingFile:)`.
    public mutating func responseStarted(request: UInt64, headers: HTTPHeaders, upgrade: Bool) -> ResponseFraming? {
        guard case .responding(let exchange) = phase, exchange.request == request else { return nil }
        let keepAlive = upgrade || (exchange.keepAlive && !shuttingDown && !Self.asksToClose(headers))
        phase = .writingResponse(keepAlive: keepAlive, upgrade: upgrade)
        return ResponseFraming(keepAlive: keepAlive, version: exchange.version, isHead: exchange.isHead)
    }

    /// The response is written (`sendingFile`: its body is still being sent from a file). Drain afterwards:
    /// the next pipelined request is parsed, or the connection closes or upgrades.
    public mutating func responseWritten(sendingFile: Bool) {
        guard case .writingResponse(let keepAlive, let upgrade) = phase else { return }
        parserNeedsInput = false
        if upgrade {
            phase = .upgraded
            let rest = parser.takeBufferedBytes()
            if readingPaused {
                readingPaused = false
                enqueue(.resumeReading)
            }
            enqueue(.upgrade(rest))
        } else if !keepAlive {
            finish(.close)
        } else if sendingFile {
            // The next request waits for the file; the shell's write timeout bounds a peer that stops reading.
            phase = .sendingFile
        } else {
            phase = .waiting
            enqueue(.setDeadline(.idle))
        }
    }

    /// The file response being sent is all sent. Drain afterwards.
    public mutating func fileSent() {
        guard case .sendingFile = phase else { return }
        parserNeedsInput = false
        phase = .waiting
        enqueue(.setDeadline(.idle))
        if shuttingDown { finish(.close) }
    }

    // MARK: Output

    /// The next action, or nil when there is nothing to do until the next input. `mayParse`: whether
    /// the shell can take more output now (false while its outbound queue is over its limit; the
    /// buffered requests wait for the peer to read).
    public mutating func next(mayParse: Bool) -> HTTP1ConnectionAction? {
        if let action = queue.popFirst() { return action }
        switch phase {
        case .waiting, .head, .body: break
        case .admitting, .responding, .writingResponse, .sendingFile, .upgraded, .finished: return nil
        }
        if !mayParse || parserNeedsInput { return resumeReadingIfPaused() }
        let event: HTTPParserEvent?
        do {
            event = try parser.next()
        } catch {
            finish(.fail(error))
            return queue.popFirst()
        }
        guard let event else {
            parserNeedsInput = true
            awaitInput()
            _ = resumeReadingIfPaused().map { enqueue($0) }
            return queue.popFirst()
        }
        switch consume event {
        case .head(let head):
            if head.streamsBody {
                // Nothing of the body is read until the application admits it. The admission is the
                // server's own work, like a handler's: no deadline runs meanwhile (a busy server must
                // not answer 408 for its own delay); the body's starts when it is admitted.
                admissions &+= 1
                phase = .admitting(head, admission: admissions)
                return .admitBody(head, admission: admissions)
            }
            phase = .body(continuePending: head.expectsContinue, streamed: nil)
            return .setDeadline(.body)
        case .request(let request):
            servedRequests &+= 1
            phase = .responding(
                Exchange(
                    request: servedRequests, keepAlive: request.head.keepAlive, version: request.head.version,
                    isHead: request.head.method == .head))
            return .respond(request, request: servedRequests)
        case .bodyChunk(let bytes):
            return .appendStreamedBody(bytes)
        case .bodyEnd:
            guard case .body(_, let streamed?) = phase else {
                finish(.fail(HTTPParseError(status: .internalServerError, reason: "body end without a streamed head")))
                return queue.popFirst()
            }
            servedRequests &+= 1
            phase = .responding(
                Exchange(
                    request: servedRequests, keepAlive: streamed.keepAlive, version: streamed.version,
                    isHead: streamed.method == .head))
            return .respondStreamed(streamed, request: servedRequests)
        }
    }

    /// The parser needs more bytes: track which deadline applies, answer `Expect: 100-continue`.
    private mutating func awaitInput() {
        if inputEnded {
            // Nothing more will come: an incomplete request can never complete.
            finish(.close)
            return
        }
        switch parser.state {
        case .idle:
            if case .waiting = phase { return }
            phase = .waiting
            enqueue(.setDeadline(.idle))
        case .head:
            if case .head = phase { return }  // the header deadline runs from the head's first byte
            phase = .head
            enqueue(.setDeadline(.header))
        case .body:
            if case .body(true, let streamed) = phase {
                phase = .body(continuePending: false, streamed: streamed)
                enqueue(.sendContinue)
            }
        }
    }

    private mutating func resumeReadingIfPaused() -> HTTP1ConnectionAction? {
        guard readingPaused else { return nil }
        if case .responding = phase { return nil }
        readingPaused = false
        return .resumeReading
    }

    /// Ends the connection with `action` (`.fail`, `.close` or `.closeNow`).
    private mutating func finish(_ action: HTTP1ConnectionAction) {
        phase = .finished
        enqueue(action)
    }

    private mutating func enqueue(_ action: HTTP1ConnectionAction) { queue.append(action) }

    /// Whether the application set `Connection: close` on its response.
    static func asksToClose(_ headers: HTTPHeaders) -> Bool {
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
