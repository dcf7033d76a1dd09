@preconcurrency import Dispatch
import Synchronization

/// The clockwork the outbox dispatchers share (notifications and mail, docs/notifications.md#pipeline,
/// docs/mail.md#pipeline): one pass of rounds at a time per process, started by a timer at most one
/// `tick` after the last pass ended — earlier when the pass asked for it (the next delivery falls due
/// sooner) or when `wake` is called (something was queued); a `wake` during a pass makes another
/// follow at once. A stop flag the pass checks between its batches, and a bounded wait for the pass
/// in progress at shutdown. What a pass does — claim with a lease, send, settle — is the dispatcher's.
final class RoundLoop: Sendable {
    /// How late the timer may fire (a staged alarm fire is due at its instant: the lag starts there).
    static let leeway: DispatchTimeInterval = .milliseconds(2)

    /// Where the loop stands: one value under one lock, so no combination of flags can disagree.
    struct State {
        enum Pass: Sendable, Equatable {
            /// No pass running.
            case idle
            /// A pass is running; `wanted`: a pass was asked for meanwhile, so another follows at once.
            case running(wanted: Bool)
        }
        var pass = Pass.idle
        /// `stop` was called: no pass starts any more (one running finishes).
        var stopped = false
        /// The timer that starts passes; nil before `start`.
        var timer: (any DispatchSourceTimer)?
    }

    private let queue: DispatchQueue
    private let state = Mutex(State())
    /// Entered while a pass runs: `waitUntilIdle` waits on it.
    private let passes = DispatchGroup()

    /// A loop whose timer queue is named `label`.
    init(label: String) { queue = DispatchQueue(label: label) }

    /// Whether `stop` was called: a pass that runs batch after batch checks it between batches.
    var isStopped: Bool { state.withLock { $0.stopped } }

    /// Runs `pass` as a task, first after one `tick`. `pass` returns how many milliseconds until it
    /// wants the next one (nil: a tick; never more than a tick).
    func start(tick: DispatchTimeInterval, pass: @escaping @Sendable () async -> Int64?) {
        let source = DispatchSource.makeTimerSource(queue: queue)
        source.setEventHandler { [self] in begin(tick: tick, pass: pass) }
        source.schedule(deadline: .now() + tick, leeway: Self.leeway)
        state.withLock { $0.timer = source }
        source.resume()
    }

    /// Asks for a pass now; one already running is followed by another.
    func wake() {
        state.withLock { $0.timer?.schedule(deadline: .now(), leeway: Self.leeway) }
    }

    /// The timer's handler (on `queue`): one pass at a time; the next is armed when it ends.
    private func begin(tick: DispatchTimeInterval, pass: @escaping @Sendable () async -> Int64?) {
        let starts = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            guard state.pass == .idle else {
                state.pass = .running(wanted: true)
                return false
            }
            state.pass = .running(wanted: false)
            passes.enter()
            return true
        }
        guard starts else { return }
        Task {
            let soonest = await pass()
            state.withLock { state in
                let again = state.pass == .running(wanted: true)
                state.pass = .idle
                let wait = again ? 0 : min(Self.milliseconds(tick), max(0, soonest ?? Int64.max))
                state.timer?.schedule(deadline: .now() + .milliseconds(Int(wait)), leeway: Self.leeway)
            }
            passes.leave()
        }
    }

    /// `interval` in whole milliseconds (`.never`: a day).
    static func milliseconds(_ interval: DispatchTimeInterval) -> Int64 {
        switch interval {
        case .seconds(let seconds): Int64(seconds) * 1_000
        case .milliseconds(let milliseconds): Int64(milliseconds)
        case .microseconds(let microseconds): Int64(microseconds) / 1_000
        case .nanoseconds(let nanoseconds): Int64(nanoseconds) / 1_000_000
        case .never: 86_400_000
        @unknown default: 1_000
        }
    }

    /// Stops future passes (one in progress finishes: `waitUntilIdle`).
    func stop() {
        state.withLock { state in
            state.stopped = true
            state.timer?.cancel()
        }
        queue.sync {}
    }

    /// Waits (blocking) until no pass is running, at most `timeout`; returns whether it is idle.
    func waitUntilIdle(timeout: Duration) -> Bool {
        passes.wait(timeout: .now() + .nanoseconds(Self.nanoseconds(timeout))) == .success
    }

    /// `duration` in whole nanoseconds, for a Dispatch deadline (negative as 0, huge ones a day).
    static func nanoseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        if seconds < 0 { return 0 }
        if seconds >= 86_400 { return 86_400 * 1_000_000_000 }
        return Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    }

    /// `operation` over every element of `items`, at most `width` at once; results in completion order.
    static func boundedMap<Item: Sendable, Result: Sendable>(
        _ items: [Item], width: Int, _ operation: @escaping @Sendable (Item) async -> Result
    ) async -> [Result] {
        await withTaskGroup(of: Result.self) { group in
            var results: [Result] = []
            results.reserveCapacity(items.count)
            var next = items.makeIterator()
            for _ in 0..<max(1, width) {
                guard let item = next.next() else { break }
                group.addTask { await operation(item) }
            }
            while let result = await group.next() {
                results.append(result)
                if let item = next.next() { group.addTask { await operation(item) } }
            }
            return results
        }
    }
}
