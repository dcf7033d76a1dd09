public import Domain
public import Storage

/// A group's activity history for its members (`GET /v1/groups/{id}/activity`,
/// docs/api.md#group-activity): the group topic's change-log batches of the events a group page tells
/// in words, newest first, paged by batch. A member reads only what happened since they (last) joined:
/// what came before is not theirs to read, as a resume after a rejoin sends a snapshot, not the gap.
/// The log's retention bounds how far back it reaches (docs/design.md#retention).
public enum GroupActivity {
    /// The events the history carries: who came and went, roles, the group's details, alarms created,
    /// edited, deleted and missed. Answers (`shared_completion`) are the page's own list; invite codes,
    /// invitations and attachments are not activity in this sense.
    public static let events: [ChangeEvent] = [
        .memberJoined, .invitationAccepted, .memberLeft, .memberRemoved, .roleChanged, .ownershipTransferred,
        .groupUpdated, .sharedAlarmCreated, .sharedAlarmUpdated, .sharedAlarmDeleted, .missedAlarmFollowup,
    ]

    /// One page: batches newest first (each batch's rows on the group topic, in seq order) and the
    /// cursor of the next older page (nil at the end).
    public struct Page: Sendable, Equatable {
        public var batches: [ChangeFeed.Batch]
        public var nextBefore: Int64?
        /// The titles of the shared alarms the page's rows removed, by alarm id (a deleted
        /// alarm's line still names it). Read from the soft-deleted row, kept until the alarm is purged.
        public var removedAlarmTitles: [String: String] = [:]
    }

    /// The `limit` newest batches of `events` on the group's topic whose batch is below `before` (nil:
    /// from the newest), at or after the caller's join. Non-members get `notFound("group")`.
    public static func page(
        groupID: String, userID: String, before: Int64?, limit: Int, on db: any SQLConnection
    ) throws -> Page {
        precondition(limit > 0, "limit must be positive")
        let (_, member) = try GroupStore.access(groupID: groupID, userID: userID, on: db)
        let topic = ChangeLog.groupTopic(groupID)
        let eventList = events.enumerated().map { "?\($0.offset + 5)" }.joined(separator: ", ")
        let eventValues = events.map { SQLValue.text($0.rawValue) }
        let batchIDs = try db.query(
            """
            SELECT DISTINCT batch FROM change_log
            WHERE topic = ?1 AND at_ms >= ?2 AND batch < ?3 AND event IN (\(eventList))
            ORDER BY batch DESC LIMIT ?4
            """,
            [.text(topic), .integer(member.joinedAt.milliseconds), .integer(before ?? Int64.max), .integer(Int64(limit) + 1)]
                + eventValues
        ).compactMap { $0.int("batch") }
        let shown = Array(batchIDs.prefix(limit))
        guard let newest = shown.first, let oldest = shown.last else { return Page(batches: [], nextBefore: nil) }
        let rows = try db.query(
            """
            SELECT seq, batch, event, at_ms, actor, topic, kind, op, entity_id, document, reason FROM change_log
            WHERE topic = ?1 AND batch >= ?2 AND batch <= ?3 AND at_ms >= ?4 AND event IN (\(eventList))
            ORDER BY seq
            """,
            [.text(topic), .integer(oldest), .integer(newest), .integer(member.joinedAt.milliseconds)] + eventValues)
        let batches = Array(ChangeFeed.group(rows).reversed())
        let removed = batches.flatMap(\.rows).map(\.change).filter { $0.kind == .sharedAlarm && $0.op == .removed }
        var titles: [String: String] = [:]
        for change in removed where titles[change.entityID] == nil {
            if let alarm = try SharedAlarmStore.alarm(id: change.entityID, groupID: groupID, includeDeleted: true, on: db) {
                titles[change.entityID] = alarm.settings.title
            }
        }
        return Page(batches: batches, nextBefore: batchIDs.count > limit ? oldest : nil, removedAlarmTitles: titles)
    }
}
