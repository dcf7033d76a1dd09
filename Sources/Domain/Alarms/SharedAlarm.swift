/// A group's shared alarm as the API and the change log show it (docs/design.md#shared-alarms):
/// the editable `settings` plus server-kept state — `next_fire_at`, the open `occurrence`, the last
/// completion and miss, `version`, timestamps. One flat JSON object; see `CodingKeys` for its keys.
///
/// Occurrence life cycle (rules decided here are marked *decision*):
/// - The open occurrence is `next_fire_at`. Its required set follows the assignment: the assignees, or
///   every active member when `assigned_to_uids` is empty (`requiredSet`), plus whoever already
///   answered it — reassigning, joining and leaving reshape it, and only an answer closes it
///   (`SharedAlarm+Assignment.swift`, docs/design.md#who-answers-the-open-occurrence).
/// - It closes when the completion rule is met; closing sets `last_completed_at` when any answer was
///   `completed` (*decision* for rule `all`) and opens the next occurrence at
///   `NextFire.after(scheduled_at)` — never from "now", so late answers do not drift the schedule.
/// - When nothing fires again (one-time done, past `end_date`) `next_fire_at` is null, the last
///   occurrence stays with status `closed`/`missed`, and `is_active` is false.
/// - A schedule/times/zone change re-opens the occurrence at `NextFire.after(now)` with a fresh required
///   set; if that instant equals the open occurrence's, the occurrence (and its answers) is kept.
///
/// Done and archived (docs/design.md#done-and-archived): `is_done` is derived — the alarm has finished
/// for good (`isDone`); `archived_at` is set by a manager only on a done alarm and cleared by the
/// server whenever the alarm stops being done (an edit that makes it fire again, an answer taken back).
///
/// Controls (docs/design.md#pause-and-disable): `is_enabled: false` ends the open occurrence
/// unanswered and sets `next_fire_at` null; `paused_until` re-opens the occurrence at the first fire at
/// or after the pause's end (`firstFire(after:)`), so nothing is due, fired or swept before it, and a
/// pre-alarm that would fall inside the pause is not sent. Resuming (enabling, or clearing the pause
/// early) re-opens at the first fire after now; a pause that simply lapses needs no write — its
/// occurrence already stands at the first fire after it. The `open_ms`/`pre_alarm_ms` columns copy
/// the document, so the scheduler, the claim-time re-check and the overdue sweep need no rule of their
/// own.
public struct SharedAlarm: Sendable, Codable, Equatable, AlarmRecord {
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
    /// The master switch (`is_enabled`): false = no occurrence, nothing fires, `next_fire_at` null.
    public var isEnabled: Bool
    /// `paused_until`: nothing is due, fires or is swept before this instant. Kept after it lapses
    /// (harmless: every occurrence then stands at or after it).
    public var pausedUntil: Timestamp?
    /// `archived_at`: when a manager archived the alarm (only ever set while `isDone`); nil otherwise.
    public var archivedAt: Timestamp?
    /// Bumped on every change of this document (optimistic locking, CA010).
    public var version: Int64
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    public var deletedAt: Timestamp?

    public init(
        id: String, groupID: String, createdBy: String, settings: AlarmSettings, nextFireAt: Timestamp? = nil,
        lastCompletedAt: Timestamp? = nil, lastMissedAt: Timestamp? = nil, occurrence: Occurrence? = nil,
        isEnabled: Bool = true, pausedUntil: Timestamp? = nil, archivedAt: Timestamp? = nil, version: Int64 = 1,
        createdAt: Timestamp, updatedAt: Timestamp, deletedAt: Timestamp? = nil
    ) {
        self.id = id
        self.groupID = groupID
        self.createdBy = createdBy
        self.settings = settings
        self.nextFireAt = nextFireAt
        self.lastCompletedAt = lastCompletedAt
        self.lastMissedAt = lastMissedAt
        self.occurrence = occurrence
        self.isEnabled = isEnabled
        self.pausedUntil = pausedUntil
        self.archivedAt = archivedAt
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.deletedAt = deletedAt
    }

    /// Not deleted and fires again.
    public var isActive: Bool { deletedAt == nil && nextFireAt != nil }

    /// `is_done` (*decision*, docs/design.md#done-and-archived): finished for good — not deleted, no next
    /// fire, its last occurrence answered (rule met) or missed, and no fire of the schedule after that
    /// occurrence (a one-time alarm answered or missed, a repeating one past its end date). Switching off
    /// or pausing past the last fire never makes an alarm done: its last occurrence ended unanswered,
    /// and switching on or resuming may open it again.
    public var isDone: Bool {
        guard deletedAt == nil, nextFireAt == nil, let last = occurrence else { return false }
        switch last.status {
        case .open: return false
        case .missed: break
        case .closed:
            guard !last.answered.isEmpty, last.isSatisfied(by: settings.completionRule) else { return false }
        }
        return NextFire.after(last.scheduledAt.milliseconds, timing: settings.timing) == nil
    }

