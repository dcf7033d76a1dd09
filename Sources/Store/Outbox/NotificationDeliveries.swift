public import Domain
public import Storage

/// The dispatcher's SQL (migration 0014; docs/notifications.md#pipeline): pending outbox rows become
/// one delivery per (notification, device), deliveries are claimed with a lease, and each ends as
/// sent, retried later, or dropped. Every function runs in the caller's transaction; none reads a
/// clock.
public enum NotificationDeliveries {
    /// Where one delivery goes.
    public enum Target: Sendable, Equatable {
        /// One device of one recipient.
        case device(userID: String, Device)
        /// The operator's webhook: the whole notification with its recipients.
        case webhook(recipients: [String])
    }

    /// One notification to one target, as the dispatcher hands it to a sender.
    public struct Delivery: Sendable, Equatable {
        public var id: Int64
        public var outboxID: Int64
        public var key: String
        public var type: NotificationType
        public var content: NotificationContent
        public var target: Target
        /// Attempts made before this one.
        public var attempts: Int
        /// When the notification became due (its outbox row's `not_before`).
        public var notBefore: Int64
        public var expiresAt: Int64
    }

    /// What one claim took: the deliveries to send, and how many it cancelled instead.
    public struct Claim: Sendable, Equatable {
        public var deliveries: [Delivery] = []
        /// Deliveries found due but no longer owed (see `claim`), deleted instead of sent.
        public var cancelled = 0
        public init() {}
    }

    /// What one expansion did.
    public struct Expansion: Sendable, Equatable {
        /// Outbox rows turned into deliveries.
        public var expanded = 0
        /// Deliveries made.
        public var deliveries = 0
        /// Outbox rows past their time to live before they were expanded.
        public var expired = 0
        public init() {}
    }

    /// Expands up to `limit` pending outbox rows due by `now + lookahead`: recipients are checked
    /// again (a group notification goes only to members still active and listening in a live,
    /// unfrozen group; an invitation only while it is pending; never to a suspended or deleted
    /// account), then one delivery per device whose provider is in `providers` (the ones configured),
    /// plus one for the operator's webhook when `webhook` and anyone is left. A delivery is due at its
    /// row's `not_before` — a staged alarm fire (`NotificationScheduler.lookaheadMilliseconds`) waits
    /// for its instant — or now if that has passed. Rows past their TTL become `expired`.
    ///
    /// Safe as a `.concurrent` write: the outbox rows are taken with `forUpdateSkipLocked`, so two
    /// expanders (rounds, instances) never expand one row twice nor wait for each other, and what the
    /// recipients are decided on (memberships, groups, accounts, devices) changes only in `.immediate`
    /// writes; the claim checks every delivery again anyway.
    public static func expand(
        at now: Int64, lookahead: Int64 = 0, providers: Set<Device.Provider>, webhook: Bool, limit: Int,
        on db: any SQLConnection
    ) throws -> Expansion {
        var result = Expansion()
        let rows = try db.query(
            """
            SELECT id, key, type, group_id, actor_id, recipients, content, created_ms, not_before_ms, expires_ms, state
            FROM notification_outbox WHERE state = 'pending' AND not_before_ms <= ?1 ORDER BY not_before_ms, id LIMIT ?2
            """ + db.forUpdateSkipLocked(of: "notification_outbox"), [.integer(now + lookahead), .integer(Int64(limit))])
        for row in rows {
            let entry = try NotificationOutbox.entryFromRow(row)
            guard entry.expiresAt > now else {
                try finish(entry.id, .expired, at: now, on: db)
                result.expired += 1
                continue
            }
            let users = try recipients(of: entry, on: db)
            if !providers.isEmpty, !users.isEmpty {
                for (userID, device) in try DeviceStore.devices(userIDs: users, on: db) where providers.contains(device.provider) {
                    try insert(entry, channel: "device", userID: userID, deviceID: device.deviceID, recipients: nil, at: now, on: db)
                    result.deliveries += 1
                }
            }
            if webhook, !users.isEmpty {
                try insert(entry, channel: "webhook", userID: nil, deviceID: nil, recipients: users, at: now, on: db)
                result.deliveries += 1
            }
            try finish(entry.id, .expanded, at: now, on: db)
            result.expanded += 1
        }
        return result
    }

