public import Storage
import Store

extension Sweeper.Job {
    /// The attachment orphan sweep (docs/attachments.md#storage), every 10 minutes: marks deleted the
    /// attachments of deleted or purged alarms, then removes every file under `files` that no live row
    /// names and that is older than `graceMilliseconds` (leftover `.tmp-*` files of failed or crashed
    /// writes too), then deletes the deleted rows whose file is gone, so their bytes stop counting
    /// against the quotas (bytes count until their file is gone). Each batch checks and
    /// unlinks inside one write transaction, so an upload — whose row insert is a write transaction
    /// that first makes sure its files exist — never loses its file to a concurrent sweep.
    public static func attachmentOrphans(files: AttachmentFiles, graceMilliseconds: Int64) -> Sweeper.Job {
        Sweeper.Job(name: "attachment_orphans", everyMilliseconds: 600_000) { db, now in
            try AttachmentSweep.run(files: files, graceMilliseconds: graceMilliseconds, at: now, on: db).total
        }
    }
}

/// One pass of the attachment orphan sweep (`Sweeper.Job.attachmentOrphans`).
public enum AttachmentSweep {
    /// Files checked per write transaction.
    static let batchSize = 200

    /// What a pass did.
    public struct Outcome: Sendable, Equatable {
        /// Attachment rows marked deleted because their alarm is gone.
        public var rowsRetired = 0
        /// Files (and leftover temporary files) removed.
        public var filesRemoved = 0
        /// Deleted rows dropped because their file is gone (their bytes no longer count).
        public var tombstonesDropped = 0
        public var total: Int { rowsRetired + filesRemoved + tombstonesDropped }
    }

    /// Runs one pass at `now` (epoch ms).
    public static func run(files: AttachmentFiles, graceMilliseconds: Int64, at now: Int64, on db: any SQLDatabase) throws
        -> Outcome
    {
        var outcome = Outcome()
        outcome.rowsRetired = try db.writeSync { try AttachmentStore.retireOrphanedRows(at: now, on: $0) }
        let due = files.entries().filter { $0.modifiedMilliseconds <= now - graceMilliseconds }
        var start = 0
        while start < due.count {
            let batch = Array(due[start..<min(start + batchSize, due.count)])
            start += batch.count
            outcome.filesRemoved += try db.writeSync { connection in
                var removed = 0
                for entry in batch {
                    if entry.isTemporary {
                        try files.remove(path: entry.path)
                        removed += 1
                    } else if AttachmentFiles.isName(entry.name),
                        try !AttachmentStore.isReferenced(sha256: entry.name, on: connection)
                    {
                        try files.remove(path: entry.path)
                        removed += 1
                    }
                }
                return removed
            }
        }
        outcome.tombstonesDropped = try db.writeSync { try AttachmentStore.dropTombstones(fileExists: files.exists, on: $0) }
        return outcome
    }
}
