import Dispatch

/// A fixed set of serial queues for blocking CPU work (scrypt), so it never runs on an event loop
/// and never grows past `width` threads however many requests wait.
public final class WorkerPool: Sendable {
    private let queues: [DispatchQueue]
    private let counter = AtomicCounter()

    /// Creates `width` worker queues (at least one).
    public init(width: Int, label: String = "chronir.worker") {
        queues = (0..<max(1, width)).map { DispatchQueue(label: "\(label).\($0)") }
    }

    /// Runs `body` on the next worker and returns its result to the caller's task.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let queue = queues[Int(counter.next() % UInt64(queues.count))]
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
