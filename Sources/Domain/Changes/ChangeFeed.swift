/// The change log as the realtime feed reads it: rows after a seq, grouped into the batches the
/// mutations wrote, and what a resume needs. These are the values; the reads that produce them
/// (`ChangeFeed.batches`, `ChangeFeed.replay`) are the Store's.
public enum ChangeFeed {
    /// One change-log row: its position in the log and the change it recorded.
    public struct Row: Sendable, Equatable {
        /// The row's position in the log (dense, ascending in commit order).
        public var seq: Int64
        /// What was written (`document` is the row's JSON bytes, untouched).
        public var change: Change

        /// The row at `seq` carrying `change`.
        public init(seq: Int64, change: Change) {
            self.seq = seq
            self.change = change
        }
    }

    /// The rows one mutation wrote (those read: maybe only one topic's), in seq order.
    public struct Batch: Sendable, Equatable {
        /// The seq of the batch's first row (`change_log.batch`).
        public var batch: Int64
        /// What happened: `member_removed`, `user_suspended`, ...
        public var event: ChangeEvent
        /// `user:<id>`, `admin`, `system`.
        public var actor: String
        /// When the mutation committed (wall clock, ms since 1970).
        public var atMilliseconds: Int64
        /// Never empty; ascending seq.
        public var rows: [Row]

        /// A batch of `rows` (not empty).
        public init(batch: Int64, event: ChangeEvent, actor: String, atMilliseconds: Int64, rows: [Row]) {
            precondition(!rows.isEmpty, "a batch has at least one row")
            self.batch = batch
            self.event = event
            self.actor = actor
            self.atMilliseconds = atMilliseconds
            self.rows = rows
        }

        /// The highest seq read for this batch.
        public var lastSeq: Int64 { rows[rows.count - 1].seq }
    }

    /// What a resume (`subscribe` with `since`) needs, read in one transaction.
    public struct Replay: Sendable, Equatable {
        /// The smallest seq still in the log (nil when the log is empty): rows before it are gone.
        public var oldestRetainedSeq: Int64?
        /// The highest seq in the log at the read: the position the replay brings the topic to.
        public var latestSeq: Int64
        /// The topic's batches after `since`, up to `latestSeq` (empty when `truncated`).
        public var batches: [Batch]
        /// True when the topic has more than the allowed rows after `since`: send a snapshot instead.
        public var truncated: Bool
        /// True when the member's access to the group changed after `since` (removed, left, rejoined):
        /// the replay could carry changes from when they had no access, so send a snapshot instead.
        public var accessChanged: Bool

        /// The outcome of one resume read.
        public init(
            oldestRetainedSeq: Int64?, latestSeq: Int64, batches: [Batch], truncated: Bool, accessChanged: Bool = false
        ) {
            self.oldestRetainedSeq = oldestRetainedSeq
            self.latestSeq = latestSeq
            self.batches = batches
            self.truncated = truncated
            self.accessChanged = accessChanged
        }

        /// Whether the log still holds every row after `since` (`oldest ≤ since + 1`, or an empty log
        /// when the client has seen nothing newer than it) and `since` is not ahead of the log.
        public func reachesBack(to since: Int64) -> Bool {
            guard since >= 0, since <= latestSeq else { return false }
            guard let oldest = oldestRetainedSeq else { return true }
            return oldest <= since + 1
        }
    }
}
