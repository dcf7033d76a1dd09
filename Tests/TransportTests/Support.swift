import Dispatch
import Synchronization
import TestSupport
@testable import Transport

/// Collects a server's `TransportEvent`s for assertions.
final class EventLog: Sendable {
    private let events = Mutex<[TransportEvent]>([])
    var hook: @Sendable (TransportEvent) -> Void { { event in self.events.withLock { $0.append(event) } } }
    var all: [TransportEvent] { events.withLock { $0 } }

    func count(where predicate: (TransportEvent) -> Bool) -> Int { all.filter(predicate).count }
}

/// A configuration for tests: ephemeral port on loopback, two loops.
func testConfiguration(_ adjust: (inout ServerConfiguration) -> Void = { _ in }) -> ServerConfiguration {
    var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
    configuration.loopCount = 2
    adjust(&configuration)
    return configuration
}

/// Shuts `server` down and waits (up to 10 s) for the completion; true if it fired.
@discardableResult
func shutdownAndWait(_ server: HTTPServer, timeout: Duration = .seconds(10)) -> Bool {
    let done = DispatchSemaphore(value: 0)
    server.shutdown { done.signal() }
    return done.wait(timeout: .now() + .nanoseconds(Int(timeout.components.seconds) * 1_000_000_000)) == .success
}

/// A thread-safe integer shared between a test and server-side handlers.
final class Counter: Sendable {
    private let atomic = Atomic<Int>(0)
    init(_ value: Int = 0) { atomic.store(value, ordering: .relaxed) }
    var value: Int { atomic.load(ordering: .relaxed) }
    func add(_ n: Int = 1) { atomic.add(n, ordering: .relaxed) }
    func raise(to n: Int) { _ = atomic.max(n, ordering: .relaxed) }
    func store(_ n: Int) { atomic.store(n, ordering: .relaxed) }
}

extension HTTPServer {
    /// Whether some connection holds more output than `maxOutboundBytes` allows: it then reads and
    /// parses nothing more until its peer has read (asked on each loop, in its turn). A test waits for
    /// this state instead of for the server to have gone quiet for some time.
    var hasUnwritableConnection: Bool {
        group.loops.contains { loop in loop.queue.sync { loop.state.connections.contains { !$0.isWritable } } }
    }

    /// Returns once every loop has run what was queued on it before the call.
    func drainLoops() {
        for loop in group.loops { loop.queue.sync {} }
    }
}
