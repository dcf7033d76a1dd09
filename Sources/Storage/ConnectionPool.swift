import Dispatch
import Synchronization

/// One pooled read-only connection. Whoever took it from the pool owns it exclusively until it
/// gives it back, which is what makes the unchecked Sendable sound.
final class ReaderSlot<C: SQLConnection>: @unchecked Sendable {
    /// The reader connection.
    let connection: C

    /// Wraps `connection`.
    init(_ connection: C) { self.connection = connection }
}

/// A lock-protected free list of reader connections. A reader is handed to a waiter in FIFO
/// order; async waiters get it on the readers' queue, so no thread blocks while the pool is empty;
/// blocked (`acquireSync`) waiters get it straight from the releasing thread.
final class ReaderPool<C: SQLConnection>: Sendable {
    /// Called with a reader, or nil when the pool is closed.
    typealias Handler = @Sendable (ReaderSlot<C>?) -> Void

    /// A caller waiting for a reader: an async one is called on the readers' queue; a thread
    /// blocked in `acquireSync` is handed the reader directly by whoever releases it. (Waking a
    /// blocked thread must not need another Dispatch thread: with every pool thread blocked in
    /// `acquireSync` — 1,000 WebSocket snapshots at once — that wake-up never ran and all reads hung.)
    private enum Waiter {
        case async(Handler)
        case blocked(Handoff)

        /// Delivers `slot` (nil: closed).
        func resume(_ slot: ReaderSlot<C>?, on queue: DispatchQueue) {
            switch self {
            case .async(let handler): queue.async { handler(slot) }
            case .blocked(let handoff):
                handoff.slot = slot
                handoff.ready.signal()
            }
        }
    }

    /// The mutable part of the pool.
    private struct State {
        /// Readers nobody holds.
        var idle: [ReaderSlot<C>]
        /// Callers waiting for a reader, oldest first.
        var waiters: [Waiter] = []
        /// Set by `close()`.
        var closed = false
    }

    /// Concurrent queue on which async read bodies run.
    private let queue: DispatchQueue
    /// The guarded state.
    private let state: Mutex<State>

    /// Pools `connections`.
    init(_ connections: [C], label: String) {
        state = Mutex(State(idle: connections.map(ReaderSlot.init)))
        queue = DispatchQueue(label: label, attributes: .concurrent)
    }

    /// Calls `handler` on the readers' queue with a reader as soon as one is free (nil if closed).
    /// The handler must give the reader back with `release`.
    func acquire(_ handler: @escaping Handler) {
        switch take(orWait: .async(handler)) {
        case .slot(let slot): queue.async { handler(slot) }
        case .closed: queue.async { handler(nil) }
        case .queued: break
        }
    }

    /// Blocks the calling thread until a reader is free; throws once the pool is closed.
    func acquireSync() throws(StorageError) -> ReaderSlot<C> {
        let handoff = Handoff()
        switch take(orWait: .blocked(handoff)) {
        case .slot(let slot): return slot
        case .closed: throw .closed
        case .queued: handoff.ready.wait()
        }
        guard let slot = handoff.slot else { throw .closed }
        return slot
    }

    /// Gives `slot` back: to the oldest waiter, or to the free list (closing it if the pool closed).
    func release(_ slot: ReaderSlot<C>) {
        let next: Waiter? = state.withLock { state in
            if state.closed {
                slot.connection.close()
                return nil
            }
            if !state.waiters.isEmpty { return state.waiters.removeFirst() }
            state.idle.append(slot)
            return nil
        }
        next?.resume(slot, on: queue)
    }

    /// Calls `body` with every idle reader's connection, under the pool's lock (nobody else holds them).
    func withIdleConnections<T>(_ body: ([C]) throws -> T) rethrows -> T {
        try state.withLock { state in try body(state.idle.map(\.connection)) }
    }

    /// Closes idle readers now and busy ones when released; pending waiters get nil.
    func close() {
        let waiters: [Waiter] = state.withLock { state in
            state.closed = true
            for slot in state.idle { slot.connection.close() }
            state.idle.removeAll()
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(nil, on: queue) }
    }

    /// What one attempt to take a reader found.
    private enum Acquisition {
        case slot(ReaderSlot<C>), closed, queued
    }

    /// One attempt of `acquire` and `acquireSync`: a free reader, or `waiter` queued behind the
    /// others (nothing once the pool is closed).
    private func take(orWait waiter: Waiter) -> Acquisition {
        state.withLock { state in
            if state.closed { return .closed }
            if let slot = state.idle.popLast() { return .slot(slot) }
            state.waiters.append(waiter)
            return .queued
        }
    }

    /// Carries a reader from the releasing thread to a thread blocked in `acquireSync`; the
    /// semaphore orders the write before the read, which makes the unchecked Sendable sound.
    private final class Handoff: @unchecked Sendable {
        /// The reader handed over, or nil if the pool closed.
        var slot: ReaderSlot<C>?
        /// Signalled once `slot` is set.
        let ready = DispatchSemaphore(value: 0)
    }
}
