/// A group's shared alarm as the API and the change log show it (docs/design.md#shared-alarms):
/// the editable `settings` plus server-kept state — `next_fire_at`, the open `occurrence`, the last
/// completion and miss, `version`, timestamps. One flat JSON object; see `CodingKeys`.
///
/// Occurrence life cycle (issue 4; rules decided here are marked *decision*):
/// - The open occurrence is `next_fire_at`. Its required set is fixed when it opens: the assignees, or
///   every active member when `assigned_to_uids` is empty (`requiredSet`). Later joiners and members
///   assigned later count from the next occurrence (*decision* for the latter: the set only shrinks).
/// - It closes when the completion rule is met; closing sets `last_completed_at` when any answer was
///   `completed` (*decision* for rule `all`) and opens the next occurrence at
///   `NextFire.after(scheduled_at)` — never from "now", so late answers do not drift the schedule.
/// - When nothing fires again (one-time done, past `end_date`) `next_fire_at` is null, the last
///   occurrence stays with status `closed`/`missed`, and `is_active` is false.
/// - A schedule/times/zone change re-opens the occurrence at `NextFire.after(now)` with a fresh required
///   set; if that instant equals the open occurrence's, the occurrence (and its answers) is kept.
public struct SharedAlarm: Sendable, Codable, Equatable {
    public var id: String
    public var groupID: String
    /// `created_by_uid`: may delete the alarm even without a manager role.
    public var createdBy: String
    public var settings: AlarmSettings
    /// The open occurrence's time; nil when the alarm never fires again.
    public var nextFireAt: Timestamp?
    /// When the last occurrence closed with at least one `completed` answer (the closing answer's time).
    public var lastCompletedAt: Timestamp?
    /// The scheduled time of the last occurrence the overdue sweep marked `missed`.
    public var lastMissedAt: Timestamp?
    /// The current (open) occurrence, or the last one once the alarm never fires again.
    public var occurrence: Occurrence?
    /// Bumped on every change of this document (optimistic locking, CA010).
    public var version: Int64
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    public var deletedAt: Timestamp?

    public init(
        id: String, groupID: String, createdBy: String, settings: AlarmSettings, nextFireAt: Timestamp? = nil,
        lastCompletedAt: Timestamp? = nil, lastMissedAt: Timestamp? = nil, occurrence: Occurrence? = nil,
        version: Int64 = 1, createdAt: Timestamp, updatedAt: Timestamp, deletedAt: Timestamp? = nil
    ) {
        self.id = id
        self.groupID = groupID
        self.createdBy = createdBy
        self.settings = settings
        self.nextFireAt = nextFireAt
        self.lastCompletedAt = lastCompletedAt
        self.lastMissedAt = lastMissedAt
        self.occurrence = occurrence
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.deletedAt = deletedAt
    }

    /// Not deleted and fires again.
    public var isActive: Bool { deletedAt == nil && nextFireAt != nil }

    /// The open occurrence, if there is one.
    public var openOccurrence: Occurrence? { occurrence?.status == .open ? occurrence : nil }

    /// When the pre-alarm warning of the open occurrence is due (epoch ms): `pre_alarm_offset`
    /// minutes before it, when `pre_alarm_enabled`; nil otherwise.
    public var preAlarmAt: Int64? {
        guard settings.preAlarmEnabled, let open = openOccurrence else { return nil }
        return open.scheduledAt.milliseconds - Int64(settings.preAlarmOffset) * 60_000
    }

    /// Who must answer an occurrence opening now: the assignees still active (in assignee order), or
    /// every active member when there are no assignees.
    public static func requiredSet(assignees: [String], activeMembers: [String]) -> [String] {
        guard !assignees.isEmpty else { return activeMembers }
        let active = Set(activeMembers)
        return assignees.filter { active.contains($0) }
    }

    /// Opens the first occurrence strictly after `instant` (epoch ms) with a fresh required set, or —
    /// when nothing fires again — sets `next_fire_at` null and keeps the last occurrence.
    public mutating func openNextOccurrence(after instant: Int64, activeMembers: [String]) {
        guard let next = NextFire.after(instant, timing: settings.timing) else {
            nextFireAt = nil
            return
        }
        nextFireAt = Timestamp(milliseconds: next)
        occurrence = Occurrence(
            scheduledAt: Timestamp(milliseconds: next),
            requiredUIDs: Self.requiredSet(assignees: settings.assignedTo, activeMembers: activeMembers))
    }

    /// After the occurrence closed at `now`: records `last_completed_at` if any answer was `completed`
    /// and opens the next occurrence after the closed one's scheduled time (no drift).
    public mutating func advanceAfterClose(at now: Int64, activeMembers: [String]) {
        guard let closed = occurrence, closed.status != .open else { return }
        if closed.answered.contains(where: { $0.status == .completed }) {
            lastCompletedAt = Timestamp(milliseconds: now)
        }
        openNextOccurrence(after: closed.scheduledAt.milliseconds, activeMembers: activeMembers)
    }