    /// Clears `archived_at` when the alarm is no longer done (every save calls it: archived implies done).
    /// Returns whether it changed anything.
    @discardableResult
    public mutating func unarchiveUnlessDone() -> Bool {
        guard archivedAt != nil, !isDone else { return false }
        archivedAt = nil
        return true
    }

    /// The open occurrence, if there is one.
    public var openOccurrence: Occurrence? { occurrence?.status == .open ? occurrence : nil }

    /// The pre-alarm warnings of the open occurrence, earliest first (epoch ms, and the offset in
    /// minutes): one `pre_alarm_offsets` entry each, when `pre_alarm_enabled`; none otherwise. A
    /// warning that would fall inside a pause is not sent (left out).
    public var preAlarms: [(at: Int64, offset: Int)] {
        guard settings.preAlarmEnabled, let open = openOccurrence else { return [] }
        let pausedUntil = pausedUntil?.milliseconds ?? .min
        return settings.preAlarmOffsets.sorted(by: >)
            .map { (at: open.scheduledAt.milliseconds - Int64($0) * 60_000, offset: $0) }
            .filter { $0.at >= pausedUntil }
    }

    /// The instant stored as `pre_alarm_ms` on a write: the earliest pre-alarm of the open occurrence
    /// (the fire scheduler advances it past each one it queues, `preAlarm(after:)`); nil without one.
    public var preAlarmAt: Int64? { preAlarms.first?.at }

    /// The first pre-alarm of the open occurrence strictly after `instant`, nil after the last.
    public func preAlarm(after instant: Int64) -> (at: Int64, offset: Int)? {
        preAlarms.first { $0.at > instant }
    }

    /// From when the open occurrence may be answered (epoch ms): `answer_lead_minutes` before its time,
    /// and never before a pause ends; nil without an open occurrence.
    public var answerableFrom: Int64? {
        guard let open = openOccurrence else { return nil }
        let lead = open.scheduledAt.milliseconds - Int64(settings.answerLeadMinutes) * 60_000
        return max(lead, pausedUntil?.milliseconds ?? lead)
    }

    /// The state of the current occurrence at `now` (docs/design.md#occurrence-states), nil when there
    /// is none (deleted, disabled, or an alarm that never fired and never fires again).
    public func occurrenceState(at now: Int64) -> OccurrenceState? {
        guard deletedAt == nil, let occurrence else { return nil }
        switch occurrence.status {
        case .missed: return .missed
        case .closed: return nil
        case .open:
            let time = occurrence.scheduledAt.milliseconds
            if now < time { return .upcoming }
            return now < time + Int64(settings.graceMinutes) * 60_000 ? .due : .missed
        }
    }

    /// The first fire strictly after `instant` that the controls allow: none while disabled, none
    /// before `paused_until`.
    public func firstFire(after instant: Int64) -> Int64? {
        guard isEnabled else { return nil }
        let from = max(instant, (pausedUntil?.milliseconds ?? instant) - 1)
        return NextFire.after(from, timing: settings.timing)
    }

    /// Whether the controls stop the alarm at `now`: disabled, or paused past `now`.
    public func isHeld(at now: Int64) -> Bool {
        !isEnabled || (pausedUntil.map { $0.milliseconds > now } ?? false)
    }

    /// Sets `is_enabled` and `paused_until` (already through `SharedAlarmRules.pauseEnd`) when that
    /// changes what fires at `now` — a lapsed pause counts as none — and returns whether it did (the
    /// caller then calls `reopen(at:activeMembers:)`).
    public mutating func setControls(isEnabled: Bool, pausedUntil: Timestamp?, at now: Int64) -> Bool {
        let pausedNow = self.pausedUntil.flatMap { $0.milliseconds > now ? $0 : nil }
        guard isEnabled != self.isEnabled || pausedUntil != pausedNow else { return false }
        self.isEnabled = isEnabled
        self.pausedUntil = pausedUntil
        return true
    }

    /// After a timing or control change at `now`: re-opens the occurrence at `firstFire(after: now)`
    /// with a fresh required set — unless that is the open occurrence's instant (kept, with its
    /// answers). When nothing fires (disabled, or done) the open occurrence ends unanswered.
    public mutating func reopen(at now: Int64, activeMembers: [String]) {
        let next = firstFire(after: now)
        guard next == nil || next != openOccurrence?.scheduledAt.milliseconds else { return }
        if var open = openOccurrence, next == nil {
            open.status = .closed
            occurrence = open
        }
        openNextOccurrence(after: now, activeMembers: activeMembers)
    }

    /// Who must answer an occurrence opening now: the assignees still active (in assignee order), or
    /// every active member when there are no assignees.
    public static func requiredSet(assignees: [String], activeMembers: [String]) -> [String] {
        guard !assignees.isEmpty else { return activeMembers }
        let active = Set(activeMembers)
        return assignees.filter { active.contains($0) }
    }

