import Dispatch
import Glibc
import Synchronization
import TLS

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
        self.group = EventLoopGroup(loopCount: configuration.loopCount, clock: configuration.clock)
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
        let result = listenerQueue.sync { () -> Result<Int, SocketError> in
            Result { () throws(SocketError) -> Int in
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
            }
        }
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
            let forceClose = configuration.clock.scheduleTimer(
                on: listenerQueue, after: UInt64(grace.clampedNanoseconds), repeating: nil, leeway: 1_000_000
            ) { [self] in
                for loop in group.loops {
                    loop.execute { [books] in
                        let remaining = loop.state.connections
                        books.countForced(remaining.count)
                        for connection in remaining { connection.closeNow() }
                    }
                }
            }
            // Once every connection is closed nothing is left to force: the timer (which holds this
            // server) goes then, not when the grace period ends.
            _ = books.beginShutdown { forceClose.cancel() }
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
            // Close-on-exec (Glibc does not export accept4): a process this one starts must not hold
            // the connection open after it is closed here — its peer would never see the end.
            if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
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
            let remoteAddress = Socket.address(of: storage).host
            let network = configuration.perAddressLimitExempt.contains(remoteAddress) ? nil : PeerNetwork.key(of: storage)
            handOff(fd: fd, remoteAddress: remoteAddress, network: network)
        }
    }

    /// `network`: the peer's `PeerNetwork` key, nil for a peer exempt from the per-address limit.
    private func handOff(fd: Int32, remoteAddress: String, network: String?) {
        let id = Self.nextConnectionID.wrappingAdd(1, ordering: .relaxed).oldValue
        let loop = group.next()
        let admission = books.admit(network: network)
        let makeHandler = self.makeHandler
        let healthCheckPath = configuration.healthCheckPath
        let lingerTimeout = configuration.lingerTimeout
        let environment: ConnectionEnvironment
        let handler: @Sendable () -> any ConnectionHandler
        switch admission {
        case .served:
            onEvent(.accepted(connectionID: id, remoteAddress: remoteAddress))
            environment = books.servedEnvironment
            handler = makeHandler
        case .serverFull:
            onEvent(.connectionLimitReached(limit: configuration.maxConnections))
            environment = books.refusedEnvironment
            handler = { RefuseHandler(.serverFull, healthCheckPath: healthCheckPath, wait: lingerTimeout) }
        case .addressFull:
            onEvent(
                .addressConnectionLimitReached(
                    limit: configuration.effectiveMaxConnectionsPerAddress, network: network ?? remoteAddress))
            environment = books.refusedEnvironment
            handler = { RefuseHandler(.addressFull, healthCheckPath: healthCheckPath, wait: lingerTimeout) }
        }
        let counted = admission == .served ? network : nil
        let tlsContext = configuration.tls?.context
        loop.execute {
            let connection = Connection(
                fd: fd, id: id, remoteAddress: remoteAddress, loop: loop,
                environment: environment, handler: handler(), countedNetwork: counted,
                tls: tlsContext.map { TLSEngine(context: $0) })
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
        /// Served connections per `PeerNetwork` key (exempt peers are not in it); no zero entries.
        var servedByNetwork: [String: Int] = [:]
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
    private let maxPerNetwork: Int
    private let onEvent: @Sendable (TransportEvent) -> Void
    /// Environment of connections counted against `maxConnections`.
    let servedEnvironment: ConnectionEnvironment
    /// Environment of connections refused with `503`.
    let refusedEnvironment: ConnectionEnvironment

    init(configuration: ServerConfiguration, onEvent: @escaping @Sendable (TransportEvent) -> Void) {
        self.maxConnections = configuration.maxConnections
        self.maxPerNetwork = configuration.effectiveMaxConnectionsPerAddress
        self.onEvent = onEvent
        let store = self.store
        func environment(served: Bool) -> ConnectionEnvironment {
            ConnectionEnvironment(
                maxOutboundBytes: configuration.maxOutboundBytes, writeTimeout: configuration.writeTimeout,
                lingerTimeout: configuration.lingerTimeout, sweepTick: configuration.sweepTick,
                clock: configuration.clock, onEvent: onEvent,
                onClosed: { connection in
                    let wasUpgraded = served && connection.upgraded
                    let finished: [@Sendable () -> Void] = store.mutex.withLock { counts in
                        counts.total -= 1
                        if served { counts.served -= 1 }
                        if let network = connection.countedNetwork {
                            let left = (counts.servedByNetwork[network] ?? 1) - 1
                            counts.servedByNetwork[network] = left > 0 ? left : nil
                        }
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

    /// Whether a new connection is served, or why not.
    enum Admission: Equatable {
        /// Counted against `maxConnections` (and its network's share); served.
        case served
        /// `maxConnections` are being served: refuse with `503`.
        case serverFull
        /// Its network holds `maxConnectionsPerAddress` already: refuse with `429`.
        case addressFull
    }

    /// Counts a new connection from `network` (nil: exempt from the per-address limit) and decides
    /// whether it is served. A full server answers `503` whoever asks; `429` means the server had
    /// room and this client's network has used its share.
    func admit(network: String?) -> Admission {
        store.mutex.withLock { counts in
            counts.total += 1
            guard counts.served < maxConnections else { return .serverFull }
            if let network, counts.servedByNetwork[network, default: 0] >= maxPerNetwork { return .addressFull }
            counts.served += 1
            if let network { counts.servedByNetwork[network, default: 0] += 1 }
            return .served
        }
    }

    /// Served connections from `network` now (for tests and metrics).
    func servedCount(network: String) -> Int { store.mutex.withLock { $0.servedByNetwork[network] ?? 0 } }

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

/// Answers a connection refused past `maxConnections` (`503`) or past its network's
/// `maxConnectionsPerAddress` (`429`), both with `Retry-After` and `Connection: close`, then closes
/// it. With a `healthCheckPath` it first waits (at most `wait`, at most `maxRequestLineBytes`) for
/// the start of the request line — no more bytes than `GET <path> HTTP/1.` — and answers exactly
/// that request with `200 {"status":"ok"}` instead: a liveness probe must not restart a server
/// that is merely full.
final class RefuseHandler: ConnectionHandler {
    /// Why the connection is refused.
    enum Reason {
        case serverFull, addressFull
    }

    private let reason: Reason
    private let healthRequestLine: [UInt8]?
    private let wait: Duration
    private var line: [UInt8] = []

    init(_ reason: Reason, healthCheckPath: String? = nil, wait: Duration = .seconds(2)) {
        self.reason = reason
        self.healthRequestLine = healthCheckPath.map { Array("GET \($0) HTTP/1.".utf8) }
        self.wait = wait
    }

    static func refusal(_ reason: Reason) -> [UInt8] {
        switch reason {
        case .serverFull: serverFullResponse
        case .addressFull: addressFullResponse
        }
    }

    static let serverFullResponse = canned(
        "503 Service Unavailable", retryAfter: 1, body: "Server at capacity, retry shortly.\n")
    static let addressFullResponse = canned(
        "429 Too Many Requests", retryAfter: 5,
        body: "Too many connections from your address; close idle ones and retry.\n")
    static let healthyResponse: [UInt8] = {
        let body = #"{"status":"ok"}"#
        let head =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        return Array((head + body).utf8)
    }()

    private static func canned(_ status: String, retryAfter: Int, body: String) -> [UInt8] {
        let head =
            "HTTP/1.1 \(status)\r\nContent-Type: text/plain; charset=utf-8\r\n"
            + "Content-Length: \(body.utf8.count)\r\nRetry-After: \(retryAfter)\r\nConnection: close\r\n\r\n"
        return Array((head + body).utf8)
    }

    func handlerAdded(to connection: Connection) {
        guard healthRequestLine != nil else { return answer(Self.refusal(reason), on: connection) }
        connection.setDeadline(after: wait)
    }

    func received(_ bytes: UnsafeRawBufferPointer, on connection: Connection) {
        guard let expected = healthRequestLine, !connection.isClosed else { return }
        line.append(contentsOf: bytes.prefix(expected.count - line.count))
        if line.count == expected.count {
            answer(line == expected ? Self.healthyResponse : Self.refusal(reason), on: connection)
        } else if !expected.starts(with: line) {
            answer(Self.refusal(reason), on: connection)
        }  // else: a prefix of the health check so far; wait for more
    }

    func inputEnded(on connection: Connection) { answer(Self.refusal(reason), on: connection) }

    func deadlinePassed(on connection: Connection) { answer(Self.refusal(reason), on: connection) }

    private func answer(_ response: [UInt8], on connection: Connection) {
        connection.setDeadline(after: nil)
        connection.write(response)
        connection.close()
    }
}
