import Dispatch
public import Wire

/// What the application plugs into a WebSocket connection. Every method is called on the
/// connection's loop and must not block (blocking work goes elsewhere and answers through the
/// `WebSocket` handle, which hops back to the loop).
public protocol WebSocketDelegate: AnyObject {
    /// The connection speaks WebSocket now; keep `socket` to send from any thread.
    func webSocketOpened(_ socket: WebSocket)
    /// A message, a Ping/Pong, or — always last, exactly once — `.closed(code, reason)`.
    func webSocket(_ socket: WebSocket, received event: WebSocketEvent)
    /// Queued output drained below half of `ServerConfiguration.maxOutboundBytes` after having
    /// been above it (see `WebSocket.isWritable`): a good moment to send what was held back.
    func webSocketBecameWritable(_ socket: WebSocket)
}

extension WebSocketDelegate {
    /// Default: nothing to do.
    public func webSocketOpened(_ socket: WebSocket) {}
    /// Default: nothing was held back.
    public func webSocketBecameWritable(_ socket: WebSocket) {}
}

/// The application's handle on one WebSocket connection. Sendable: the commands may be called
/// from any thread; they run on the connection's loop (at once when called there, otherwise in
/// call order after what the loop has queued). Commands on a closing or closed connection do
/// nothing. Members marked "loop only" must be read on `loop`.
public final class WebSocket: Sendable, CustomStringConvertible {
    /// The loop the connection lives on.
    public let loop: EventLoop
    /// The connection's process-unique number, for logs.
    public let connectionID: UInt64
    /// The peer's IP address as text.
    public let remoteAddress: String
    /// The permessage-deflate parameters agreed in the handshake, if any.
    public let deflate: PerMessageDeflateParameters?
    let handler: WebSocketConnectionHandler

    init(handler: WebSocketConnectionHandler, connection: Connection, deflate: PerMessageDeflateParameters?) {
        self.handler = handler
        self.loop = connection.loop
        self.connectionID = connection.id
        self.remoteAddress = connection.remoteAddress
        self.deflate = deflate
    }

    /// `WebSocket(#12 127.0.0.1)`.
    public var description: String { "WebSocket(#\(connectionID) \(remoteAddress))" }

    /// Sends a text message (compressed if permessage-deflate was agreed and it helps).
    public func send(text: String) { perform(.text(text)) }
    /// Sends a binary message (compressed if permessage-deflate was agreed and it helps).
    public func send(binary: [UInt8]) { perform(.binary(binary)) }
    /// Sends a message encoded once for many connections (a broadcast): its bytes are reused as
    /// they are when this connection's agreement allows. Build it with
    /// `WebSocketConnectionHandler.sharedCompressor(on:)` to share the compressed frame too.
    public func send(_ encoded: WebSocketEncodedMessage) { perform(.encoded(encoded)) }
    /// Sends a Ping (payload cut to 125 bytes); the answer arrives as `.pong`.
    public func ping(_ payload: [UInt8] = []) { perform(.ping(payload)) }
    /// Starts the close handshake with `code` and `reason` (cut to 123 bytes); the connection
    /// closes when the peer answers, or after `WebSocketConfiguration.closeTimeout`.
    public func close(code: WebSocketCloseCode = .normalClosure, reason: String = "") {
        perform(.close(code, reason))
    }

    /// Sends a broadcast's message at once and returns the bytes still queued for the peer
    /// afterwards (0 when the kernel took everything, and once closed). Loop only: the fan-out's
    /// per-socket step, with no hop and no second look-up for the report.
    public func sendAndReport(_ encoded: WebSocketEncodedMessage) -> Int {
        #if DEBUG
            loop.preconditionInEventLoop()
        #endif
        handler.run(.encoded(encoded))
        return handler.connection?.pendingOutboundBytes ?? 0
    }

    /// Bytes queued for the peer and not yet taken by the kernel. Loop only; 0 once closed.
    public var pendingOutboundBytes: Int {
        loop.preconditionInEventLoop()
        return handler.connection?.pendingOutboundBytes ?? 0
    }

    /// False while the peer is not keeping up (more than `maxOutboundBytes` queued, until half
    /// drains; then the delegate hears `webSocketBecameWritable`). Loop only; false once closed.
    public var isWritable: Bool {
        loop.preconditionInEventLoop()
        return handler.connection?.isWritable ?? false
    }

