/// Notices commits this process was not told about through `SQLDatabase.onCommit`: another process
/// on the SQLite file (chronir-admin), another instance on PostgreSQL. The realtime feed asks it on
/// every poll tick and is woken early where the engine can announce commits.
public protocol CommitWatcher: AnyObject, Sendable {
    /// Whether anything may have been committed since the last call. Errs towards true: a spurious
    /// true costs one indexed read, a missed one would delay delivery until the next change.
    func changedSinceLastCheck() -> Bool
    /// Stops watching (shutdown). Idempotent.
    func stop()
}

/// What a `CommitWatcher` tells its owner, from the watcher's own queue; the handler must only
/// schedule work.
public enum CommitWatcherEvent: Sendable, Equatable {
    /// A commit was announced on the change channel: read the change log now.
    case commitAnnounced
    /// A notification on another of the watched channels.
    case notified(channel: String, payload: String)
    /// Announcements flow (again); `resumed` after an interruption. Commits made while none
    /// flowed are found by reading after the last position seen.
    case listening(resumed: Bool)
    /// Announcements stopped (the connection dropped or could not be made); the watcher answers
    /// true on every poll until they flow again, and retries after `retryInSeconds`.
    case notListening(reason: String, retryInSeconds: Double)
}

/// Where a database's commits are announced (PostgreSQL `NOTIFY` channels; SQLite has none and
/// polls its file's data version instead).
public struct CommitChannels: Sendable, Equatable {
    /// The channel every change-log append notifies in its transaction.
    public var changes: String
    /// Further channels whose notifications are passed on as `.notified`.
    public var others: [String]

    public init(changes: String, others: [String] = []) {
        self.changes = changes
        self.others = others
    }
}
