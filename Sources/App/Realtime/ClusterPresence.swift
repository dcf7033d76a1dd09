import Dispatch
import Domain
import Logging
import Storage
import Store

/// Presence across instances on one PostgreSQL database (docs/architecture.md, Across
/// instances): the I/O between this instance's `RealtimeHub` and the `presence`/`instances` tables.
///
///     feed's presence timer ─flushPresence, takeLocalPresence─▶ publish(changes)
///                                                                   │ queue
///        ONE write transaction per presence interval: heartbeat, expire dead instances,
///        this instance's changed groups, pg_notify('chronir_presence', "<instance>:<groups>")
///                                                                   │ COMMIT
///     every instance's commit watcher (LISTEN chronir_presence) ─notified─▶ queue: read the other
///        instances' users of those groups ─apply─▶ feed's queue: hub.setClusterPresence
///
/// Only for PostgreSQL: one SQLite server has no other instance, so it runs none of this and its
/// clients see exactly what they saw before (the hub's cluster sets stay empty). All state is
/// owned by `queue` (a serial queue of its own: presence I/O never blocks the feed's queue).
final class ClusterPresence: @unchecked Sendable {
    /// This process's id in `instances` (random per start).
    let instanceID = ClusterPresenceStore.newInstanceID()
    /// Heartbeat age past which another instance counts as dead and is deleted with its rows.
    let staleAfterMilliseconds: Int64
    private let database: any SQLDatabase
    private let clock: any WallClock
    private let logger: Logger
    /// Hands changed cluster sets (group → users on other instances, empty: none) to the hub; called
    /// on `queue`, in read order, and must only schedule (onto the feed's queue).
    private let apply: @Sendable ([String: Set<String>]) -> Void
    private let queue = DispatchQueue(label: "chronir.realtime.presence")

    // Owned by `queue`.
    /// Every group's users subscribed here, as last published by the hub.
    private var local: [String: Set<String>] = [:]
    /// Groups whose rows the last successful tick did not write yet (a failed tick keeps them).
    private var unwritten: [String: Set<String>] = [:]
    /// The cluster sets last handed to `apply`, to hand over only what changed.
    private var mirror: [String: Set<String>] = [:]
    /// Groups to re-read; `pendingAll`: every group (start, listener reconnected, while not listening).
    private var pendingGroups: Set<String> = []
    private var pendingAll = true
    private var drainScheduled = false
    /// Whether presence notifications arrive (the listener is connected); until then every tick
    /// re-reads every group.
    private var listening = false
    /// Whether a tick has written this instance's row (a later tick that finds it missing means
    /// another instance expired it while this one stalled).
    private var joined = false
    private var stopped = false

    /// Starts with a full read of the other instances' presence. `presenceIntervalMilliseconds`:
    /// how often the hub's flush (and so `publish`) runs — the heartbeat period.
    init(
        database: any SQLDatabase, clock: any WallClock, logger: Logger, presenceIntervalMilliseconds: Int,
        apply: @escaping @Sendable ([String: Set<String>]) -> Void
    ) {
        self.database = database
        self.clock = clock
        self.logger = logger
        self.apply = apply
        staleAfterMilliseconds = ClusterPresenceStore.staleAfterMilliseconds(
            presenceIntervalMilliseconds: presenceIntervalMilliseconds)
        queue.async { [self] in scheduleDrain() }
    }

    /// The cluster presence for this feed's database: nil on SQLite (one server, nothing to share).
    static func make(
        services: Services, presenceIntervalMilliseconds: Int, apply: @escaping @Sendable ([String: Set<String>]) -> Void
    ) -> ClusterPresence? {
        guard services.database.dialect == .postgres else { return nil }
        return ClusterPresence(
            database: services.database, clock: services.clock, logger: services.logger,
            presenceIntervalMilliseconds: presenceIntervalMilliseconds, apply: apply)
    }

    /// One presence interval: `changes` from `RealtimeHub.takeLocalPresence()` (may be empty — the
    /// heartbeat is written anyway). Runs the write on `queue`; callable from any thread.
    func publish(_ changes: [String: Set<String>]) {
        queue.async { [self] in tick(changes) }
    }

