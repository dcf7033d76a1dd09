import Dispatch
import Glibc
import TLS
public import Wire

/// What a connection needs from the server that accepted it: limits, timeouts, event hook and
/// bookkeeping. Immutable and shared by every connection of one server.
final class ConnectionEnvironment: Sendable {
    let maxOutboundBytes: Int
    let writeTimeout: UInt64
    let lingerTimeout: UInt64
    let sweepTick: Duration
    /// The clock the connection's deadlines are measured on (`ServerConfiguration.clock`).
    let clock: any MonotonicClock
    /// Whether `clock` is `SystemMonotonicClock`: its readings are then `CLOCK_MONOTONIC` and can
    /// stand in for another read of that clock in the same turn (the `Date` cache, request timing).
    let clockIsSystem: Bool
    let onEvent: @Sendable (TransportEvent) -> Void
    /// Called on the loop after the fd is closed.
    let onClosed: @Sendable (Connection) -> Void
    /// Called on the loop when the connection first switches protocols (`replaceHandler`).
    let onUpgraded: @Sendable (Connection) -> Void

    init(
        maxOutboundBytes: Int, writeTimeout: Duration, lingerTimeout: Duration, sweepTick: Duration,
        clock: any MonotonicClock = SystemMonotonicClock(),
        onEvent: @escaping @Sendable (TransportEvent) -> Void,
        onClosed: @escaping @Sendable (Connection) -> Void,
        onUpgraded: @escaping @Sendable (Connection) -> Void = { _ in }
    ) {
        self.maxOutboundBytes = maxOutboundBytes
        self.writeTimeout = UInt64(writeTimeout.clampedNanoseconds)
        self.lingerTimeout = UInt64(lingerTimeout.clampedNanoseconds)
        self.sweepTick = sweepTick
        self.clock = clock
        clockIsSystem = clock is SystemMonotonicClock
        self.onEvent = onEvent
        self.onClosed = onClosed
        self.onUpgraded = onUpgraded
    }
}

/// One accepted TCP connection, living on exactly one `EventLoop`.
///
/// It owns the socket, a read source, a write source (created only the first time a write hits
/// `EAGAIN`, and resumed only while output is pending), and the outbound byte queue. Bytes read go
/// to the current `ConnectionHandler`; the handler queues output with `write`/`withOutbound` and
/// sends it with `flush()`. The fd is closed only in the sources' cancel handler, after both
/// sources have been cancelled, so no event can ever run on a reused fd number.
///
/// Back-pressure: when more than `maxOutboundBytes` are queued the connection stops reading
/// (suspends its read source) and `isWritable` turns false; once the peer has taken enough that
/// the queue is at or below half the limit, reading resumes and the handler hears
/// `writabilityChanged`. Queued output that makes no progress for `writeTimeout` closes the
/// connection.
///
/// TLS (when the server has a `ServerConfiguration.tls` context): socket bytes go through the
/// connection's `TLSEngine` before the handler sees them, and what the handler queues is held as
/// plaintext and sealed into records on `flush()`, before the outbound queue. The handler, the
/// deadlines, back-pressure (plaintext waiting to be sealed counts as queued output) and the
/// lifecycle are the same; `close()` adds `close_notify` after the last response. A plain
/// connection pays one nil check per write and per read for this.
///
/// A file body (`write(file:)`) follows the bytes queued before it and is read from the file as the
/// peer takes it, never held whole: plain connections hand it to the kernel with `sendfile(2)`, TLS
/// connections read `fileChunkBytes` at a time and seal them, when the records before are sent.
///
/// Every member except `id`, `loop` and `remoteAddress` must be used on `loop` only.
public final class Connection: @unchecked Sendable {
    // @unchecked: all mutable state is confined to `loop.queue` (checked in debug builds with
    // dispatchPrecondition); cross-thread callers hop with `loop.execute`.

    /// A process-unique number, for logs.
    public let id: UInt64
    /// The loop this connection lives on.
    public let loop: EventLoop
    /// The peer's IP address as text.
    public let remoteAddress: String

    let fd: Int32
    let environment: ConnectionEnvironment
    /// The `PeerNetwork` key this connection is counted under for the per-address limit; nil when
    /// it is not counted (refused, or from an exempt peer).
    let countedNetwork: String?
    private(set) var handler: any ConnectionHandler
    /// Whether `replaceHandler` switched this connection to another protocol (read on the loop).
    private(set) var upgraded = false