    /// Makes one delivery (`send`: pipelined on PostgreSQL, no round trip of its own). A row is
    /// expanded once, in the transaction that marks it expanded, so the insert never meets an
    /// existing delivery; `ON CONFLICT DO NOTHING` only guards that.
    private static func insert(
        _ entry: NotificationOutbox.Entry, channel: String, userID: String?, deviceID: String?, recipients: [String]?,
        at now: Int64, on db: any SQLConnection
    ) throws {
        try db.send(
            """
            INSERT INTO notification_deliveries (outbox_id, channel, user_id, device_id, recipients, next_attempt_ms,
                expires_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING
            """,
            [
                .integer(entry.id), .text(channel), SQLValue(userID), SQLValue(deviceID),
                SQLValue(recipients.map { String(decoding: DocumentCoding.encode($0), as: UTF8.self) }),
                .integer(max(now, entry.notBefore)), .integer(entry.expiresAt),
            ])
    }

    /// The queued recipients still entitled to the notification now, once each, in queued order: for
    /// a group's notification the active, listening members of a live (not deleted, not frozen) group
    /// whose accounts are active — one query; otherwise active accounts (an invitation only while it
    /// is pending).
    static func recipients(of entry: NotificationOutbox.Entry, on db: any SQLConnection) throws -> [String] {
        let candidates = entry.recipients.filter { $0 != entry.actorID }
        guard !candidates.isEmpty else { return [] }
        let entitled: [Row]
        if let groupID = entry.groupID {
            entitled = try db.query(
                """
                SELECT m.user_id AS id FROM group_members m
                JOIN groups g ON g.id = m.group_id AND g.deleted_ms IS NULL AND g.frozen_ms IS NULL
                JOIN users u ON u.id = m.user_id AND u.deleted_ms IS NULL AND u.status = 'active'
                WHERE m.group_id = ?1 AND m.status = 'active' AND m.notification_enabled = 1
                """, [.text(groupID)])
        } else {
            if entry.type == .groupInvitation {
                let pending = try db.queryOne(
                    "SELECT 1 AS one FROM invitations WHERE id = ?1 AND status = 'pending'",
                    [.text(entry.content.data["invitation_id"] ?? "")])
                guard pending != nil else { return [] }
            }
            let placeholders = SQLText.parameters(count: candidates.count, from: 1)
            entitled = try db.query(
                "SELECT id FROM users WHERE id IN (\(placeholders)) AND deleted_ms IS NULL AND status = 'active'",
                candidates.map { .text($0) })
        }
        return NotificationOutbox.ordered(candidates, among: Set(entitled.compactMap { $0.string("id") }))
    }

    /// Marks an outbox row done (`send`: no round trip of its own on PostgreSQL).
    static func finish(_ outboxID: Int64, _ state: NotificationOutbox.State, at now: Int64, on db: any SQLConnection) throws {
        try db.send(
            "UPDATE notification_outbox SET state = ?2, done_ms = ?3 WHERE id = ?1",
            [.integer(outboxID), .text(state.rawValue), .integer(now)])
    }

