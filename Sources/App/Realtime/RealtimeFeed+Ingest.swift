import Dispatch
import Domain
import Logging
import Realtime
import Storage
import Store
import Synchronization

/// Reading the change log into the hub: after this process's commits at once, after other
/// processes' and instances' when the `CommitWatcher` says so. A read that fails loses nothing: the
/// hub's position stays, and the next poll (every `pollInterval` while the log cannot be read) or
/// commit reads again from it; the outage is logged when it starts and when it ends.
extension RealtimeFeed {
    /// Rows read per change-log read; a full read is followed by another at once.
    static let ingestReadRows = 1000

    /// A write committed — of this process (`local`, from the writer queue) or announced by the
    /// watcher: read the log now. Only schedules; a burst of commits coalesces into one read.
    func commitNoticed(local: Bool) {
        guard !pollQueued.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { [self] in
            pollQueued.store(false, ordering: .releasing)
            ingestNewBatches(afterLocalCommit: local)
        }
    }

    /// The poll timer: reads the log when the watcher says another process may have committed, and
    /// while the last read failed. Skipped while a commit's read is queued: that read comes next and
    /// reads everything (SQLite's `data_version` also changes for this process's own commits).
    func poll() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let running, !pollQueued.load(ordering: .acquiring) else { return }
        let changed = running.watcher.changedSinceLastCheck()
        guard changed || ingestFailingSince != nil else { return }
        ingestNewBatches()
    }

    /// Reads every batch after the hub's position and hands it to the hub (queue only), one batch at
    /// a time so each broadcast knows its batch's commit time (the fan-out latency metric: the
    /// COMMIT → the last recipient's frame written, whichever read delivered it). `afterLocalCommit`: the read
    /// follows this process's own commit (no change-log lag to record).
    func ingestNewBatches(afterLocalCommit: Bool = false) {
        dispatchPrecondition(condition: .onQueue(queue))
        // Commit instants for the fan-out metric: this process's earliest COMMIT noticed since the
        // last read, taken before reading (a COMMIT noticed later is read again, or found read
        // already and dropped); batches read with it are timed from it, an upper bound. Without one,
        // a batch's `at` on the server's clock, carried over to the monotonic one.
        var localCommit = localCommitAt.exchange(0, ordering: .relaxed)
        guard let running else { return }
        while true {
            let position = running.hub.position
            // The remembered hash counts only for the row at the hub's position.
            let delivered = deliveredHash?.seq == position ? deliveredHash?.hash : nil
            let epoch = running.hub.epoch
            let batches: [ChangeFeed.Batch]
            let divergence: String?
            let hash: [UInt8]?
            do {
                (divergence, batches, hash) = try services.database.readSync { c in
                    // Still the history delivered from? (A failover to a standby that lacked commits.)
                    let anchor = try ChangeLogAnchor.read(at: position, on: c)
                    if let divergence = anchor.divergence(position: position, delivered: delivered, epoch: epoch) {
                        return (divergence, [], nil)
                    }
                    let batches = try ChangeFeed.batches(after: position, limit: Self.ingestReadRows, on: c)
                    guard let last = batches.last?.rows.last?.seq else { return (nil, batches, anchor.hash) }
                    return (nil, batches, try ChangeLogAnchor.read(at: last, on: c).hash)
                }
            } catch {
                ingestFailed(error, at: position)
                return
            }
            ingestRecovered(at: position)
            if let divergence {
                historyDiverged(divergence, at: position)
                return
            }
            deliveredHash = (batches.last?.rows.last?.seq ?? position, hash)
            guard !batches.isEmpty else { return }
            if !afterLocalCommit {  // another process's or instance's commits
                let now = services.clock.nowMilliseconds()
                for batch in batches {
                    services.metrics.realtime.changeLogLag(nanoseconds: UInt64(max(0, now - batch.atMilliseconds)) * 1_000_000)
                }
            }
            closeLapsedSessions()  // before the batch: a lapsed session receives nothing more
            let monotonicNow = DispatchTime.now().uptimeNanoseconds
            let wallNow = services.clock.nowMilliseconds()
            for batch in batches {
                broadcastCommittedAt =
                    localCommit != 0
                    ? localCommit : monotonicNow &- min(monotonicNow, UInt64(max(0, wallNow - batch.atMilliseconds)) &* 1_000_000)
                perform(running.hub.ingest([batch]))
            }
            broadcastCommittedAt = nil
            localCommit = 0  // a next round reads what committed after this one's read: time it by `at`
            // A short read reached the end of the log (`batches` reads about `ingestReadRows` rows).
            if batches.reduce(0, { $0 + $1.rows.count }) < Self.ingestReadRows { break }
        }
    }

    /// The database no longer holds the history this feed delivered from (`ChangeLogAnchor.divergence`):
    /// a failover to a standby that had not received every commit, or a restore under a running
    /// instance. Seqs delivered may be missing or mean other changes now, so no resume may cross it:
    /// the log gets a new epoch (unless another instance gave it one already), every socket is closed
    /// 1012 Service Restart, and the next socket starts a fresh hub at the new head and epoch — a
    /// client resuming with its old epoch gets a `reset` snapshot. A failed rotation is retried at
    /// the next poll (the read keeps finding the divergence).
    func historyDiverged(_ reason: String, at position: Int64) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let running else { return }
        let known = running.hub.epoch
        let epoch: String
        do {
            epoch = try services.database.writeSync { db in
                if let known { return try LogEpoch.rotate(ifStill: known, on: db) }
                return try LogEpoch.current(on: db)
            }
        } catch {
            ingestFailed(error, at: position)
            return
        }
        services.metrics.realtime.historyReset()
        services.logger.error(
            """
            realtime: the database lost changes already delivered (a failover to a standby behind the primary?); new change-log \
            epoch, every socket closed to resubscribe
            """,
            metadata: ["reason": "\(reason)", "after_seq": "\(position)", "old_epoch": "\(known ?? "-")", "epoch": "\(epoch)"])
        restartHub(reason: "change history reset")
    }

    /// A change-log read failed: logged once per outage (the poll retries every `pollInterval`).
    private func ingestFailed(_ error: any Error, at position: Int64) {
        guard ingestFailingSince == nil else { return }
        ingestFailingSince = services.clock.nowMilliseconds()
        health.failing.store(true, ordering: .relaxed)
        services.logger.error(
            "realtime: reading the change log failed; changes are held until it can be read again",
            metadata: ["after_seq": "\(position)", "error": "\(error)"])
    }

    /// A change-log read worked: ends an outage (logged with its length).
    private func ingestRecovered(at position: Int64) {
        guard let since = ingestFailingSince else { return }
        ingestFailingSince = nil
        health.failing.store(false, ordering: .relaxed)
        services.logger.notice(
            "realtime: reading the change log works again",
            metadata: ["after_seq": "\(position)", "failed_for_ms": "\(services.clock.nowMilliseconds() - since)"])
    }
}
