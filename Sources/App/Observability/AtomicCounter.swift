import Synchronization

/// A lock-free increasing counter (request ids, round-robin choices).
final class AtomicCounter: Sendable {
    private let value = Atomic<UInt64>(0)
    /// Returns the next value, starting at 1.
    func next() -> UInt64 { value.wrappingAdd(1, ordering: .relaxed).newValue }
}