    /// Claims up to `limit` due deliveries for `owner` until `leaseUntil`: due ones whose lease is
    /// free or lapsed (a dead instance's). Claimed rows are invisible to other claimers until the
    /// lease ends or the owner settles them.
    ///
    /// Each is checked again as it is claimed, because it may have been made well before (a staged
    /// alarm fire, `NotificationScheduler.lookaheadMilliseconds`; a retry): a delivery is cancelled —
    /// deleted, not returned — when its group was deleted or frozen; when it is an alarm's fire
    /// (`alarm_id`) and the alarm was deleted or no longer has that instant (edited, answered and
    /// advanced, swept as missed); and, to a device, when the account is no longer active, the user
    /// no longer an active member listening to the group, or already answered the fired occurrence.
    /// A webhook delivery keeps the recipients checked at expansion.
    ///
    /// Safe as a `.concurrent` write: the due rows are taken with `forUpdateSkipLocked`, so claimers
    /// (rounds, instances) take disjoint rows without waiting for each other; a row another claimer
    /// leased and committed meanwhile no longer matches the lease condition when it is locked. The
    /// rows it checks against (groups, alarms, memberships, accounts) are changed by `.immediate`
    /// writes, which never run beside it; an answer (a `.concurrent` write) that commits while the
    /// claim runs may still be notified, as one committing just after the claim would be.
    public static func claim(
        owner: String, at now: Int64, leaseUntil: Int64, limit: Int, on db: any SQLConnection
    ) throws -> Claim {
        // One read of the due rows (locked) with what a sender needs and whether each is still owed;
        // the lease and the cancellation are sent with the COMMIT (`send`): two round trips in all.
        let rows = try db.query(
            """
            SELECT d.id AS id, d.outbox_id AS outbox_id, d.channel AS channel, d.user_id AS user_id,
                d.attempts AS attempts, d.expires_ms AS delivery_expires_ms, o.key AS key, o.type AS type,
                o.content AS content, d.recipients AS recipients, o.not_before_ms AS not_before_ms,
                CASE WHEN
                    (o.group_id IS NULL OR (g.id IS NOT NULL AND g.deleted_ms IS NULL AND g.frozen_ms IS NULL))
                    AND (o.alarm_id IS NULL OR (a.id IS NOT NULL AND a.deleted_ms IS NULL
                        AND ((o.type = 'alarm_fired' AND a.open_ms = o.not_before_ms)
                            OR (o.type = 'pre_alarm' AND (a.pre_alarm_ms = o.not_before_ms
                                OR o.key LIKE 'pre_alarm:' || a.id || ':' || a.open_ms || ':%')))))
                    AND (d.user_id IS NULL OR (u.id IS NOT NULL AND u.deleted_ms IS NULL AND u.status = 'active'
                        AND (o.group_id IS NULL OR (m.status = 'active' AND m.notification_enabled = 1))
                        AND (o.alarm_id IS NULL OR NOT EXISTS (
                            SELECT 1 FROM shared_completions c
                            WHERE c.alarm_id = o.alarm_id AND c.scheduled_ms = a.open_ms AND c.user_id = d.user_id
                                AND c.withdrawn_ms IS NULL))))
                THEN 1 ELSE 0 END AS owed,
                \(DeviceStore.columns("v"))
            FROM notification_deliveries d
            JOIN notification_outbox o ON o.id = d.outbox_id
            LEFT JOIN devices v ON v.user_id = d.user_id AND v.device_id = d.device_id
            LEFT JOIN groups g ON g.id = o.group_id
            LEFT JOIN shared_alarms a ON a.id = o.alarm_id
            LEFT JOIN group_members m ON m.group_id = o.group_id AND m.user_id = d.user_id
            LEFT JOIN users u ON u.id = d.user_id
            WHERE d.next_attempt_ms <= ?1 AND (d.lease_until_ms IS NULL OR d.lease_until_ms <= ?1)
            ORDER BY d.next_attempt_ms, d.id LIMIT ?2
            """ + db.forUpdateSkipLocked(of: "d"), [.integer(now), .integer(Int64(limit))])
        var result = Claim()
        guard !rows.isEmpty else { return result }
        let owed = rows.filter { $0.int("owed") == 1 }
        let cancelled = rows.filter { $0.int("owed") != 1 }.compactMap { $0.int("id") }
        if !cancelled.isEmpty {
            let placeholders = SQLText.parameters(count: cancelled.count, from: 1)
            try db.send(
                "DELETE FROM notification_deliveries WHERE id IN (\(placeholders))", cancelled.map { SQLValue.integer($0) })
            result.cancelled = cancelled.count
        }
        let ids = owed.compactMap { $0.int("id") }
        guard !ids.isEmpty else { return result }
        let placeholders = SQLText.parameters(count: ids.count, from: 3)
        try db.send(
            "UPDATE notification_deliveries SET lease_owner = ?1, lease_until_ms = ?2 WHERE id IN (\(placeholders))",
            [.text(owner), .integer(leaseUntil)] + ids.map { SQLValue.integer($0) })
        var claimed: [Delivery] = []
        var contents: [Int64: NotificationContent] = [:]
        for row in owed {
            guard let id = row.int("id"), let outboxID = row.int("outbox_id"), let key = row.string("key"),
                let type = row.string("type"), let content = row.string("content"), let attempts = row.int("attempts"),
                let expires = row.int("delivery_expires_ms"), let notBefore = row.int("not_before_ms")
            else { throw StoreError.corruptRow(table: "notification_deliveries") }
            let target: Target
            if let userID = row.string("user_id") {
                target = .device(userID: userID, try DeviceStore.deviceFromRow(row))
            } else {
                guard let recipients = row.string("recipients") else { throw StoreError.corruptRow(table: "notification_deliveries") }
                let bytes = Array(recipients.utf8)
                target = .webhook(recipients: try FlatJSONReader.stringArray(bytes) ?? DocumentCoding.decode([String].self, from: bytes))
            }
            // Read once per outbox row (its devices' deliveries share it): the flat reader, Foundation's
            // decoder for anything else.
            let decoded: NotificationContent
            if let known = contents[outboxID] {
                decoded = known
            } else {
                let contentBytes = Array(content.utf8)
                decoded =
                    try FlatJSONReader.notificationContent(contentBytes)
                    ?? DocumentCoding.decode(NotificationContent.self, from: contentBytes)
                contents[outboxID] = decoded
            }
            claimed.append(
                Delivery(
                    id: id, outboxID: outboxID, key: key, type: NotificationType(rawValue: type),
                    content: decoded, target: target,
                    attempts: Int(attempts), notBefore: notBefore, expiresAt: expires))
        }
        result.deliveries = claimed
        return result
    }