    private enum Lifecycle {
        /// Reading and writing.
        case open
        /// `close()` was called: flushing what is queued, then `shutdown(SHUT_WR)`.
        case closingAfterFlush
        /// Our side is shut down; discarding input until the peer closes or `lingerTimeout` passes
        /// (closing with unread input would send RST and could destroy the response in flight).
        case lingering
        /// Sources cancelled; the fd closes when both cancel handlers have run.
        case closed
    }

    private var lifecycle = Lifecycle.open
    private var readSource: (any DispatchSourceRead)?
    private var readSourceSuspended = false
    private var writeSource: (any DispatchSourceWrite)?
    private var writeSourceResumed = false
    private var pendingCancelHandlers = 0

    private var outbound: [UInt8] = []
    private var outboundStart = 0
    /// The file body being sent (`write(file:)`) and how much of it is sent (plain) or sealed (TLS).
    private var file: (region: HTTPFileRegion, done: Int64)?
    /// The most a TLS connection reads from a file body at once: four records.
    static let fileChunkBytes = 64 * 1024
    /// TLS only: the connection's engine (nil on a plain connection).
    private let tls: TLSEngine?
    /// TLS only: plaintext the handler queued, sealed into `outbound` by `flush()` once the
    /// handshake is done.
    private var plaintextOutbound: [UInt8] = []
    /// TLS only: the peer sent `close_notify` (its `inputEnded` was delivered then, not at EOF).
    private var tlsInputEnded = false
    private var readingPausedByHandler = false
    private var inputClosed = false
    /// Hysteresis: false from when a flush left more than `maxOutboundBytes` queued until the
    /// queue drains to half of it.
    private var writableFlag = true

    /// Whether the handler should produce more output now: false while more than
    /// `maxOutboundBytes` are queued (and until the queue drains to half of it after a flush).
    public var isWritable: Bool { writableFlag && pendingOutboundBytes <= environment.maxOutboundBytes }

    private var handlerDeadline = UInt64.max
    private var writeDeadline = UInt64.max
    private var lingerDeadline = UInt64.max
    /// Position in the loop's registry (maintained by `LoopState`).
    var registryIndex = -1

    init(
        fd: Int32, id: UInt64, remoteAddress: String, loop: EventLoop,
        environment: ConnectionEnvironment, handler: any ConnectionHandler, countedNetwork: String? = nil,
        tls: TLSEngine? = nil
    ) {
        self.fd = fd
        self.tls = tls
        self.countedNetwork = countedNetwork
        self.id = id
        self.remoteAddress = remoteAddress
        self.loop = loop
        self.environment = environment
        self.handler = handler
    }

    // MARK: Lifecycle

