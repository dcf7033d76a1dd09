import Dispatch
import Synchronization

/// Receives the timing of every transaction run through `write`, `read`, `writeSync` and `readSync`
/// (not `withWriter`: migrations, PRAGMAs, checkpoints). Called on the thread that ran the
/// transaction, right after it ended (committed or rolled back): must be cheap and never block.
public protocol DatabaseObserver: Sendable {
    /// A transaction on `side` waited `waitNanoseconds` for its connection (the writer queue, or a
    /// free reader) and then ran for `runNanoseconds` from BEGIN to COMMIT/ROLLBACK.
    func transactionFinished(_ side: DatabaseSide, waitNanoseconds: UInt64, runNanoseconds: UInt64)
    /// A transaction failed because no writable primary could be reached (an engine with primaries:
    /// the server is unreachable or restarting, or a write reached a read-only standby). Called on the
    /// connection's thread; the default does nothing.
    func primaryUnreachable()
    /// A transaction ended successfully on the primary. Called on the connection's thread; the default
    /// does nothing.
    func primaryReached()
}

extension DatabaseObserver {
    /// Does nothing: an engine without primaries (SQLite) never calls it.
    public func primaryUnreachable() {}
    /// Does nothing: an engine without primaries (SQLite) never calls it.
    public func primaryReached() {}
}

/// Which side of the database a timed transaction ran on.
public enum DatabaseSide: String, Sendable {
    /// On the writer connection (`.immediate`).
    case write
    /// On a pooled reader connection (`.deferred`).
    case read
}

/// Monotonic nanoseconds for transaction timings (only read when an observer is set).
@inline(__always)
private func uptimeNanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// The queues every backend runs its blocking engine calls on: one writer connection owned by a
/// serial queue, and a pool of reader connections so reads run concurrently with the writer and
/// each other. `SQLiteDatabase` and `Postgres.PostgresDatabase` are this plus their engine's extras.
///
/// Never call the blocking or async entry points from inside a `write`/`withWriter` body (the writer
/// queue would wait on itself), nor `readSync` from inside a read body (the pool may be empty).
public final class ConnectionQueues<C: SQLConnection>: Sendable {
    /// Told how long each transaction waited and ran; nil: nothing timed.
    public let observer: (any DatabaseObserver)?
    /// The writer's serial queue; the writer connection is touched only on it.
    private let writerQueue: DispatchQueue
    /// The writer connection (owned by `writerQueue`).
    private let writer: WriterSlot<C>
    /// Where `.immediate` writes wait: the writer alone (and every write when `concurrentLane` has no
    /// connection: SQLite).
    private let writerLane: WriteLane
    /// Where `.concurrent` writes wait: connections of their own, each running its own group commits
    /// beside the others (PostgreSQL); empty for an engine with one writer at a time.
    private let concurrentLane: WriteLane
    /// The reader connections.
    private let readers: ReaderPool<C>
    /// Called after every committed `write`/`writeSync` (see `onCommit`). Held in a struct, never as a
    /// bare closure: a closure stored directly as a generic `Mutex` value is reabstracted on every
    /// `inout` write-back of `withLock`, so each call wrapped it in one more thunk — after N commits a
    /// call walked N nested thunks, and the process overflowed its stack after ~400,000 commits
    /// (`CommitObserverTests`).
    private let commitObserver = Mutex<CommitObserver?>(nil)
    /// Writes waiting for a lane's writers, oldest first (see `write`), and the writers that take
    /// them: each connection is touched only on its slot's queue; a write is taken by whichever of
    /// them drains the list first.
    private final class WriteLane: Sendable {
        let pending = Mutex<[PendingWrite]>([])
        let slots: [WriterSlot<C>]
        /// Which slot the next drain is asked of (round robin).
        private let turn = Atomic<Int>(0)

        init(_ slots: [WriterSlot<C>]) { self.slots = slots }

        /// Asks the next slot to drain the list on its queue (one drain per queued write, so every
        /// write is taken by this drain or an earlier one).
        func schedule(_ drain: @escaping @Sendable (WriteLane, WriterSlot<C>) -> Void) {
            let slot = slots[turn.add(1, ordering: .relaxed).oldValue % slots.count]
            slot.queue.async { drain(self, slot) }
        }
    }

    /// The commit callback, boxed in a struct so its stored representation is fixed (see above).
    private struct CommitObserver: Sendable {
        let call: @Sendable () -> Void
    }

