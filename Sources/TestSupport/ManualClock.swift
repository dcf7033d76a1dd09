public import Dispatch
public import Domain
import Synchronization
public import Transport

/// A clock that moves only when a test says so: a wall clock for Domain and App (`WallClock`), and the
/// monotonic clock of transport deadlines and timers (`MonotonicClock`, `ServerConfiguration.clock`;
/// the same reading in nanoseconds), so a test moves time past a deadline instead of sleeping until it.
///
/// Timers scheduled on it (`scheduleTimer`: an event loop's `schedule`, its deadline sweep, the
/// shutdown grace period, a `Sweeper`'s tick) run when `advance` or `set` moves the clock to or past
/// their deadline — each on its queue, and before `advance` returns, so the test sees their effects
/// at once. Missed repeats of a repeating timer run once per move, as a Dispatch timer's do. Never
/// move the clock from a timer's own queue (it would wait for itself).
public final class ManualClock: WallClock {
    private let now: Mutex<Int64>
    private let timers = Mutex<[Entry]>([])

    /// Starts at `milliseconds` (default: 2026-02-06T09:00:00.000Z).
    public init(milliseconds: Int64 = 1_770_368_400_000) { now = Mutex(milliseconds) }
    public func nowMilliseconds() -> Int64 { now.withLock { $0 } }

    /// Moves the clock forward by `milliseconds`, then runs the timers that fell due.
    public func advance(by milliseconds: Int64) {
        now.withLock { $0 += milliseconds }
        runDueTimers()
    }

    /// Sets the clock, then runs the timers that fell due (none when it moved back).
    public func set(_ milliseconds: Int64) {
        now.withLock { $0 = milliseconds }
        runDueTimers()
    }

    /// Timers armed and not yet fired (one-shot) or cancelled.
    public var pendingTimerCount: Int { timers.withLock { $0.filter { !$0.timer.isCancelled }.count } }

    private struct Entry {
        let timer: ManualTimer
        var deadline: UInt64
        let interval: UInt64?
        let queue: DispatchQueue
        let work: @Sendable () -> Void
    }

    /// Runs due timers one at a time, earliest first, until none is due (timers armed by a timer's
    /// work and already due run too; at most 100,000 runs per move, against a zero-interval loop).
    private func runDueTimers() {
        for _ in 0..<100_000 {
            let reading = nowNanoseconds()
            let due: Entry? = timers.withLock { entries in
                entries.removeAll { $0.timer.isCancelled }
                var earliest: Int?
                for index in entries.indices where entries[index].deadline <= reading {
                    if earliest.map({ entries[index].deadline < entries[$0].deadline }) ?? true { earliest = index }
                }
                guard let index = earliest else { return nil }
                let entry = entries[index]
                if let interval = entry.interval, interval > 0 {
                    let missed = (reading - entry.deadline) / interval + 1
                    entries[index].deadline = entry.deadline &+ missed &* interval
                } else {
                    entries.remove(at: index)
                    guard entry.timer.fire() else { return nil }  // cancelled meanwhile
                }
                return entry
            }
            guard let due else { return }
            let repeating = due.interval != nil
            due.queue.sync {
                if !repeating || !due.timer.isCancelled { due.work() }
            }
        }
    }
}

extension ManualClock: MonotonicClock {
    /// The reading in nanoseconds (milliseconds × 10⁶): advancing the clock moves transport deadlines.
    public func nowNanoseconds() -> UInt64 { UInt64(nowMilliseconds()) &* 1_000_000 }

    /// Arms a timer that `advance`/`set` run once the clock reaches `delay` past now (`leeway` is ignored:
    /// manual time has no lateness).
    public func scheduleTimer(
        on queue: DispatchQueue, after delay: UInt64, repeating interval: UInt64?, leeway: UInt64,
        _ work: @escaping @Sendable () -> Void
    ) -> Scheduled {
        // A cancelled timer leaves the clock at once: its work (which may hold what holds this clock,
        // such as a server's shutdown grace timer) is released with it, not kept until a later move.
        let timer = ManualTimer { [weak self] timer in self?.timers.withLock { $0.removeAll { $0.timer === timer } } }
        let deadline = nowNanoseconds() &+ delay
        timers.withLock { $0.append(Entry(timer: timer, deadline: deadline, interval: interval, queue: queue, work: work)) }
        return Scheduled(timer)
    }
}

/// A `ManualClock` timer's handle: armed, then cancelled or (one-shot) fired.
private final class ManualTimer: CancellableTimer, Sendable {
    private let done = Atomic<Bool>(false)
    /// Removes this timer from its clock (called once, by the first `cancel`).
    private let remove: @Sendable (ManualTimer) -> Void

    init(remove: @escaping @Sendable (ManualTimer) -> Void) { self.remove = remove }

    func cancel() {
        guard done.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged else { return }
        remove(self)
    }
    var isCancelled: Bool { done.load(ordering: .sequentiallyConsistent) }
    /// Marks a one-shot timer fired; false when it was cancelled first.
    func fire() -> Bool { done.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged }
}