    private func perform(_ command: WebSocketConnectionHandler.Command) {
        if loop.inEventLoop {
            handler.run(command)
        } else {
            let handler = self.handler
            loop.execute { handler.run(command) }
        }
    }
}

/// Serves one connection after a `101 Switching Protocols`: drives a `WebSocketProtocol` (Wire)
/// with the bytes read, writes what it answers, and tells the `WebSocketDelegate` what arrived.
///
/// - Back-pressure: output goes through the connection's queue; past
///   `ServerConfiguration.maxOutboundBytes` the connection stops reading until the peer has taken
///   half of it, so a peer that sends without reading cannot grow our memory.
/// - Close handshake: after we send a Close (ours, a protocol error's, server shutdown's 1001),
///   the peer has `closeTimeout` to answer before the TCP connection is dropped.
/// - Heartbeat: a Ping every `pingInterval`; nothing received for `idleTimeout` closes with 1001.
/// - Server shutdown: Close 1001 "server shutting down"; the server's grace period bounds the rest.
///
/// Timers use the connection's deadline (the loop's sweep, ≤ 250 ms resolution). Lives on the
/// connection's loop; the application talks to it through the `WebSocket` handle.
public final class WebSocketConnectionHandler: ConnectionHandler, @unchecked Sendable {
    // @unchecked: every mutable member is confined to the connection's loop; the `WebSocket`
    // handle hops there with `loop.execute` before calling `run`.

    enum Command: Sendable {
        case text(String)
        case binary([UInt8])
        case encoded(WebSocketEncodedMessage)
        case ping([UInt8])
        case close(WebSocketCloseCode, String)
    }

    private let configuration: WebSocketConfiguration
    private let agreedDeflate: PerMessageDeflateParameters?
    private var webSocket: WebSocketProtocol
    private var delegate: (any WebSocketDelegate)?
    private(set) var connection: Connection?
    private var socket: WebSocket?
    /// True while draining the protocol's actions: writes are flushed once at the end.
    private var processing = false
    /// Whether `.closed` reached the delegate (it must be the last event, exactly once).
    private var delivered = false

    private var closeDeadline = UInt64.max
    private var idleDeadline = UInt64.max
    private var nextPing = UInt64.max

    /// A handler for a connection whose handshake agreed `deflate` (`Accepted.deflate`), telling
    /// `delegate` what happens. Create it in the `makeHandler` closure of `ResponseSink.upgrade`
    /// (it runs on the connection's loop), or use `ResponseSink.upgradeToWebSocket`.
    public init(
        configuration: WebSocketConfiguration = WebSocketConfiguration(), deflate: PerMessageDeflateParameters?,
        delegate: any WebSocketDelegate
    ) {
        self.configuration = configuration
        self.agreedDeflate = deflate
        self.delegate = delegate
        self.webSocket = WebSocketProtocol(limits: configuration.limits, deflate: deflate)
    }

    // MARK: ConnectionHandler

    public func handlerAdded(to connection: Connection) {
        self.connection = connection
        if let deflate = agreedDeflate, deflate.serverNoContextTakeover {
            webSocket = WebSocketProtocol(
                limits: configuration.limits, deflate: deflate,
                sharedCompressor: Self.sharedCompressor(
                    on: connection.loop, windowBits: deflate.serverMaxWindowBits, level: deflate.compressionLevel))
        }
        let now = connection.now
        if let interval = configuration.pingInterval { nextPing = now &+ UInt64(interval.clampedNanoseconds) }
        if let idle = configuration.idleTimeout { idleDeadline = now &+ UInt64(idle.clampedNanoseconds) }
        let socket = WebSocket(handler: self, connection: connection, deflate: agreedDeflate)
        self.socket = socket
        updateDeadline()
        delegate?.webSocketOpened(socket)
    }

    public func received(_ bytes: UnsafeRawBufferPointer, on connection: Connection) {
        if let idle = configuration.idleTimeout, webSocket.state == .open {
            idleDeadline = connection.now &+ UInt64(idle.clampedNanoseconds)
        }
        webSocket.receive(bytes)
        drain()
    }

    public func inputEnded(on connection: Connection) {
        webSocket.receiveEndOfStream()
        drain()
    }

    public func writabilityChanged(on connection: Connection) {
        guard let socket, !delivered else { return }
        delegate?.webSocketBecameWritable(socket)
    }

