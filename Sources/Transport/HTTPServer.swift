import Dispatch
import Glibc
import Synchronization

/// The HTTP/1.1 server: a listener that accepts connections and spreads them round-robin over an
/// `EventLoopGroup`, where each is served by a `ConnectionHandler` (`HTTPConnectionHandler`
/// calling the `HTTPResponder`, unless another factory is given).
///
/// Lifecycle: `init` → `start()` (binds, returns the port) → `shutdown(completion:)`.
public final class HTTPServer: Sendable {
    /// The configuration the server was created with.
    public let configuration: ServerConfiguration
    /// The loops connections live on.
    public let group: EventLoopGroup

    private let makeHandler: @Sendable () -> any ConnectionHandler
    private let onEvent: @Sendable (TransportEvent) -> Void
    private let listenerQueue = DispatchQueue(label: "chronir.listener", qos: .userInitiated)
    private let books: Bookkeeping
    private let listener = ListenerState()
    private static let nextConnectionID = Atomic<UInt64>(1)

    /// The listening socket's state; touched only on `listenerQueue`.
    private final class ListenerState: @unchecked Sendable {
        var fd: Int32 = -1
        var source: (any DispatchSourceRead)?
        var sourceSuspended = false
        var started = false
        var stopped = false
    }

    /// A server whose connections are served by handlers from `makeHandler` (one per connection).
    /// For protocols other than plain HTTP, and for tests of the transport itself.
    public init(
        configuration: ServerConfiguration,
        onEvent: @escaping @Sendable (TransportEvent) -> Void = { _ in },
        makeHandler: @escaping @Sendable () -> any ConnectionHandler
    ) {
        self.configuration = configuration
        self.group = EventLoopGroup(loopCount: configuration.loopCount)
        self.makeHandler = makeHandler
        self.onEvent = onEvent
        self.books = Bookkeeping(configuration: configuration, onEvent: onEvent)
    }

    /// Connections being served now (excluding ones refused past `maxConnections`).
    public var openConnectionCount: Int { books.servedCount }

    /// Of `openConnectionCount`, those that switched protocols after a `101` (WebSocket).
    public var upgradedConnectionCount: Int { books.upgradedCount }

    /// Binds and starts accepting. Returns the bound port (useful with port 0).
    /// Throws `SocketError` if the address is invalid or taken. Call once.
    @discardableResult
    public func start() throws(SocketError) -> Int {
        let result = listenerQueue.sync { () -> Result<Int, SocketError> in Result { () throws(SocketError) -> Int in
            guard !listener.started, !listener.stopped else {
                throw SocketError(call: "start (already started)", errno: EINVAL)
            }
            let (fd, port) = try Socket.listen(
                host: configuration.host, port: configuration.port, backlog: configuration.backlog)
            let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: listenerQueue)
            // Strong: a listening server stays alive until `shutdown` cancels this source.
            source.setEventHandler { self.acceptAvailable(listenFD: fd) }
            source.setCancelHandler { Glibc.close(fd) }
            listener.started = true
            listener.fd = fd
            listener.source = source
            source.activate()
            onEvent(.listening(host: configuration.host, port: port))
            return port
        } }
        return try result.get()
    }

    /// Graceful shutdown: stops accepting at once, closes idle keep-alive connections, lets
    /// requests in flight finish (their responses carry `Connection: close`), and closes whatever
    /// is still open after `shutdownGracePeriod`. `completion` runs once, on an arbitrary thread,
    /// when every connection is closed (calling `shutdown` again adds another completion).
    public func shutdown(completion: @escaping @Sendable () -> Void = {}) {
        listenerQueue.async { [self] in
            let first = books.beginShutdown(completion: completion)
            guard first else { return }
            listener.stopped = true
            if let source = listener.source {
                if listener.sourceSuspended { source.resume() }
                source.cancel()
            }
            listener.source = nil
            onEvent(.shutdownStarted(openConnections: books.totalCount))
            for loop in group.loops {
                loop.execute {
                    for connection in loop.state.connections { connection.requestShutdown() }
                }
            }
            let grace = configuration.shutdownGracePeriod
            listenerQueue.asyncAfter(deadline: .now() + .nanoseconds(grace.clampedNanoseconds)) { [self] in
                for loop in group.loops {
                    loop.execute { [books] in
                        let remaining = loop.state.connections
                        books.countForced(remaining.count)
                        for connection in remaining { connection.closeNow() }
                    }
                }
            }
            books.completeIfIdle()
        }
    }

    // MARK: Accepting (on listenerQueue)

    private func acceptAvailable(listenFD: Int32) {
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listenFD, $0, &length) }
            }
            if fd < 0 {
                let code = Glibc.errno
                switch code {
                case EINTR, ECONNABORTED, EPROTO:
                    continue
                case EAGAIN, EWOULDBLOCK:
                    return
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    // Out of descriptors or memory: accepting again at once would spin. Pause.
                    pauseAccepting(SocketError(call: "accept", errno: code))
                    return
                default:
                    onEvent(.error(connectionID: nil, SocketError(call: "accept", errno: code)))
                    return
                }
            }
            do throws(SocketError) {
                try Socket.setNonBlocking(fd)
                try Socket.setNoDelay(fd)
            } catch {
                onEvent(.error(connectionID: nil, error))
                Glibc.close(fd)
                continue
            }
            handOff(fd: fd, remoteAddress: Socket.address(of: storage).host)
        }
    }

    private func handOff(fd: Int32, remoteAddress: String) {
        let id = Self.nextConnectionID.wrappingAdd(1, ordering: .relaxed).oldValue
        let loop = group.next()
        let served = books.admit()
        let environment = served ? books.servedEnvironment : books.refusedEnvironment
        let makeHandler = self.makeHandler
        if served {
            onEvent(.accepted(connectionID: id, remoteAddress: remoteAddress))
        } else {
            onEvent(.connectionLimitReached(limit: configuration.maxConnections))
        }
        loop.execute {
            let connection = Connection(
                fd: fd, id: id, remoteAddress: remoteAddress, loop: loop,
                environment: environment, handler: served ? makeHandler() : RefuseHandler())
            connection.start()
        }
    }

    private func pauseAccepting(_ error: SocketError) {
        onEvent(.acceptPaused(error))
        guard let source = listener.source, !listener.sourceSuspended else { return }
        listener.sourceSuspended = true
        source.suspend()
        listenerQueue.asyncAfter(deadline: .now() + .milliseconds(100)) { [self] in
            guard let source = listener.source, listener.sourceSuspended, !listener.stopped else { return }
            listener.sourceSuspended = false
            source.resume()
        }
    }
}