    /// Registers the connection on its loop and starts reading. Call on `loop`.
    func start() {
        debugPreconditionInLoop()
        loop.state.register(self, tick: environment.sweepTick)
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: loop.queue)
        source.setEventHandler { [unowned self] in self.readable() }
        // Strong: keeps the connection alive until the fd is closed.
        source.setCancelHandler { self.sourceCancelled() }
        readSource = source
        pendingCancelHandlers = 1
        source.activate()  // no event can run before this turn of the loop ends
        handler.handlerAdded(to: self)
    }

    /// Whether the connection is closed (or closing) and will take no more output.
    public var isClosed: Bool { lifecycle != .open }

    /// Flushes queued output, then shuts down the sending side and closes once the peer has
    /// closed too (or after a short linger). Further input is discarded. Idempotent.
    public func close() {
        debugPreconditionInLoop()
        guard lifecycle == .open else { return }
        lifecycle = .closingAfterFlush
        handlerDeadline = .max
        if let tls, tls.isHandshaking, !plaintextOutbound.isEmpty {
            // A last answer (a refusal) waits for the handshake; the linger timeout bounds the wait.
            lingerDeadline = now &+ environment.lingerTimeout
        }
        updateReadInterest()
        flush()
    }

    /// Closes at once, dropping queued output. Idempotent.
    public func closeNow() {
        debugPreconditionInLoop()
        guard lifecycle != .closed else { return }
        lifecycle = .closed
        loop.state.unregister(self)
        outbound = []
        outboundStart = 0
        plaintextOutbound = []
        file = nil
        if let source = readSource {
            if readSourceSuspended { source.resume() }
            readSourceSuspended = false
            source.cancel()
        }
        if let source = writeSource {
            if !writeSourceResumed { source.resume() }
            writeSourceResumed = true
            source.cancel()
        }
        handler.connectionClosed(self)
    }

    private func sourceCancelled() {
        pendingCancelHandlers -= 1
        guard pendingCancelHandlers == 0 else { return }
        Glibc.close(fd)
        readSource = nil
        writeSource = nil
        environment.onClosed(self)
    }

    /// Installs `newHandler` in place of the current one (e.g. WebSocket after `101`), then feeds
    /// it `initialBytes`: input that arrived after the upgrade request (from
    /// `HTTPRequestParser.takeBufferedBytes()`). The old handler gets no further calls.
    public func replaceHandler(_ newHandler: any ConnectionHandler, initialBytes: [UInt8] = []) {
        debugPreconditionInLoop()
        guard lifecycle == .open else { return }
        handler = newHandler
        handlerDeadline = .max
        if !upgraded {
            upgraded = true
            environment.onUpgraded(self)
        }
        newHandler.handlerAdded(to: self)
        if !initialBytes.isEmpty, lifecycle == .open {
            initialBytes.withUnsafeBytes { newHandler.received($0, on: self) }
        }
    }

    /// Asks the handler to wind down (graceful server shutdown).
    func requestShutdown() {
        guard lifecycle == .open else { return }
        handler.shutdownRequested(on: self)
    }

    // MARK: Reading

    /// Stops reading until `resumeReading()` (in addition to back-pressure pauses).
    public func pauseReading() {
        debugPreconditionInLoop()
        readingPausedByHandler = true
        updateReadInterest()
    }

    /// Undoes `pauseReading()`.
    public func resumeReading() {
        debugPreconditionInLoop()
        readingPausedByHandler = false
        updateReadInterest()
    }

    private var wantsToRead: Bool {
        switch lifecycle {
        case .open: return !inputClosed && !readingPausedByHandler && writableFlag
        case .closingAfterFlush, .lingering: return !inputClosed
        case .closed: return false
        }
    }

    private func updateReadInterest() {
        guard let source = readSource, lifecycle != .closed else { return }
        let want = wantsToRead
        if want && readSourceSuspended {
            readSourceSuspended = false
            source.resume()
        } else if !want && !readSourceSuspended {
            readSourceSuspended = true
            source.suspend()
        }
    }

    private func readable() {
        let buffer = loop.state.readBuffer
        while lifecycle != .closed && !readSourceSuspended {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n > 0 {
                if let tls {
                    if lifecycle != .lingering { receiveTLS(UnsafeRawBufferPointer(rebasing: buffer[..<n]), tls) }
                } else if lifecycle == .open {
                    handler.received(UnsafeRawBufferPointer(rebasing: buffer[..<n]), on: self)
                }
                // Read on after a short read too, until EAGAIN: an end of stream queued behind the
                // data is only seen by the next read, and once our side is shut down too (lingering)
                // the source does not fire again for it — such a connection stayed open.
            } else if n == 0 {
                inputClosed = true
                updateReadInterest()
                switch lifecycle {
                case .open: if !tlsInputEnded { handler.inputEnded(on: self) }
                case .closingAfterFlush: break  // keep flushing; linger ends at once afterwards
                case .lingering: closeNow()
                case .closed: break
                }
                return
            } else {
                let code = Glibc.errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK { return }
                fail(SocketError(call: "read", errno: code))
                return
            }
        }
    }

    /// TLS: decrypts `ciphertext`, hands the plaintext to the handler record by record (while
    /// open), and sends what the engine produced (handshake flights, tickets, alerts) — in
    /// `.closingAfterFlush` too, where a handshake may still have to finish before the last answer.
    private func receiveTLS(_ ciphertext: UnsafeRawBufferPointer, _ tls: TLSEngine) {
        tls.feed(ciphertext)
        let plaintext = loop.state.tlsPlaintextBuffer
        reading: while lifecycle != .closed {
            switch tls.read(into: plaintext) {
            case .plaintext(let n):
                if lifecycle == .open { handler.received(UnsafeRawBufferPointer(rebasing: plaintext[..<n]), on: self) }
            case .needsInput:
                break reading
            case .closed(.closeNotify):
                // The peer's clean end of its data: what EOF is on a plain connection.
                tlsInputEnded = true
                if lifecycle == .open { handler.inputEnded(on: self) }
                break reading
            case .closed(.failed(let reason)):
                environment.onEvent(.tlsFailed(connectionID: id, reason: reason))
                plaintextOutbound = []  // can never be sealed now
                tls.takeOutput(into: &outbound)  // the alert, if libssl made one
                if lifecycle == .open { close() } else { flush() }
                return
            case .closed(.closedLocally):
                break reading
            }
        }
        guard lifecycle == .open || lifecycle == .closingAfterFlush else { return }
        tls.takeOutput(into: &outbound)
        if pendingOutboundBytes > 0 || lifecycle == .closingAfterFlush { flush() }
    }

    private func fail(_ error: SocketError) {
        // A peer resetting is routine, not an operator's problem.
        if error.errno != ECONNRESET && error.errno != EPIPE {
            environment.onEvent(.error(connectionID: id, error))
        }
        closeNow()
    }

    // MARK: Writing

    /// Bytes queued and not yet accepted by the kernel (with TLS: records plus plaintext not yet sealed).
    public var pendingOutboundBytes: Int { outbound.count - outboundStart + plaintextOutbound.count }

    /// Queues `bytes` (sent by the next `flush()`). Ignored once the connection is closing.
    public func write(_ bytes: UnsafeRawBufferPointer) {
        debugPreconditionInLoop()
        guard lifecycle == .open else { return }
        if tls == nil { outbound.append(contentsOf: bytes) } else { plaintextOutbound.append(contentsOf: bytes) }
    }

    /// Queues `bytes` (sent by the next `flush()`). Ignored once the connection is closing.
    public func write(_ bytes: [UInt8]) {
        debugPreconditionInLoop()
        guard lifecycle == .open else { return }
        if tls == nil { outbound.append(contentsOf: bytes) } else { plaintextOutbound.append(contentsOf: bytes) }
    }

    /// `write(bytes)` then `flush()`, without copying `bytes` into the outbound queue when nothing is
    /// queued before them: they go to the kernel straight from the caller's buffer, and only what it
    /// did not take is queued (a broadcast's shared frame, sent to many sockets). Ignored once the
    /// connection is closing, as `write` is.
    public func writeAndFlush(_ bytes: [UInt8]) {
        debugPreconditionInLoop()
        guard lifecycle == .open else { return }
        guard tls == nil, outbound.isEmpty, !writeSourceResumed else {
            write(bytes)
            flush()
            return
        }
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
            }
            if n >= 0 {
                sent += n
                continue
            }
            let code = Glibc.errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { break }
            fail(SocketError(call: "send", errno: code))
            return
        }
        guard sent < bytes.count else { return }  // all taken: the queue stays empty, no deadline
        outbound.append(contentsOf: bytes[sent...])
        writeQueued()  // arms the write source and the write deadline, updates writability
    }

    /// Lets `body` append to the outbound queue in place (serialise straight into it, no copy).
    /// `body` must only append. Returns nil, without calling `body`, once the connection is closing.
    @discardableResult
    public func withOutbound<R>(_ body: (inout [UInt8]) throws -> R) rethrows -> R? {
        debugPreconditionInLoop()
        guard lifecycle == .open else { return nil }
        if tls == nil { return try body(&outbound) }
        return try body(&plaintextOutbound)
    }

    /// Queues `region` to be sent after the bytes queued so far, from the file, as the peer takes it.
    /// Nothing may be queued after it until `isSendingFile` is false again; the handler hears
    /// `writabilityChanged` (in a later turn of the loop) once it is all sent. Ignored once closing.
    public func write(file region: HTTPFileRegion) {
        debugPreconditionInLoop()
        guard lifecycle == .open, region.count > 0 else { return }
        precondition(file == nil, "a file body is already being sent")
        file = (region, 0)
    }

    /// Whether a file body (`write(file:)`) is still being sent.
    public var isSendingFile: Bool { file != nil }

    /// Sends queued output now, as far as the kernel takes it; the rest goes when the socket is
    /// writable again. Most responses leave in this one `send`, with no write source involved.
    public func flush() {
        debugPreconditionInLoop()
        guard lifecycle == .open || lifecycle == .closingAfterFlush else { return }
        if let tls { seal(tls) }
        if writeSourceResumed {  // waiting for writability; the source will call us
            updateWritability()
            return
        }
        writeQueued()
    }

    /// TLS: seals the queued plaintext into records on `outbound` once the handshake allows, and
    /// when closing with nothing left to seal, adds `close_notify`.
    private func seal(_ tls: TLSEngine) {
        if !plaintextOutbound.isEmpty {
            if tls.canSend {
                let sealed = plaintextOutbound.withUnsafeBytes { tls.send($0) }
                if plaintextOutbound.capacity > 256 * 1024 {
                    plaintextOutbound = []
                } else {
                    plaintextOutbound.removeAll(keepingCapacity: true)
                }
                if !sealed, case .closed(.failed(let reason)) = tls.state {
                    environment.onEvent(.tlsFailed(connectionID: id, reason: reason))
                }
            } else if !tls.isHandshaking {
                plaintextOutbound = []  // closed or failed: it can never be sent
            }
        }
        // `close_notify` goes after a file body's last record (added by `sendFile` then).
        if lifecycle == .closingAfterFlush && plaintextOutbound.isEmpty && file == nil { tls.close() }
        tls.takeOutput(into: &outbound)
    }

    private func writeQueued() {
        var progressed = false
        var blocked = false
        sending: while true {
            while outboundStart < outbound.count {
                let n = outbound.withUnsafeBytes { raw in
                    send(fd, raw.baseAddress! + outboundStart, raw.count - outboundStart, Int32(MSG_NOSIGNAL))
                }
                if n >= 0 {
                    outboundStart += n
                    progressed = true
                    continue
                }
                let code = Glibc.errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK {
                    blocked = true
                    break sending
                }
                fail(SocketError(call: "send", errno: code))
                return
            }
            guard let current = file else { break }
            outbound.removeAll(keepingCapacity: true)
            outboundStart = 0
            switch sendFile(current) {
            case .progressed: progressed = true
            case .blocked:
                blocked = true
                break sending
            case .failed(let error):
                fail(error)
                return
            }
        }
        if !blocked {
            // Drained: keep a modest buffer for the next response, release a big one.
            if outbound.capacity > 256 * 1024 { outbound = [] } else { outbound.removeAll(keepingCapacity: true) }
            outboundStart = 0
            writeDeadline = .max
            if writeSourceResumed {
                writeSourceResumed = false
                writeSource?.suspend()
            }
        } else {
            if outboundStart >= 64 * 1024 && outboundStart >= outbound.count / 2 {
                outbound.removeSubrange(0..<outboundStart)
                outboundStart = 0
            }
            if progressed || writeDeadline == .max {
                writeDeadline = now &+ environment.writeTimeout
            }
            armWriteSource()
        }
        updateWritability()
        if lifecycle == .closingAfterFlush && outbound.isEmpty && plaintextOutbound.isEmpty && file == nil { beginLinger() }
    }

    private enum FileProgress {
        case progressed
        case blocked
        case failed(SocketError)
    }

    /// Moves the file body on, once everything queued before it is sent: `sendfile` on a plain
    /// connection; on TLS, the next chunk read and sealed into `outbound`. Clears `file` when done.
    private func sendFile(_ current: (region: HTTPFileRegion, done: Int64)) -> FileProgress {
        let region = current.region
        let remaining = region.count - current.done
        var offset = off_t(region.offset + current.done)
        let moved: Int
        if let tls {
            guard tls.canSend, plaintextOutbound.isEmpty else { return .failed(SocketError(call: "SSL_write", errno: EIO)) }
            let chunk = loop.state.fileChunkBuffer
            let n = pread(region.descriptor, chunk.baseAddress, min(chunk.count, Int(remaining)), offset)
            if n < 0 {
                if Glibc.errno == EINTR { return .progressed }
                return .failed(.current("pread"))
            }
            // The file shrank under us: the promised Content-Length cannot be met; end the connection.
            if n == 0 { return .failed(SocketError(call: "pread", errno: EIO)) }
            guard tls.send(UnsafeRawBufferPointer(rebasing: chunk[..<n])) else {
                if case .closed(.failed(let reason)) = tls.state {
                    environment.onEvent(.tlsFailed(connectionID: id, reason: reason))
                }
                return .failed(SocketError(call: "SSL_write", errno: EIO))
            }
            tls.takeOutput(into: &outbound)
            moved = n
        } else {
            let n = Glibc.sendfile(fd, region.descriptor, &offset, Int(remaining))
            if n < 0 {
                let code = Glibc.errno
                if code == EINTR { return .progressed }
                if code == EAGAIN || code == EWOULDBLOCK { return .blocked }
                return .failed(SocketError(call: "sendfile", errno: code))
            }
            if n == 0 { return .failed(SocketError(call: "sendfile", errno: EIO)) }
            moved = n
        }
        if current.done + Int64(moved) >= region.count {
            file = nil
            if let tls, lifecycle == .closingAfterFlush {
                tls.close()
                tls.takeOutput(into: &outbound)
            }
            // Heard in a later turn: the handler may be inside the `flush()` that got here.
            loop.execute { [self] in
                if lifecycle == .open && file == nil { handler.writabilityChanged(on: self) }
            }
        } else {
            file = (region, current.done + Int64(moved))
        }
        return .progressed
    }

    private func armWriteSource() {
        guard !writeSourceResumed else { return }
        if writeSource == nil {
            let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: loop.queue)
            source.setEventHandler { [unowned self] in self.writable() }
            source.setCancelHandler { self.sourceCancelled() }
            writeSource = source
            pendingCancelHandlers += 1
        }
        writeSourceResumed = true
        writeSource!.resume()
    }

    private func writable() {
        guard lifecycle == .open || lifecycle == .closingAfterFlush else { return }
        writeQueued()
    }

    private func updateWritability() {
        let pending = pendingOutboundBytes
        if writableFlag && pending > environment.maxOutboundBytes {
            writableFlag = false
            updateReadInterest()
        } else if !writableFlag && pending <= environment.maxOutboundBytes / 2 {
            writableFlag = true
            updateReadInterest()
            if lifecycle == .open { handler.writabilityChanged(on: self) }
        }
    }

    private func beginLinger() {
        lifecycle = .lingering
        if inputClosed {
            closeNow()
            return
        }
        Glibc.shutdown(fd, Int32(SHUT_WR))
        lingerDeadline = now &+ environment.lingerTimeout
        updateReadInterest()
    }

    // MARK: Deadlines

    /// Sets the handler's deadline `after` from now on the server's clock (nil clears it).
    /// When it passes, the handler hears `deadlinePassed`. Resolution is the loop's sweep tick.
    public func setDeadline(after delay: Duration?) {
        debugPreconditionInLoop()
        guard let delay else {
            handlerDeadline = .max
            return
        }
        handlerDeadline = now &+ UInt64(delay.clampedNanoseconds)
    }

    /// The current reading of the clock this connection's deadlines are on (`environment.clock`).
    var now: UInt64 { environment.clock.nowNanoseconds() }

    /// Sets the handler's deadline to an absolute reading of `now` in nanoseconds (`.max` = none).
    func setDeadline(monotonicNanoseconds deadline: UInt64) { handlerDeadline = deadline }

    /// Reports that `kind`'s deadline closed (or is closing) this connection.
    func reportTimeout(_ kind: TransportEvent.TimeoutKind) {
        environment.onEvent(.timedOut(connectionID: id, kind))
    }

    var nextDeadline: UInt64 { min(handlerDeadline, writeDeadline, lingerDeadline) }

    func deadlinesPassed(now: UInt64) {
        guard lifecycle != .closed else { return }
        if lingerDeadline <= now {
            closeNow()
        } else if writeDeadline <= now {
            reportTimeout(.write)
            closeNow()
        } else if handlerDeadline <= now {
            handlerDeadline = .max
            if lifecycle == .open { handler.deadlinePassed(on: self) }
        }
    }

    @inline(__always)
    private func debugPreconditionInLoop() {
        #if DEBUG
            loop.preconditionInEventLoop()
        #endif
    }
}
