public import Storage

/// SQLite's `CommitWatcher`: `PRAGMA data_version` on a dedicated read-only connection changes
/// whenever another connection (of any process) commits
/// (https://sqlite.org/pragma.html#pragma_data_version). It announces nothing: the feed's poll asks.
final class DataVersionWatcher: CommitWatcher, @unchecked Sendable {
    /// Touched only from the caller's queue (the feed's; the only caller).
    private var connection: SQLiteConnection?
    private var version: Int64 = -1

    init(database: SQLiteDatabase) throws {
        connection = try SQLiteConnection(
            path: database.path, mode: .readOnly, durability: database.options.durability,
            busyTimeoutMilliseconds: database.options.busyTimeoutMilliseconds)
        version = current() ?? -1
    }

    private func current() -> Int64? {
        guard let connection, case .integer(let value)? = try? connection.scalar("PRAGMA data_version", []) else {
            return nil
        }
        return value
    }

    func changedSinceLastCheck() -> Bool {
        guard let value = current() else { return true }
        defer { version = value }
        return value != version
    }

    func stop() {
        connection?.close()
        connection = nil
    }
}

extension SQLiteDatabase {
    /// `SQLDatabase.watchCommits`: the data-version poll (SQLite has no channels; `events` is never called).
    public func watchCommits(
        channels: CommitChannels, events: @escaping @Sendable (CommitWatcherEvent) -> Void
    ) throws -> any CommitWatcher {
        try DataVersionWatcher(database: self)
    }
}
