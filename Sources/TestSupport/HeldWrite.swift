import Dispatch
public import Storage

/// A write transaction held open at a point the test chooses — another instance's write in the
/// middle of its work — so the test can check what its own writes do meanwhile (wait, skip the held
/// rows, fail). `init` returns once `body` ran inside `database.writeSync(kind)` and the transaction
/// is still open; `commit()` lets it commit and returns what `body` returned. Released when dropped,
/// whatever the test did, so no transaction is ever left open.
public final class HeldWrite<T: Sendable>: Sendable {
    private let released = DispatchSemaphore(value: 0)
    private let task: Task<T, any Error>

    /// Runs `body` in a `kind` write transaction on `database` (blocking work on a thread of its own)
    /// and returns while that transaction is held open. A `body` that throws rolls it back at once;
    /// `commit()` throws its error.
    public init(
        on database: any SQLDatabase, _ kind: TransactionKind = .concurrent,
        _ body: @escaping @Sendable (any SQLConnection) throws -> T
    ) async throws {
        let holding = DispatchSemaphore(value: 0)
        let released = released
        task = Task {
            try await blocking {
                try database.writeSync(kind) { db in
                    let result = Result { try body(db) }
                    holding.signal()
                    if case .success = result { released.wait() }
                    return try result.get()
                }
            }
        }
        try await blocking { holding.wait() }
    }

    deinit { released.signal() }

    /// Lets the held transaction commit; returns what its body returned once it did.
    public func commit() async throws -> T {
        released.signal()
        return try await task.value
    }
}