    /// Opens the first occurrence strictly after `instant` (epoch ms) that the controls allow
    /// (`firstFire(after:)`) with a fresh required set, or — when nothing fires again, or the alarm is
    /// disabled — sets `next_fire_at` null and keeps the last occurrence.
    public mutating func openNextOccurrence(after instant: Int64, activeMembers: [String]) {
        guard let next = firstFire(after: instant) else {
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

    /// The shared alarm's own keys; the rest of the same flat object are `AlarmSettings.FieldKeys` (the
    /// alarm fields), `AlarmSettings.SharedKeys` (what only shared alarms have, also written by the
    /// body) and `AlarmSettings.RecordKeys` (what both alarm documents have).
    enum CodingKeys: String, CodingKey, CaseIterable {
        case occurrence
        case groupID = "group_id"
        case createdBy = "created_by_uid"
        case isDone = "is_done"
        case archivedAt = "archived_at"
        case answerableFrom = "answerable_from"
        case lastCompletedAt = "last_completed_at"
        case lastMissedAt = "last_missed_at"
        case isActive = "is_active"
    }

    public init(from decoder: any Decoder) throws {
        let r = try decoder.container(keyedBy: AlarmSettings.RecordKeys.self)
        let s = try decoder.container(keyedBy: AlarmSettings.SharedKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try r.decode(String.self, forKey: .id)
        groupID = try c.decode(String.self, forKey: .groupID)
        createdBy = try c.decode(String.self, forKey: .createdBy)
        settings = try AlarmSettings(
            from: decoder, assignedTo: try s.decode([String].self, forKey: .assignedTo),
            completionRule: try s.decode(CompletionRule.self, forKey: .completionRule),
            graceMinutes: try s.decode(Int.self, forKey: .graceMinutes),
            answerLeadMinutes: try s.decodeIfPresent(Int.self, forKey: .answerLeadMinutes)
                ?? SharedAlarmRules.defaultAnswerLeadMinutes)
        // Documents written before the controls existed have none: enabled, not paused.
        isEnabled = try r.decodeIfPresent(Bool.self, forKey: .isEnabled) ?? true
        pausedUntil = try s.decodeIfPresent(Timestamp.self, forKey: .pausedUntil)
        archivedAt = try c.decodeIfPresent(Timestamp.self, forKey: .archivedAt)
        nextFireAt = try r.decodeIfPresent(Timestamp.self, forKey: .nextFireAt)
        lastCompletedAt = try c.decodeIfPresent(Timestamp.self, forKey: .lastCompletedAt)
        lastMissedAt = try c.decodeIfPresent(Timestamp.self, forKey: .lastMissedAt)
        occurrence = try c.decodeIfPresent(Occurrence.self, forKey: .occurrence)
        version = try r.decode(Int64.self, forKey: .version)
        createdAt = try r.decode(Timestamp.self, forKey: .createdAt)
        updatedAt = try r.decode(Timestamp.self, forKey: .updatedAt)
        deletedAt = try r.decodeIfPresent(Timestamp.self, forKey: .deletedAt)
    }

    public func encode(to encoder: any Encoder) throws {
        let settings = self.settings
        try settings.encodeFields(to: encoder)
        var s = encoder.container(keyedBy: AlarmSettings.SharedKeys.self)
        try s.encode(settings.assignedTo, forKey: .assignedTo)
        try s.encode(settings.completionRule, forKey: .completionRule)
        try s.encode(settings.completionRule == .any, forKey: .requireAny)
        try s.encode(settings.completionRule == .all, forKey: .requireAll)
        try s.encode(settings.graceMinutes, forKey: .graceMinutes)
        try s.encode(settings.answerLeadMinutes, forKey: .answerLeadMinutes)
        try s.encode(pausedUntil, forKey: .pausedUntil)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(groupID, forKey: .groupID)
        try c.encode(createdBy, forKey: .createdBy)
        try c.encode(isDone, forKey: .isDone)
        try c.encode(archivedAt, forKey: .archivedAt)
        try c.encode(answerableFrom.map(Timestamp.init(milliseconds:)), forKey: .answerableFrom)
        try c.encode(lastCompletedAt, forKey: .lastCompletedAt)
        try c.encode(lastMissedAt, forKey: .lastMissedAt)
        try c.encode(occurrence, forKey: .occurrence)
        try c.encode(isActive, forKey: .isActive)
        try encodeRecord(to: encoder)
    }
}

/// The state of an alarm's current occurrence at an instant (docs/design.md#occurrence-states):
/// `upcoming` before its time, `due` from its time until `grace_minutes` after, `missed` after that
/// (marked by the sweep, or about to be).
public enum OccurrenceState: String, Sendable, Codable, CaseIterable {
    case upcoming, due, missed
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
