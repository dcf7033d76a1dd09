import Dispatch
import Synchronization

/// A fixed set of serial queues for blocking work, so it never runs on an event loop and never
/// grows past `width` threads however many requests wait. The server runs three: one for blocking
/// I/O that must stay quick (static files, migration checks), one for password hashing (scrypt),
/// one for attachment decodes (`Services.decoding`), so neither hashing nor a decode can ever queue
/// in front of a static file.
///
/// A pool made with `maxQueued` is bounded: at most `width + maxQueued` jobs are accepted at once
/// (running or waiting), and `run` throws `Saturated` at once past that instead of queueing — the
/// caller answers `503` with `Retry-After` rather than letting the wait grow without bound.
public final class WorkerPool: Sendable {
    private let queues: [DispatchQueue]
    private let counter = AtomicCounter()
    /// Jobs accepted and not finished yet (running or queued).
    private let pending = Atomic<Int>(0)
    /// `width + maxQueued`, or nil for an unbounded pool.
    private let capacity: Int?

    /// Thrown by a bounded pool's `run` when `width + maxQueued` jobs are already accepted.
    public struct Saturated: Error, Equatable {
        /// Seconds a client is told to wait before retrying (`Retry-After`): queued hashes finish in
        /// well under a second at the interactive cost, so one second is enough for room to open.
        public static let retryAfterSeconds = 1
    }

    /// Creates `width` worker queues (at least one). `maxQueued` (nil: unbounded) is how many jobs
    /// may wait behind the running ones before `run` throws `Saturated`.
    public init(width: Int, maxQueued: Int? = nil, label: String = "chronir.worker") {
        queues = (0..<max(1, width)).map { DispatchQueue(label: "\(label).\($0)") }
        capacity = maxQueued.map { max(1, width) + max(0, $0) }
    }

    /// Threads of the pool.
    public var width: Int { queues.count }

    /// Jobs the pool accepts at once (`width + maxQueued`), or nil when it is unbounded.
    public var acceptedJobs: Int? { capacity }

    /// Jobs accepted and not finished yet (running or queued).
    public var pendingJobs: Int { pending.load(ordering: .relaxed) }

    /// Runs `body` on the next worker and returns its result to the caller's task. A bounded pool
    /// that is full throws `Saturated` without running `body`.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let accepted = pending.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue
        if let capacity, accepted > capacity {
            finished()
            throw Saturated()
        }
        let queue = queues[Int(counter.next() % UInt64(queues.count))]
        return try await withCheckedThrowingContinuation { continuation in
            queue.async {
                let result = Result { try body() }
                self.finished()
                continuation.resume(with: result)
            }
        }
    }

    private func finished() { pending.wrappingSubtract(1, ordering: .acquiringAndReleasing) }
}
