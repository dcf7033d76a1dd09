public import Dispatch
import Glibc
import Synchronization

/// One event loop: a serial `DispatchQueue` on which connections, their sources and their timers
/// live. Everything that belongs to a connection is touched only on its loop, so connection state
/// needs no locks (check with `preconditionInEventLoop()`).
///
/// libdispatch multiplexes the sources of every loop over epoll; a loop is not a thread of its own,
/// but its work never runs concurrently with itself.
public final class EventLoop: Sendable, CustomStringConvertible {
    /// The serial queue that is this loop. Sources and timers of this loop target it.
    public let queue: DispatchQueue
    /// Position in its group (0-based), for logs.
    public let index: Int
    /// Loop-confined state: read buffer, connection registry, deadline sweep, `Date` cache.
    let state: LoopState
    /// The clock this loop's timers run on (`schedule`, the deadline sweep): the server's
    /// `ServerConfiguration.clock`, so a test's manual clock drives them.
    public let clock: any MonotonicClock

    private static let identityKey = DispatchSpecificKey<Int>()
    private static let nextIdentity = Atomic<Int>(1)
    private let identity: Int

    /// Creates a loop named `label` (the queue label shows up in debuggers and crash logs) whose
    /// timers run on `clock`.
    public init(label: String = "chronir.loop", index: Int = 0, clock: any MonotonicClock = SystemMonotonicClock()) {
        self.index = index
        self.clock = clock
        self.queue = DispatchQueue(label: "\(label).\(index)", qos: .userInitiated)
        self.identity = Self.nextIdentity.wrappingAdd(1, ordering: .relaxed).oldValue
        self.state = LoopState()
        queue.setSpecific(key: Self.identityKey, value: identity)
        state.loop = Unmanaged.passUnretained(self)
    }

    /// `EventLoop(chronir.loop.0)`.
    public var description: String { "EventLoop(\(queue.label))" }

    /// Whether the caller is running on this loop.
    public var inEventLoop: Bool { DispatchQueue.getSpecific(key: Self.identityKey) == identity }

    /// Traps unless the caller is running on this loop.
    public func preconditionInEventLoop() { dispatchPrecondition(condition: .onQueue(queue)) }

    /// Runs `work` on this loop, after what is already queued.
    public func execute(_ work: @escaping @Sendable () -> Void) { queue.async(execute: work) }

    /// Runs `work` on this loop once `delay` has passed on the loop's clock.
    /// Cancel the returned timer to keep it from running (from any thread).
    @discardableResult
    public func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> Scheduled {
        clock.scheduleTimer(on: queue, after: UInt64(delay.clampedNanoseconds), repeating: nil, leeway: 1_000_000, work)
    }

    /// Runs `work` on this loop every `interval` of the loop's clock (first after one interval) until cancelled.
    @discardableResult
    public func scheduleRepeating(every interval: Duration, _ work: @escaping @Sendable () -> Void) -> Scheduled {
        let nanos = UInt64(max(interval.clampedNanoseconds, 1_000))
        return clock.scheduleTimer(on: queue, after: nanos, repeating: nanos, leeway: min(nanos / 10, 10_000_000), work)
    }
}

/// A timer created by `EventLoop.schedule` or `MonotonicClock.scheduleTimer`. `cancel()` is
/// thread-safe and idempotent.
public final class Scheduled: Sendable {
    private let timer: any CancellableTimer
    /// The handle of `timer` (for a clock's `scheduleTimer`).
    public init(_ timer: any CancellableTimer) { self.timer = timer }
    /// Stops the timer; its work will not start afterwards (work already running finishes).
    public func cancel() { timer.cancel() }
    /// Whether `cancel()` was called or a one-shot timer already fired.
    public var isCancelled: Bool { timer.isCancelled }
}

/// A fixed set of event loops; connections are spread over them round-robin.
public final class EventLoopGroup: Sendable {
    /// The loops, in index order.
    public let loops: [EventLoop]
    private let cursor = Atomic<Int>(0)

    /// Creates `loopCount` loops (default: the active processor count, at least 1) whose timers run on `clock`.
    public init(
        loopCount: Int = System.activeProcessorCount, label: String = "chronir.loop",
        clock: any MonotonicClock = SystemMonotonicClock()
    ) {
        let count = max(1, loopCount)
        loops = (0..<count).map { EventLoop(label: label, index: $0, clock: clock) }
    }

    /// The next loop, round-robin (thread-safe).
    public func next() -> EventLoop {
        if loops.count == 1 { return loops[0] }
        let n = cursor.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[Int(UInt(bitPattern: n) % UInt(loops.count))]
    }
}

/// Facts about the machine.
public enum System {
    /// Processors available to this process (`sysconf(_SC_NPROCESSORS_ONLN)`), at least 1.
    public static var activeProcessorCount: Int {
        max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }
}

/// Nanoseconds on the monotonic clock (`CLOCK_MONOTONIC`): for deadlines, never for timestamps.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

extension Duration {
    /// The duration in whole nanoseconds, negative durations as 0, huge ones saturated.
    var clampedNanoseconds: Int {
        let (seconds, attoseconds) = components
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
        if seconds >= Int64(Int.max / 1_000_000_000) - 1 { return Int.max / 2 }
        return Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    }
}

/// A loop runs Swift tasks that prefer it (`Task(executorPreference:)`): a request's handler task
/// starts, and resumes after every `await` that left it, on its connection's loop instead of the
/// global cooperative pool, so a request crosses threads only to the database's queues and back —
/// the hop from the loop to the pool at its start and the one back to the loop with its response are
/// gone (docs/scaling.md). The task's code runs serially with the loop's I/O: work that takes long
/// belongs on a `WorkerPool`, as it already must not hold a pool thread.
extension EventLoop: TaskExecutor {
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
