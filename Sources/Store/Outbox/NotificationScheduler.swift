import Domain
public import Storage

/// Durable fire times (docs/notifications.md#pipeline): turns due instants of shared alarms into
/// outbox rows — `alarm_fired` at the open occurrence's time, `pre_alarm` at `pre_alarm_ms`.
///
/// Exactly once per (type, alarm, scheduled instant), across restarts and instances: the outbox key
/// `alarm_fired:<alarm>:<scheduled_ms>` is unique and a row is inserted in the same transaction that
/// finds it missing. Pre-alarms are once per (alarm, occurrence, offset) — key
/// `pre_alarm:<alarm>:<scheduled_ms>:<offset minutes>` — and an alarm has up to three: `pre_alarm_ms`
/// holds the next one, and the pass that queues it (or finds it queued) moves `pre_alarm_ms` to the
/// following one (`SharedAlarm.preAlarm(after:)`), in the same transaction. After downtime, a fire
/// due longer than `freshness` ago is recorded `skipped`, not sent (no stale alarm storm).
///
/// Staged ahead: a fire is queued up to `lookaheadMilliseconds` before its instant (`not_before_ms` =
/// the instant), so the dispatcher can expand it into deliveries that are not due before the instant
/// and at the instant only claim and send remain. What changes in between is caught when a delivery
/// is claimed (`NotificationDeliveries.claim`): a fire whose alarm was deleted or moved to another
/// instant, or whose group was frozen or deleted, is cancelled there, never sent. Editing an alarm
/// moves `open_ms` / `pre_alarm_ms`, so the new instant is a new key, queued in its turn. No clock:
/// `now` is the caller's.
public enum NotificationScheduler {
    /// A fire found more than this late is skipped (an `alarm_fired` an hour late is worse than none).
    public static let freshnessMilliseconds: Int64 = 15 * 60_000
    /// Alarms handled per call; the caller loops while a call returns this many.
    public static let batchLimit = 500
    /// How long before its instant a fire is queued (staged). Long enough that the scheduler's pass
    /// and the dispatcher's expansion of a whole minute's fires (10,000 take ≈ 2–4 s on 2 busy cores)
    /// are done before the minute starts, with room for a slow pass; short enough that little changes
    /// in between — what does is re-checked at the claim. Alarm times are whole minutes.
    public static let lookaheadMilliseconds: Int64 = 60_000

    /// What one pass queued.
    public struct Pass: Sendable, Equatable {
        /// Fires queued for sending.
        public var queued = 0
        /// Fires recorded as skipped (stale).
        public var skipped = 0
        public var total: Int { queued + skipped }
        public init(queued: Int = 0, skipped: Int = 0) {
            self.queued = queued
            self.skipped = skipped
        }
    }

    /// Whether any fire is due by `now + lookahead` without its outbox row (a read: the caller takes
    /// the writer only when one is).
    public static func anythingDue(at now: Int64, lookahead: Int64 = lookaheadMilliseconds, on db: any SQLConnection)
        throws -> Bool
    {
        try !due(.alarmFired, at: now, lookahead: lookahead, limit: 1, on: db).isEmpty
            || !due(.preAlarm, at: now, lookahead: lookahead, limit: 1, on: db).isEmpty
    }

    /// Queues (or records as skipped) every fire due by `now + lookahead` that has no outbox row yet,
    /// at most `limit` per type; a fire's row is not sendable before its instant. Runs in the caller's
    /// write transaction.
    ///
    /// Safe as a `.concurrent` write (beside answers and other instances' schedulers): the due alarms
    /// are taken with `forUpdateSkipLocked`, so two schedulers never handle one alarm at once and an
    /// alarm being answered right now (its row locked) waits for the next pass instead of being read
    /// half-answered; the outbox key is unique (`ON CONFLICT DO NOTHING`); what else it reads (the
    /// group, its members) changes only in `.immediate` writes, which never run beside it.
    public static func enqueueDue(
        at now: Int64, lookahead: Int64 = lookaheadMilliseconds, freshness: Int64 = freshnessMilliseconds,
        limit: Int = batchLimit, on db: any SQLConnection
    ) throws -> Pass {
        var pass = Pass()
        func count(_ state: NotificationOutbox.State?) {
            switch state {
            case .pending?: pass.queued += 1
            case .skipped?: pass.skipped += 1
            default: break
            }
        }
        for (alarm, instant) in try due(.alarmFired, at: now, lookahead: lookahead, limit: limit, locking: true, on: db) {
            count(try enqueue(.alarmFired, alarm: alarm, instant: instant, stale: now - instant > freshness, at: now, on: db))
        }
        // Every row handled moves its `pre_alarm_ms` forward (or clears it), so this ends; an alarm
        // whose next pre-alarm is also due comes back in the next round.
        let fires = pass.total
        while pass.total - fires < limit {
            let rows = try due(.preAlarm, at: now, lookahead: lookahead, limit: limit - (pass.total - fires), locking: true, on: db)
            guard !rows.isEmpty else { break }
            for (alarm, instant) in rows {
                try db.send(
                    "UPDATE shared_alarms SET pre_alarm_ms = ?2 WHERE id = ?1",
                    [.text(alarm.id), SQLValue(alarm.preAlarm(after: instant)?.at)])
                guard let pre = alarm.preAlarms.first(where: { $0.at == instant }) else { continue }
                count(
                    try enqueue(
                        .preAlarm, alarm: alarm, instant: instant, offset: pre.offset, stale: now - instant > freshness, at: now,
                        on: db))
            }
        }
        return pass
    }