    /// Takes ownership of `writer`, `readers` (at least one) and `concurrentWriters` (connections
    /// for `.concurrent` writes; none: they queue for `writer`). `label` names the queues.
    public init(writer: C, readers: [C], concurrentWriters: [C] = [], label: String, observer: (any DatabaseObserver)?) {
        precondition(!readers.isEmpty, "a database needs at least one reader connection")
        writerQueue = DispatchQueue(label: "\(label).writer")
        self.writer = WriterSlot(writer, queue: writerQueue)
        writerLane = WriteLane([self.writer])
        concurrentLane = WriteLane(
            concurrentWriters.enumerated().map { WriterSlot($1, queue: DispatchQueue(label: "\(label).writer\($0 + 1)")) })
        self.readers = ReaderPool(readers, label: "\(label).readers")
        self.observer = observer
    }

    /// Runs body on a writer queue inside one transaction of `kind`; commits or rolls back.
    ///
    /// Group commit: writes that queue up while the writer is busy share one transaction and one
    /// COMMIT (at most `maxWritesPerCommit`), each inside its own SAVEPOINT, so a body that throws
    /// undoes only its own statements and fails alone (except when a statement it held back with
    /// `SQLConnection.send` fails: that fails the whole transaction). The caller resumes only after the COMMIT that
    /// holds its work succeeded — an acknowledged write is durable exactly as a lone one — and a
    /// failed COMMIT fails every write of the batch. Why: a COMMIT that waits for the disk
    /// (PostgreSQL's default, SQLite `--durability full`) costs one flush; under the cross-instance
    /// writer lock flushes cannot overlap, so one flush per write capped writes/s at the disk's flush
    /// rate (docs/scaling.md). Bodies see the writes batched before them, as they would have
    /// committed first.
    ///
    /// `kind` is `.immediate` (the write runs alone across instances) or `.concurrent` (it runs beside
    /// other concurrent writes; its body locks what it decides on — `TransactionKind`). Concurrent
    /// writes queue for the concurrent writer connections when there are some (PostgreSQL: each runs
    /// its own group commits, so several transactions of this instance wait on the network at once),
    /// else for the writer like the rest. A batch holds writes of one kind. In a concurrent batch every write after the first locks rows
    /// without waiting (`RowLockWait.fail`); one that finds a row locked is not failed: the batch
    /// commits without it and it runs first in the next transaction, where it may wait. One that throws
    /// `StorageError.exclusiveWriteNeeded` (`SQLConnection.writesAlone`) runs again as `.immediate`.
    public func write<T: Sendable>(
        _ kind: TransactionKind = .immediate, _ body: @escaping @Sendable (any SQLConnection) throws -> T
    ) async throws -> T {
        precondition(kind == .immediate || kind == .concurrent, "a write is .immediate or .concurrent")
        let queued = observer == nil ? 0 : uptimeNanoseconds()
        return try await withCheckedThrowingContinuation { continuation in
            let write = PendingWrite(
                queued: queued, kind: kind,
                run: { connection in
                    let value = try body(connection)
                    return { continuation.resume(returning: value) }
                },
                fail: { continuation.resume(throwing: $0) })
            let lane = kind == .concurrent && !concurrentLane.slots.isEmpty ? concurrentLane : writerLane
            lane.pending.withLock { $0.append(write) }
            lane.schedule { lane, slot in self.commitPendingWrites(lane, on: slot) }
        }
    }

    /// Async writes waiting for a writer (queued behind the running transactions).
    public var queuedWrites: Int { writerLane.pending.withLock { $0.count } + concurrentLane.pending.withLock { $0.count } }

    /// Writes at most one COMMIT carries (see `write`): bounds how long the first of a batch waits
    /// for the others' statements.
    public static var maxWritesPerCommit: Int { 64 }

    /// A queued `write`: `run` executes the body inside the open transaction and returns what
    /// resumes the caller once the transaction committed; `fail` resumes it with an error.
    private struct PendingWrite: Sendable {
        let queued: UInt64
        /// `.immediate` or `.concurrent`; a concurrent write that needs to run alone becomes immediate.
        var kind: TransactionKind
        let run: @Sendable (any SQLConnection) throws -> @Sendable () -> Void
        let fail: @Sendable (any Error) -> Void
    }