    /// Marks the open occurrence `missed` (the overdue sweep) and opens the next one. Returns the missed
    /// occurrence, or nil when there was nothing open.
    public mutating func markMissed(at now: Int64, activeMembers: [String]) -> Occurrence? {
        guard var open = openOccurrence else { return nil }
        open.status = .missed
        occurrence = open
        lastMissedAt = open.scheduledAt
        openNextOccurrence(after: open.scheduledAt.milliseconds, activeMembers: activeMembers)
        return open
    }

    /// Removes `userID` from the assignees and from the open occurrence (unassigned, left, removed). If
    /// that closes the occurrence, advances it. Returns whether the document changed. An assignee list
    /// emptied this way means "all active members" from the next occurrence (*decision*: the alarm keeps
    /// ringing for someone rather than silently going dead).
    public mutating func dropMember(_ userID: String, at now: Int64, activeMembers: [String]) -> Bool {
        var changed = false
        if settings.assignedTo.contains(userID) {
            settings.assignedTo.removeAll { $0 == userID }
            changed = true
        }
        if var open = openOccurrence, open.requiredUIDs.contains(userID),
            !open.answered.contains(where: { $0.userID == userID })
        {
            let closed = open.drop(userID, rule: settings.completionRule)
            occurrence = open
            changed = true
            if closed { advanceAfterClose(at: now, activeMembers: activeMembers.filter { $0 != userID }) }
        }
        return changed
    }

    /// The shared alarm's own keys; the alarm fields are `AlarmSettings.FieldKeys` (same flat object).
    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, occurrence, version
        case groupID = "group_id"
        case createdBy = "created_by_uid"
        case assignedTo = "assigned_to_uids"
        case completionRule = "completion_rule"
        case requireAny = "require_any_completion"
        case requireAll = "require_all_completion"
        case graceMinutes = "grace_minutes"
        case nextFireAt = "next_fire_at"
        case lastCompletedAt = "last_completed_at"
        case lastMissedAt = "last_missed_at"
        case isActive = "is_active"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case deletedAt = "deleted_at"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        groupID = try c.decode(String.self, forKey: .groupID)
        createdBy = try c.decode(String.self, forKey: .createdBy)
        settings = try AlarmSettings(
            from: decoder, assignedTo: try c.decode([String].self, forKey: .assignedTo),
            completionRule: try c.decode(CompletionRule.self, forKey: .completionRule),
            graceMinutes: try c.decode(Int.self, forKey: .graceMinutes))
        nextFireAt = try c.decodeIfPresent(Timestamp.self, forKey: .nextFireAt)
        lastCompletedAt = try c.decodeIfPresent(Timestamp.self, forKey: .lastCompletedAt)
        lastMissedAt = try c.decodeIfPresent(Timestamp.self, forKey: .lastMissedAt)
        occurrence = try c.decodeIfPresent(Occurrence.self, forKey: .occurrence)
        version = try c.decode(Int64.self, forKey: .version)
        createdAt = try c.decode(Timestamp.self, forKey: .createdAt)
        updatedAt = try c.decode(Timestamp.self, forKey: .updatedAt)
        deletedAt = try c.decodeIfPresent(Timestamp.self, forKey: .deletedAt)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        let s = settings
        try s.encodeFields(to: encoder)
        try c.encode(id, forKey: .id)
        try c.encode(groupID, forKey: .groupID)
        try c.encode(createdBy, forKey: .createdBy)
        try c.encode(s.assignedTo, forKey: .assignedTo)
        try c.encode(s.completionRule, forKey: .completionRule)
        try c.encode(s.completionRule == .any, forKey: .requireAny)
        try c.encode(s.completionRule == .all, forKey: .requireAll)
        try c.encode(s.graceMinutes, forKey: .graceMinutes)
        try c.encode(nextFireAt, forKey: .nextFireAt)
        try c.encode(lastCompletedAt, forKey: .lastCompletedAt)
        try c.encode(lastMissedAt, forKey: .lastMissedAt)
        try c.encode(occurrence, forKey: .occurrence)
        try c.encode(isActive, forKey: .isActive)
        try c.encode(version, forKey: .version)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(updatedAt, forKey: .updatedAt)
        try c.encode(deletedAt, forKey: .deletedAt)
    }
}

/// docs/design.md#shared-alarms. One product table also spells `notification_only`; decoding accepts it as
/// `notification`.
public enum PersistenceLevel: String, Sendable, Codable, CaseIterable {
    case full, notification, silent

    public init(from decoder: any Decoder) throws {
        self = try TextCoding.decode(decoder, expected: "full, notification or silent") {
            Self(rawValue: $0 == "notification_only" ? "notification" : $0)
        }
    }
}

/// docs/design.md#shared-alarms.
public enum DismissMethod: String, Sendable, Codable, CaseIterable {
    case swipe
    case hold3s = "hold_3s"
    case solveMath = "solve_math"
}

/// docs/design.md#shared-alarms.
public enum AlarmCategory: String, Sendable, Codable, CaseIterable {
    case home, health, finance, vehicle, work, personal, pets, subscriptions
}
