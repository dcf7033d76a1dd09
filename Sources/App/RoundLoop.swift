@preconcurrency import Dispatch
import Foundation
import Synchronization

/// The clockwork the outbox dispatchers share (notifications and mail, docs/mail.md#pipeline): a
/// timer that starts a round every tick unless one is still running (never two at once in one
/// process), a stop flag a round checks between its batches, and a bounded wait for the round in
/// progress at shutdown. What a round does — claim with a lease, send, settle — is the dispatcher's.
final class RoundLoop: Sendable {
    private let label: String
    private let running = Mutex(false)
    private let stopped = Mutex(false)
    private let timer: Mutex<RepeatingTimer?> = Mutex(nil)

    /// A loop whose timer queue is named `label`.
    init(label: String) { self.label = label }

    /// Whether `stop` was called: a round that runs batch after batch checks it between batches.
    var isStopped: Bool { stopped.withLock { $0 } }

    /// Runs `round` every `tick` (first after one tick) as a task; a tick that finds the previous
    /// round still running does nothing.
    func start(tick: DispatchTimeInterval, round: @escaping @Sendable () async -> Void) {
        let repeating = RepeatingTimer(label: label, every: tick, leeway: .milliseconds(50), firstAfter: tick) { [self] in
            let idle = running.withLock { busy -> Bool in
                if busy { return false }
                busy = true
                return true
            }
            guard idle else { return }
            Task {
                defer { running.withLock { $0 = false } }
                await round()
            }
        }
        timer.withLock { $0 = repeating }
    }

    /// Stops future rounds (one in progress finishes: `waitUntilIdle`).
    func stop() {
        stopped.withLock { $0 = true }
        timer.withLock { $0?.stop() }
    }

    /// Waits (blocking) until no round is running, at most `timeout`; returns whether it is idle.
    func waitUntilIdle(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while running.withLock({ $0 }) {
            guard ContinuousClock.now < deadline else { return false }
            usleep(10_000)
        }
        return true
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