    /// Runs the queued writes (up to `maxWritesPerCommit`, all of the first one's kind) in one
    /// transaction on the writer queue. Stops the batch at the first body that throws: the writes
    /// after it go back to the head of the queue for the next transaction, so none runs in a
    /// transaction an engine may have aborted; a body that found a row locked goes back with them.
    private func commitPendingWrites(_ lane: WriteLane, on slot: WriterSlot<C>) {
        dispatchPrecondition(condition: .onQueue(slot.queue))
        let batch = lane.pending.withLock { queue in
            guard let kind = queue.first?.kind else { return [PendingWrite]() }
            let taken = Array(queue.prefix(Self.maxWritesPerCommit).prefix { $0.kind == kind })
            queue.removeFirst(taken.count)
            return taken
        }
        guard let kind = batch.first?.kind else { return }
        let started = observer == nil ? 0 : uptimeNanoseconds()
        var acknowledged: [@Sendable () -> Void] = []
        var failed: (index: Int, error: any Error)?
        let outcome = Result {
            try slot.connection().transaction(kind) { transaction in
                for (index, write) in batch.enumerated() {
                    // Only the first write may wait for a row lock: it holds none yet (`RowLockWait`).
                    transaction.rowLockWait = index == 0 ? .wait : .fail
                    do {
                        // The first write needs no savepoint: nothing else ran in the transaction yet,
                        // so its failure rolls the whole transaction back and the rest run in the next.
                        acknowledged.append(
                            index == 0
                                ? try write.run(transaction)
                                : try transaction.transaction(kind) { try write.run($0) })
                    } catch {
                        failed = (index, error)
                        if index == 0 { throw error }
                        return
                    }
                }
            }
        }
        if let observer {
            for write in batch { Self.report(observer, .write, write.queued, started) }
        }
        if let failed {
            let retried = failed.index > 0 && failed.error.storageFailure?.isRowLockUnavailable == true
            if failed.error as? StorageError == .exclusiveWriteNeeded, kind == .concurrent {
                // Again as `.immediate`, first in the writer's queue; it changed nothing (`writesAlone`).
                var alone = batch[failed.index]
                alone.kind = .immediate
                writerLane.pending.withLock { $0.insert(alone, at: 0) }
                writerLane.schedule { lane, slot in self.commitPendingWrites(lane, on: slot) }
            } else if !retried {
                batch[failed.index].fail(failed.error)
            }
            let rest = batch[(retried ? failed.index : failed.index + 1)...]
            if !rest.isEmpty {
                lane.pending.withLock { $0.insert(contentsOf: rest, at: 0) }
                lane.schedule { lane, slot in self.commitPendingWrites(lane, on: slot) }
            }
        }
        switch outcome {
        case .success:
            if !acknowledged.isEmpty { committed() }
            for resume in acknowledged { resume() }
        case .failure(let error):
            // BEGIN, the lock, a RELEASE or the COMMIT failed: nothing of the batch is stored.
            // Every write before the one that failed on its own ran in it (all of them when none did).
            for write in batch[..<(failed?.index ?? batch.count)] { write.fail(error) }
        }
    }

    private static func report(_ observer: any DatabaseObserver, _ side: DatabaseSide, _ queued: UInt64, _ started: UInt64) {
        observer.transactionFinished(
            side, waitNanoseconds: started &- queued, runNanoseconds: uptimeNanoseconds() &- started)
    }

    /// Sets the one observer called (on the writer queue, right after the COMMIT, so a reader that
    /// starts now sees the change) after every successful `write`/`writeSync` of this process. It
    /// must only schedule work (no database calls). Replaces any earlier observer.
    public func onCommit(_ observer: @escaping @Sendable () -> Void) {
        commitObserver.withLock { $0 = CommitObserver(call: observer) }
    }

    private func committed() {
        commitObserver.withLock { $0 }?.call()
    }

    /// Runs body on a reader connection, inside a `.deferred` transaction (one consistent snapshot) or,
    /// for `.statement`, as one statement outside one, on the readers' Dispatch queue; waits without
    /// blocking a thread when all readers are busy.
    public func read<T: Sendable>(
        _ kind: TransactionKind = .deferred, _ body: @escaping @Sendable (any SQLConnection) throws -> T
    ) async throws -> T {
        precondition(kind == .deferred || kind == .statement, "a read is .deferred or .statement")
        let observer = observer
        let queued = observer == nil ? 0 : uptimeNanoseconds()
        return try await withCheckedThrowingContinuation { continuation in
            readers.acquire { [readers] slot in
                guard let slot else { return continuation.resume(throwing: StorageError.closed) }
                let started = observer == nil ? 0 : uptimeNanoseconds()
                let result = Result { try slot.connection.transaction(kind, body) }
                readers.release(slot)
                if let observer { Self.report(observer, .read, queued, started) }
                continuation.resume(with: result)
            }
        }
    }

    /// Blocking `write`: runs body on the writer queue in one transaction of `kind` (`.immediate` or
    /// `.concurrent`, as in `write`) of its own, and waits.
    /// A `.concurrent` body that throws `StorageError.exclusiveWriteNeeded` runs again as `.immediate`.
    public func writeSync<T>(_ kind: TransactionKind = .immediate, _ body: (any SQLConnection) throws -> T) throws -> T {
        precondition(kind == .immediate || kind == .concurrent, "a write is .immediate or .concurrent")
        do {
            return try writeSyncOnce(kind, body)
        } catch StorageError.exclusiveWriteNeeded where kind == .concurrent {
            return try writeSyncOnce(.immediate, body)
        }
    }