    /// The earliest `next_attempt_ms` after `now` (`nextDue`) and, when `countingDepth`, how many
    /// deliveries wait (`depth`, a scan of the table; else nil), read together (PostgreSQL: one
    /// pipeline, one round trip): what the dispatcher asks after each pass. Without the count it is
    /// one statement (a `.statement` read may run it).
    public static func outlook(
        after now: Int64, countingDepth: Bool, on db: any SQLConnection
    ) throws -> (depth: Int64?, nextDue: Int64?) {
        let due: (sql: String, bindings: [SQLValue]) = (
            "SELECT MIN(next_attempt_ms) AS due FROM notification_deliveries WHERE next_attempt_ms > ?1", [.integer(now)]
        )
        guard countingDepth else { return (nil, try db.queryOne(due.sql, due.bindings)?.int("due")) }
        let rows = try db.queryEach([due, (depthSQL, [])])
        return (rows[1].first?.int("n") ?? 0, rows[0].first?.int("due"))
    }

    /// The provider accepted it (or it can never be sent): the delivery is done.
    public static func settle(_ id: Int64, on db: any SQLConnection) throws {
        try settle([id], on: db)
    }

    /// Most ids one settling statement names (a group settles at most one round's claim, 128 by
    /// default: one statement).
    static let settleChunk = 500