    public func deadlinePassed(on connection: Connection) {
        let now = connection.now
        if closeDeadline <= now {
            closeDeadline = .max
            webSocket.closeTimedOut()
            drain()
        } else if idleDeadline <= now {
            idleDeadline = .max
            nextPing = .max
            run(.close(.goingAway, "no heartbeat"))
        } else if nextPing <= now {
            if let interval = configuration.pingInterval {
                nextPing = now &+ UInt64(interval.clampedNanoseconds)
            }
            run(.ping([]))
        }
        updateDeadline()
    }

    public func shutdownRequested(on connection: Connection) {
        run(.close(.goingAway, "server shutting down"))
    }

    public func connectionClosed(_ connection: Connection) {
        // Reset, write timeout, forced shutdown: the protocol never saw an end, the app must.
        if !delivered, let socket {
            delivered = true
            delegate?.webSocket(socket, received: .closed(.abnormalClosure, ""))
        }
        // Break the cycles handler → socket → handler and handler → delegate → socket.
        self.connection = nil
        self.socket = nil
        self.delegate = nil
    }

    // MARK: Driving the protocol

    /// Runs an application command (on the loop).
    func run(_ command: Command) {
        guard connection != nil else { return }
        let action: WebSocketAction
        switch command {
        case .text(let text): action = webSocket.send(text: text)
        case .binary(let bytes): action = webSocket.send(binary: bytes)
        case .encoded(let message): action = webSocket.send(message)
        case .ping(let payload): action = webSocket.ping(payload)
        case .close(let code, let reason): action = webSocket.close(code: code, reason: reason)
        }
        if !processing, case .send(let bytes) = action, let connection {
            connection.writeAndFlush(bytes)  // a message on its own: straight to the kernel, no copy
            updateDeadline()
            return
        }
        apply(action)
        if !processing {
            connection?.flush()
            updateDeadline()
        }
    }

    /// Carries out every action the protocol has, then flushes once.
    private func drain() {
        processing = true
        while let action = webSocket.next() { apply(action) }
        processing = false
        connection?.flush()
        updateDeadline()
    }

    private func apply(_ action: WebSocketAction) {
        guard let connection else { return }
        switch action {
        case .deliver(let event):
            deliver(event)
        case .send(let bytes):
            connection.write(bytes)
        case .sendClose(let bytes):
            connection.write(bytes)
            closeDeadline = connection.now &+ UInt64(configuration.closeTimeout.clampedNanoseconds)
            nextPing = .max
            idleDeadline = .max
        case .closeConnection:
            closeDeadline = .max
            nextPing = .max
            idleDeadline = .max
            connection.close()
        case .doNothing:
            break
        }
    }

    private func deliver(_ event: WebSocketEvent) {
        guard let socket, !delivered else { return }
        switch event {
        case .closed: delivered = true
        case .text, .binary, .ping, .pong: break
        }
        delegate?.webSocket(socket, received: event)
    }

    private func updateDeadline() {
        guard let connection, !connection.isClosed else { return }
        connection.setDeadline(monotonicNanoseconds: min(closeDeadline, idleDeadline, nextPing))
    }

    // MARK: Shared compressors

    private final class CompressorCache: @unchecked Sendable {
        // @unchecked: reached only on its loop's queue.
        var compressors: [Int: PerMessageDeflateCompressor] = [:]
    }

    private static let cacheKey = DispatchSpecificKey<CompressorCache>()

    /// The `noContextTakeover` compressor the connections of `loop` share (one per window size
    /// and level): what `server_no_context_takeover` connections compress with, and what a
    /// broadcast's `WebSocketEncodedMessage(text:compressor:)` should use. Call on `loop`.
    public static func sharedCompressor(on loop: EventLoop, windowBits: Int = 15, level: Int = 6)
        -> PerMessageDeflateCompressor
    {
        loop.preconditionInEventLoop()
        let cache: CompressorCache
        if let existing = loop.queue.getSpecific(key: cacheKey) {
            cache = existing
        } else {
            cache = CompressorCache()
            loop.queue.setSpecific(key: cacheKey, value: cache)
        }
        let bits = min(max(windowBits, 9), 15)  // zlib refuses a raw window of 8; 9 stands in for it
        let key = bits * 16 + level
        if let compressor = cache.compressors[key] { return compressor }
        let compressor = PerMessageDeflateCompressor(windowBits: bits, noContextTakeover: true, level: level)
        cache.compressors[key] = compressor
        return compressor
    }
}