    /// What the commit watcher saw on `ClusterPresenceStore.notifyChannel`, or of its connection.
    enum Signal: Sendable, Equatable {
        /// A notification with this payload (`ClusterPresenceStore.Notice`).
        case notified(payload: String)
        /// The listener (re)connected: notifications arrive from now on; what was missed is re-read.
        case listening
        /// The listener dropped: every tick re-reads every group until it is back.
        case notListening
    }

    /// Handles a listener signal; callable from any thread (only schedules).
    func received(_ signal: Signal) {
        queue.async { [self] in
            switch signal {
            case .notified(let payload):
                guard let notice = ClusterPresenceStore.Notice(payload: payload), notice.instance != instanceID else { return }
                if let groups = notice.groups { pendingGroups.formUnion(groups) } else { pendingAll = true }
            case .listening:
                listening = true
                pendingAll = true
            case .notListening:
                listening = false
            }
            scheduleDrain()
        }
    }

    /// Deletes this instance's rows (graceful shutdown) and stops; blocks until done. Idempotent.
    func stop() {
        dispatchPrecondition(condition: .notOnQueue(queue))
        queue.sync {
            guard !stopped else { return }
            stopped = true
            do {
                try database.writeSync { try ClusterPresenceStore.remove(instance: instanceID, on: $0) }
            } catch {
                logger.warning(
                    "realtime: could not remove this instance's presence; other instances expire it",
                    metadata: ["error": "\(error)", "instance": "\(instanceID)"])
            }
        }
    }

    // MARK: - On `queue`

    private func tick(_ changes: [String: Set<String>]) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopped else { return }
        for (group, users) in changes {
            local[group] = users.isEmpty ? nil : users
            unwritten[group] = users
        }
        let now = clock.nowMilliseconds()
        do {
            let (changed, all, staleAfter) = (unwritten, local, staleAfterMilliseconds)
            // `.concurrent`: a tick never holds off the cluster's other writes (`ClusterPresenceStore.tick`).
            let result = try database.writeSync(.concurrent) { [instanceID] db in
                try ClusterPresenceStore.tick(
                    instance: instanceID, changes: changed, all: all, at: now, staleAfter: staleAfter, on: db)
            }
            unwritten = [:]
            defer { joined = true }
            if result.rejoined && joined {
                logger.warning(
                    "realtime: this instance's presence had expired (stalled past the limit); rewritten",
                    metadata: ["instance": "\(instanceID)", "stale_after_ms": "\(staleAfterMilliseconds)"])
            }
            if !result.expiredInstances.isEmpty {
                logger.info(
                    "realtime: expired the presence of instances without a heartbeat",
                    metadata: ["instances": "\(result.expiredInstances.joined(separator: ","))"])
                // Our own notice is ignored here: re-read the groups the expired instances held.
                pendingGroups.formUnion(result.changedGroups)
            }
        } catch {
            logger.warning(
                "realtime: presence write failed; retried at the next interval", metadata: ["error": "\(error)"])
        }
        if !listening { pendingAll = true }
        scheduleDrain()  // also retries a read that failed
    }

    private func scheduleDrain() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !drainScheduled, !stopped, pendingAll || !pendingGroups.isEmpty else { return }
        drainScheduled = true
        queue.async { [self] in drain() }
    }

    /// Reads the other instances' users of the pending groups (all of them when `pendingAll`) in one
    /// read transaction and hands what changed to the hub. A failed read stays pending.
    private func drain() {
        dispatchPrecondition(condition: .onQueue(queue))
        drainScheduled = false
        guard !stopped, pendingAll || !pendingGroups.isEmpty else { return }
        let (groups, all) = (pendingGroups, pendingAll)
        pendingGroups = []
        pendingAll = false
        let freshSince = clock.nowMilliseconds() - staleAfterMilliseconds
        do {
            let found = try database.readSync { [instanceID] db in
                try ClusterPresenceStore.others(
                    groups: all ? nil : groups, excluding: instanceID, freshSince: freshSince, on: db)
            }
            var updates: [String: Set<String>] = [:]
            for group in all ? Set(mirror.keys).union(found.keys) : groups {
                let users = found[group] ?? []
                guard users != mirror[group] ?? [] else { continue }
                updates[group] = users
                mirror[group] = users.isEmpty ? nil : users
            }
            if !updates.isEmpty { apply(updates) }
        } catch {
            pendingGroups.formUnion(groups)
            pendingAll = pendingAll || all
            logger.warning(
                "realtime: presence read failed; retried at the next interval", metadata: ["error": "\(error)"])
        }
    }
}