    /// Live alarms of live, unfrozen groups whose `type` instant is due by `now + lookahead`, oldest
    /// first: an `alarm_fired` without its outbox row; a pre-alarm between its instant and the
    /// occurrence (after that it is moot), queued or not (`enqueueDue` moves it on). `locking`: the
    /// alarms' rows are locked until COMMIT, skipping those another transaction holds (a write's).
    static func due(
        _ type: NotificationType, at now: Int64, lookahead: Int64, limit: Int, locking: Bool = false, on db: any SQLConnection
    ) throws -> [(SharedAlarm, Int64)] {
        let column = type == .alarmFired ? "open_ms" : "pre_alarm_ms"
        let condition =
            type == .alarmFired
            ? "NOT EXISTS (SELECT 1 FROM notification_outbox o WHERE o.key = ?2 || a.id || ':' || a.open_ms)"
            : "a.open_ms > ?2"
        let rows = try db.query(
            """
            SELECT a.document AS document, a.\(column) AS instant FROM shared_alarms a JOIN groups g ON g.id = a.group_id
            WHERE a.\(column) IS NOT NULL AND a.\(column) <= ?1 AND a.deleted_ms IS NULL AND \(condition)
              AND g.deleted_ms IS NULL AND g.frozen_ms IS NULL
            ORDER BY a.\(column), a.id
            LIMIT ?3\(locking ? db.forUpdateSkipLocked(of: "a") : "")
            """,
            [.integer(now + lookahead), type == .alarmFired ? .text(type.rawValue + ":") : .integer(now), .integer(Int64(limit))])
        return try rows.map { row in
            guard let instant = row.int("instant") else { throw StoreError.corruptRow(table: "shared_alarms") }
            return (try SharedAlarmStore.alarmFromRow(row), instant)
        }
    }

    /// The outbox row of one fire: to the open occurrence's members who have not answered, and who
    /// are active and listening; `skipped` when stale or nobody is left to tell. Returns the state of
    /// the row inserted, nil when the key was already there.
    /// `offset` (minutes) names which of a pre-alarm's offsets this is.
    static func enqueue(
        _ type: NotificationType, alarm: SharedAlarm, instant: Int64, offset: Int = 0, stale: Bool, at now: Int64,
        on db: any SQLConnection
    ) throws -> NotificationOutbox.State? {
        if type == .preAlarm {
            // A row queued under the one-offset key (`pre_alarm:<alarm>:<instant>`) before an upgrade
            // is the same warning: never a second one. Checked before the recipients are read.
            let legacy = try db.query(
                "SELECT 1 AS one FROM notification_outbox WHERE key = ?1", [.text("\(type.rawValue):\(alarm.id):\(instant)")])
            guard legacy.isEmpty else { return nil }
        }
        let pending = alarm.openOccurrence?.pendingUIDs ?? []
        let (group, recipients) = try NotificationOutbox.audience(pending, in: alarm.groupID, on: db)
        let scheduled = alarm.openOccurrence?.scheduledAt ?? Timestamp(milliseconds: instant)
        let message =
            type == .alarmFired
            ? NotificationMessage(.alarmDue, ["group": group])
            : NotificationMessage(.alarmSoon, ["minutes": "\(offset)", "group": group])
        let content = NotificationContent.make(
            type, groupID: alarm.groupID, title: alarm.settings.title, message: message,
            extra: ["alarm_id": alarm.id, "scheduled_at": scheduled.description])
        // A pre-alarm is worth nothing once the occurrence is due.
        let expires = type == .preAlarm ? scheduled.milliseconds : instant + type.policy.timeToLiveMilliseconds
        let state: NotificationOutbox.State = stale || recipients.isEmpty ? .skipped : .pending
        let key =
            type == .preAlarm
            ? "\(type.rawValue):\(alarm.id):\(scheduled.milliseconds):\(offset)" : "\(type.rawValue):\(alarm.id):\(instant)"
        let inserted = try NotificationOutbox.enqueue(
            type, key: key, groupID: alarm.groupID, alarmID: alarm.id, actorID: nil,
            recipients: recipients, content: content, notBefore: instant, expiresAt: expires, state: state, at: now, on: db)
        return inserted ? state : nil
    }
}