/// Connection counts and shutdown completion, shared by the listener and every loop.
private final class Bookkeeping: Sendable {
    private struct Counts {
        var served = 0
        var upgraded = 0
        var total = 0
        var forced = 0
        var shuttingDown = false
        var completions: [@Sendable () -> Void] = []
    }

    /// A class so the environments' close callbacks can share it before `self` exists.
    private final class Store: Sendable { let mutex = Mutex(Counts()) }

    private let store = Store()
    private let maxConnections: Int
    private let onEvent: @Sendable (TransportEvent) -> Void
    /// Environment of connections counted against `maxConnections`.
    let servedEnvironment: ConnectionEnvironment
    /// Environment of connections refused with `503`.
    let refusedEnvironment: ConnectionEnvironment

    init(configuration: ServerConfiguration, onEvent: @escaping @Sendable (TransportEvent) -> Void) {
        self.maxConnections = configuration.maxConnections
        self.onEvent = onEvent
        let store = self.store
        func environment(served: Bool) -> ConnectionEnvironment {
            ConnectionEnvironment(
                maxOutboundBytes: configuration.maxOutboundBytes, writeTimeout: configuration.writeTimeout,
                lingerTimeout: configuration.lingerTimeout, sweepTick: configuration.sweepTick,
                onEvent: onEvent,
                onClosed: { connection in
                    let wasUpgraded = served && connection.upgraded
                    let finished: [@Sendable () -> Void] = store.mutex.withLock { counts in
                        counts.total -= 1
                        if served { counts.served -= 1 }
                        if wasUpgraded { counts.upgraded -= 1 }
                        guard counts.shuttingDown, counts.total == 0 else { return [] }
                        defer { counts.completions = [] }
                        return counts.completions
                    }
                    if served { onEvent(.closed(connectionID: connection.id)) }
                    Bookkeeping.finish(finished, store: store, onEvent: onEvent)
                },
                onUpgraded: { connection in
                    guard served else { return }
                    store.mutex.withLock { $0.upgraded += 1 }
                    onEvent(.upgraded(connectionID: connection.id))
                })
        }
        servedEnvironment = environment(served: true)
        refusedEnvironment = environment(served: false)
    }

    var servedCount: Int { store.mutex.withLock { $0.served } }
    var upgradedCount: Int { store.mutex.withLock { $0.upgraded } }
    var totalCount: Int { store.mutex.withLock { $0.total } }

    /// Counts a new connection; false when it is past `maxConnections` (refuse it).
    func admit() -> Bool {
        store.mutex.withLock { counts in
            counts.total += 1
            guard counts.served < maxConnections else { return false }
            counts.served += 1
            return true
        }
    }

    /// Records a shutdown request; true the first time.
    func beginShutdown(completion: @escaping @Sendable () -> Void) -> Bool {
        store.mutex.withLock { counts in
            counts.completions.append(completion)
            defer { counts.shuttingDown = true }
            return !counts.shuttingDown
        }
    }

    func countForced(_ n: Int) { store.mutex.withLock { $0.forced += n } }

    /// Fires the completions if no connection is open.
    func completeIfIdle() {
        let finished: [@Sendable () -> Void] = store.mutex.withLock { counts in
            guard counts.shuttingDown, counts.total == 0 else { return [] }
            defer { counts.completions = [] }
            return counts.completions
        }
        Self.finish(finished, store: store, onEvent: onEvent)
    }

    private static func finish(
        _ completions: [@Sendable () -> Void], store: Store,
        onEvent: @Sendable (TransportEvent) -> Void
    ) {
        guard !completions.isEmpty else { return }
        onEvent(.shutdownCompleted(forced: store.mutex.withLock { $0.forced }))
        for completion in completions { completion() }
    }
}

/// Answers a connection past `maxConnections` with a canned `503` and closes it.
final class RefuseHandler: ConnectionHandler {
    static let response: [UInt8] = {
        let body = "Server at capacity, retry shortly.\n"
        let head =
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
            + "Content-Length: \(body.utf8.count)\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
        return Array((head + body).utf8)
    }()

    func handlerAdded(to connection: Connection) {
        connection.write(Self.response)
        connection.close()
    }

    func received(_ bytes: UnsafeRawBufferPointer, on connection: Connection) {}
}
