/// A database as the server uses it: a writer side where transactions are serialised, and a reader
/// side where read snapshots run concurrently. Both backends implement it on their own queues
/// (blocking engine calls never run on an event loop); the Store and the routes use only this.
///
/// Never call an entry point from inside a `write`/`writeSync` body (the writer would wait on
/// itself), nor `readSync` from inside a read body (the pool may be empty).
public protocol SQLDatabase: Sendable {
    /// The engine behind it.
    var dialect: SQLDialect { get }

    /// Runs `body` on the writer in one `.immediate` transaction; commits or rolls back. Writes queued
    /// together may share one transaction and COMMIT, each after the first in its own savepoint (group commit,
    /// `ConnectionQueues.write`): `body` must not assume it is alone in its transaction, nor change
    /// transaction-wide settings (`SET LOCAL`, `set_config(…, true)`) — use `writeSync`, which runs
    /// alone, for that.
    /// `kind`: `.immediate`, or `.concurrent` for a body written to run beside other instances'
    /// writes (`TransactionKind`).
    @discardableResult
    func write<T: Sendable>(_ kind: TransactionKind, _ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T

    /// Runs `body` on a reader in one `.deferred` transaction (one consistent snapshot).
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T

    /// Runs `body` on a reader as one statement outside an explicit transaction
    /// (`TransactionKind.statement`): for the hot reads that are one statement (a request's session
    /// lookup). `body` must run exactly one statement.
    func readStatement<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T

    /// Blocking `write`, alone in its transaction (never group-committed with others), on the writer
    /// connection: `kind` as in `write`.
    @discardableResult
    func writeSync<T>(_ kind: TransactionKind, _ body: (any SQLConnection) throws -> T) throws -> T

    /// Blocking `read`.
    func readSync<T>(_ body: (any SQLConnection) throws -> T) throws -> T

    /// Runs `body` on the writer connection without an enclosing transaction (migrations).
    @discardableResult
    func withWriter<T>(_ body: (any SQLConnection) throws -> T) throws -> T

    /// Sets the one observer called after every successful `write`/`writeSync` of this process (it
    /// must only schedule work). Replaces any earlier observer.
    func onCommit(_ observer: @escaping @Sendable () -> Void)

    /// A watcher of commits made by other processes or instances (the realtime feed's "has anything
    /// changed" capability): SQLite polls its file's data version; PostgreSQL listens on `channels`
    /// and reconnects on its own. `events` is called from the watcher's queue.
    func watchCommits(
        channels: CommitChannels, events: @escaping @Sendable (CommitWatcherEvent) -> Void
    ) throws -> any CommitWatcher

    /// Async writes waiting for the writer right now (they will share COMMITs: group commit).
    var queuedWrites: Int { get }

    /// Closes every connection; later calls throw. Idempotent.
    func close()
}

extension SQLDatabase {
    /// `write` of kind `.immediate`: the body runs alone across instances.
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await write(.immediate, body)
    }

    /// `writeSync` of kind `.immediate`: the body runs alone across instances.
    @discardableResult
    public func writeSync<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        try writeSync(.immediate, body)
    }
}