    /// `writeSync` without the second run.
    private func writeSyncOnce<T>(_ kind: TransactionKind, _ body: (any SQLConnection) throws -> T) throws -> T {
        let observer = observer
        let queued = observer == nil ? 0 : uptimeNanoseconds()
        let result = try withWriter { connection in
            let started = observer == nil ? 0 : uptimeNanoseconds()
            defer { if let observer { Self.report(observer, .write, queued, started) } }
            return try connection.transaction(kind, body)
        }
        committed()
        return result
    }

    /// Blocking `read`: takes a reader (waiting if all are busy) and runs body on the calling thread
    /// inside a `.deferred` transaction.
    public func readSync<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        let observer = observer
        let queued = observer == nil ? 0 : uptimeNanoseconds()
        return try withReader { connection in
            let started = observer == nil ? 0 : uptimeNanoseconds()
            defer { if let observer { Self.report(observer, .read, queued, started) } }
            return try connection.transaction(.deferred, body)
        }
    }

    /// Runs `body` with a reader connection itself, outside any transaction (the caller opens one).
    public func withReader<T>(_ body: (C) throws -> T) throws -> T {
        let slot = try readers.acquireSync()
        defer { readers.release(slot) }
        return try body(slot.connection)
    }

    /// Runs `body` on the writer connection WITHOUT an enclosing transaction (migrations, PRAGMAs).
    public func withWriter<T>(_ body: (C) throws -> T) throws -> T {
        dispatchPrecondition(condition: .notOnQueue(writerQueue))
        return try writerQueue.sync {
            try body(writer.connection())
        }
    }

    /// Calls `body` with every idle reader connection (nobody else holds them meanwhile).
    public func withIdleReaders<T>(_ body: ([C]) throws -> T) rethrows -> T {
        try readers.withIdleConnections(body)
    }

    /// Closes the writer (after queued writes finish) and the readers (busy ones when released).
    /// Later calls throw `StorageError.closed`. Idempotent.
    public func close() {
        dispatchPrecondition(condition: .notOnQueue(writerQueue))
        writerQueue.sync { writer.close() }
        for slot in concurrentLane.slots { slot.queue.sync { slot.close() } }
        readers.close()
    }
}

/// Holds the writer connection. Only `queue` touches it (checked with `dispatchPrecondition`),
/// which is what makes the unchecked Sendable sound.
final class WriterSlot<C: SQLConnection>: @unchecked Sendable {
    /// The connection; nil after close.
    private var open: C?
    /// The serial queue that owns the connection.
    let queue: DispatchQueue

    /// Takes ownership of `connection` for `queue`.
    init(_ connection: C, queue: DispatchQueue) {
        open = connection
        self.queue = queue
    }

    /// The connection, or `StorageError.closed`. Must be called on the owning queue.
    func connection() throws(StorageError) -> C {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let open else { throw .closed }
        return open
    }

    /// Closes and drops the connection. Must be called on the owning queue.
    func close() {
        dispatchPrecondition(condition: .onQueue(queue))
        open?.close()
        open = nil
    }
}

/// A database whose entry points are its `ConnectionQueues`: the forwarding is written here once for
/// both engines (an engine overrides one only when it must add to it).
public protocol QueuedDatabase: SQLDatabase {
    /// The engine's connection type.
    associatedtype EngineConnection: SQLConnection
    /// The writer queue and reader pool that run every transaction.
    var queues: ConnectionQueues<EngineConnection> { get }
}

extension QueuedDatabase {
    @discardableResult
    public func write<T: Sendable>(
        _ kind: TransactionKind, _ body: @escaping @Sendable (any SQLConnection) throws -> T
    ) async throws -> T {
        try await queues.write(kind, body)
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await queues.read(.deferred, body)
    }

    public func readStatement<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await queues.read(.statement, body)
    }

    @discardableResult
    public func writeSync<T>(_ kind: TransactionKind, _ body: (any SQLConnection) throws -> T) throws -> T {
        try queues.writeSync(kind, body)
    }

    public func readSync<T>(_ body: (any SQLConnection) throws -> T) throws -> T { try queues.readSync(body) }

    @discardableResult
    public func withWriter<T>(_ body: (any SQLConnection) throws -> T) throws -> T { try queues.withWriter(body) }

    public func onCommit(_ observer: @escaping @Sendable () -> Void) { queues.onCommit(observer) }

    public var queuedWrites: Int { queues.queuedWrites }

    public func close() { queues.close() }
}