    /// The provider accepted them (or they can never be sent): the deliveries are done — one
    /// statement per `settleChunk` ids, sent with the COMMIT (`send`), so settling a round costs no
    /// round trip of its own. Safe as a `.concurrent` write: a settler deletes only the rows it leased.
    public static func settle(_ ids: [Int64], on db: any SQLConnection) throws {
        for start in stride(from: 0, to: ids.count, by: settleChunk) {
            let chunk = ids[start..<min(start + settleChunk, ids.count)]
            let placeholders = SQLText.parameters(count: chunk.count, from: 1)
            try db.send("DELETE FROM notification_deliveries WHERE id IN (\(placeholders))", chunk.map { SQLValue.integer($0) })
        }
    }

    /// Try again at `nextAttempt` (the lease ends now); past its expiry the delivery is dropped
    /// instead. Returns false when it was dropped.
    @discardableResult
    public static func retry(_ id: Int64, at nextAttempt: Int64, error: String, on db: any SQLConnection) throws -> Bool {
        guard
            let row = try db.queryOne("SELECT expires_ms FROM notification_deliveries WHERE id = ?1", [.integer(id)]),
            let expires = row.int("expires_ms"), nextAttempt < expires
        else {
            try settle(id, on: db)
            return false
        }
        try db.run(
            """
            UPDATE notification_deliveries SET attempts = attempts + 1, next_attempt_ms = ?2, lease_owner = NULL,
                lease_until_ms = NULL, last_error = ?3
            WHERE id = ?1
            """, [.integer(id), .integer(nextAttempt), .text(String(error.prefix(500)))])
        return true
    }

    /// Not sent this time, through no fault of its own (its destination's or account's send budget was
    /// full): due again at `until`, its lease freed, no attempt counted.
    public static func postpone(_ ids: [Int64], until: Int64, on db: any SQLConnection) throws {
        guard !ids.isEmpty else { return }
        let placeholders = SQLText.parameters(count: ids.count, from: 2)
        try db.run(
            """
            UPDATE notification_deliveries SET next_attempt_ms = ?1, lease_owner = NULL, lease_until_ms = NULL
            WHERE id IN (\(placeholders))
            """, [.integer(until)] + ids.map { SQLValue.integer($0) })
    }

    /// The provider says the address is gone for good (APNs 410, FCM UNREGISTERED, Web Push 404/410):
    /// the device is deleted, and with it every delivery to it.
    public static func deviceGone(userID: String, deviceID: String, on db: any SQLConnection) throws {
        try DeviceStore.delete(userID: userID, deviceID: deviceID, on: db)
    }

    /// Makes every delivery waiting for a retry due at `now` and frees its lease (`chronir-admin
    /// notifications retry`: after a provider outage). Returns how many.
    public static func retryNow(at now: Int64, on db: any SQLConnection) throws -> Int {
        try db.run(
            """
            UPDATE notification_deliveries SET next_attempt_ms = ?1, lease_owner = NULL, lease_until_ms = NULL
            WHERE attempts > 0 AND next_attempt_ms > ?1
            """, [.integer(now)])
    }

    /// Deliveries per channel and whether they failed before, for operators.
    public static func counts(on db: any SQLConnection) throws -> (pending: Int64, retrying: Int64) {
        let row = try db.queryOne(
            """
            SELECT COUNT(*) AS total, COALESCE(SUM(CASE WHEN attempts > 0 THEN 1 ELSE 0 END), 0) AS retrying
            FROM notification_deliveries
            """)
        return (row?.int("total") ?? 0, row?.int("retrying") ?? 0)
    }

    /// Deliveries waiting (the outbox depth metric). One statement.
    public static func depth(on db: any SQLConnection) throws -> Int64 {
        try db.queryOne(depthSQL, [])?.int("n") ?? 0
    }

    /// Counts the waiting deliveries as `n` (`depth`, `outlook`).
    private static let depthSQL = "SELECT COUNT(*) AS n FROM notification_deliveries"
}
