import Domain
import Testing

/// The open occurrence follows the assignment and keeps its answers
/// (docs/design.md#who-answers-the-open-occurrence): pure functions of (alarm, members, now).
@Suite("SharedAlarm — who answers the open occurrence after edits, joins and departures")
struct SharedAlarmAssignmentTests {
    static let nine: Int64 = 1_770_368_400_000  // 2026-02-06T09:00Z
    static let ten = nine + 3_600_000
    static let tomorrow = ten + 86_400_000

    /// A daily 10:00 UTC alarm opened at 09:00 on 2026-02-06 for `assignees` among `members`.
    static func alarm(_ assignees: [String], rule: CompletionRule = .any, members: [String]) throws -> SharedAlarm {
        let timing = AlarmTiming(
            schedule: Schedule(.customDays(intervalDays: 1), startDate: try #require(LocalDate(year: 2026, month: 2, day: 1))),
            timesOfDay: [try #require(TimeOfDay(hour: 10, minute: 0))], timezone: "UTC")
        var settings = AlarmSettings(title: "Bins", timing: timing)
        settings.assignedTo = assignees
        settings.completionRule = rule
        var alarm = SharedAlarm(
            id: "a", groupID: "g", createdBy: "o", settings: settings, createdAt: Timestamp(milliseconds: nine),
            updatedAt: Timestamp(milliseconds: nine))
        alarm.openNextOccurrence(after: nine, activeMembers: members)
        return alarm
    }

    static func reassign(_ alarm: inout SharedAlarm, to assignees: [String], members: [String]) {
        var settings = alarm.settings
        settings.assignedTo = assignees
        alarm.edit(settings: settings, isEnabled: true, pausedUntil: nil, activeMembers: members, at: nine)
    }

    @Test("a disjoint reassignment hands the open occurrence over, unanswered and open", arguments: [CompletionRule.any, .all])
    func disjoint(_ rule: CompletionRule) throws {
        var alarm = try Self.alarm(["cy"], rule: rule, members: ["o", "cy", "dee"])
        Self.reassign(&alarm, to: ["dee"], members: ["o", "cy", "dee"])
        let open = try #require(alarm.openOccurrence)
        #expect(open.requiredUIDs == ["dee"])
        #expect(open.scheduledAt.milliseconds == Self.ten)
        #expect(alarm.nextFireAt?.milliseconds == Self.ten)
        #expect(alarm.isActive)
    }

    @Test("an added assignee is asked at once; an answer given stays counted after its author is unassigned")
    func addAndKeep() throws {
        var alarm = try Self.alarm(["a"], rule: .all, members: ["o", "a", "b", "c"])
        Self.reassign(&alarm, to: ["a", "b"], members: ["o", "a", "b", "c"])
        #expect(alarm.openOccurrence?.requiredUIDs == ["a", "b"])
        var open = try #require(alarm.openOccurrence)
        _ = open.answer(userID: "a", status: .completed, at: Timestamp(milliseconds: Self.nine), rule: .all)
        alarm.occurrence = open
        Self.reassign(&alarm, to: ["b", "c"], members: ["o", "a", "b", "c"])
        #expect(alarm.openOccurrence?.requiredUIDs == ["b", "c", "a"])
        #expect(alarm.openOccurrence?.pendingUIDs == ["b", "c"])
        // Unassigning the last pending members once someone answered: what was asked is done.
        Self.reassign(&alarm, to: ["a"], members: ["o", "a", "b", "c"])
        #expect(alarm.nextFireAt?.milliseconds == Self.tomorrow)
        #expect(alarm.occurrence?.status == .open)
        #expect(alarm.lastCompletedAt?.milliseconds == Self.nine)
    }

    @Test("emptying the assignees makes the open occurrence everyone's, at once")
    func everyone() throws {
        var alarm = try Self.alarm(["a"], members: ["o", "a", "b"])
        Self.reassign(&alarm, to: [], members: ["o", "a", "b"])
        #expect(alarm.openOccurrence?.requiredUIDs == ["o", "a", "b"])
        #expect(alarm.nextFireAt?.milliseconds == Self.ten)
    }

    @Test("the only assignee leaving: the occurrence goes to everyone left, nothing closes unanswered")
    func lastAssigneeLeaves() throws {
        var alarm = try Self.alarm(["a"], members: ["o", "a", "b"])
        let changed = alarm.dropMember("a", activeMembers: ["o", "b"], at: Self.nine)
        #expect(changed)
        #expect(alarm.settings.assignedTo.isEmpty)
        #expect(alarm.openOccurrence?.requiredUIDs == ["o", "b"])
        #expect(alarm.nextFireAt?.milliseconds == Self.ten)
        #expect(alarm.lastCompletedAt == nil)
    }

    @Test("a leaver who answered stays counted; a non-assignee leaving changes nothing")
    func leaverAnswered() throws {
        var alarm = try Self.alarm(["a", "b"], rule: .all, members: ["o", "a", "b"])
        var open = try #require(alarm.openOccurrence)
        _ = open.answer(userID: "a", status: .completed, at: Timestamp(milliseconds: Self.nine), rule: .all)
        alarm.occurrence = open
        let dropped = alarm.dropMember("a", activeMembers: ["o", "b"], at: Self.nine)
        #expect(dropped)
        #expect(alarm.openOccurrence?.requiredUIDs == ["b", "a"])
        #expect(alarm.openOccurrence?.pendingUIDs == ["b"])
        let bystander = alarm.dropMember("o", activeMembers: ["b"], at: Self.nine)
        #expect(!bystander)
    }

    @Test("a joiner of an everyone alarm is asked at once; of an assigned alarm, not")
    func joiner() throws {
        var everyone = try Self.alarm([], rule: .all, members: ["o", "a"])
        let asked = everyone.memberJoined(activeMembers: ["o", "a", "new"], at: Self.nine)
        #expect(asked)
        #expect(everyone.openOccurrence?.pendingUIDs == ["o", "a", "new"])
        var assigned = try Self.alarm(["a"], members: ["o", "a"])
        let notAsked = assigned.memberJoined(activeMembers: ["o", "a", "new"], at: Self.nine)
        #expect(!notAsked)
        #expect(assigned.openOccurrence?.requiredUIDs == ["a"])
    }

    @Test("checkAssignees: every assignee an active member")
    func checkAssignees() throws {
        try SharedAlarmRules.checkAssignees(["a"], activeMembers: ["o", "a"])
        #expect(throws: DomainError.self) { try SharedAlarmRules.checkAssignees(["x"], activeMembers: ["o", "a"]) }
    }

    static func completion(by user: String, at scheduled: Int64) -> SharedCompletion {
        SharedCompletion(
            id: "c", groupID: "g", alarmID: "a", userID: user, userName: user, scheduledAt: Timestamp(milliseconds: scheduled),
            status: .completed, completionMethod: .onTime, snoozeCount: 0, note: nil, completedAt: Timestamp(milliseconds: nine))
    }

    @Test("undo: an answer leaves an open occurrence; one that closed it reopens it when nothing happened since")
    func withdraw() throws {
        var open = try Self.alarm(["a", "b"], rule: .all, members: ["o", "a", "b"])
        var occ = try #require(open.openOccurrence)
        _ = occ.answer(userID: "a", status: .completed, at: Timestamp(milliseconds: Self.nine), rule: .all)
        open.occurrence = occ
        try open.withdraw(
            Self.completion(by: "a", at: Self.ten), otherAnswers: [], previousCompletedAt: nil, activeMembers: ["o", "a", "b"],
            at: Self.nine)
        #expect(open.openOccurrence?.pendingUIDs == ["a", "b"])

        var closed = try Self.alarm(["a"], members: ["o", "a"])
        occ = try #require(closed.openOccurrence)
        _ = occ.answer(userID: "a", status: .completed, at: Timestamp(milliseconds: Self.nine), rule: .any)
        closed.occurrence = occ
        closed.advanceAfterClose(at: Self.nine, activeMembers: ["o", "a"])
        #expect(closed.nextFireAt?.milliseconds == Self.tomorrow)
        let earlier = Timestamp(milliseconds: Self.nine - 86_400_000)
        var undone = closed
        try undone.withdraw(
            Self.completion(by: "a", at: Self.ten), otherAnswers: [], previousCompletedAt: earlier, activeMembers: ["o", "a"],
            at: Self.nine)
        #expect(undone.nextFireAt?.milliseconds == Self.ten)
        #expect(undone.openOccurrence?.pendingUIDs == ["a"])
        #expect(undone.lastCompletedAt == earlier)

        // Answered since: the next occurrence has an answer → refused, nothing changed.
        var moved = closed
        occ = try #require(moved.openOccurrence)
        _ = occ.answer(userID: "o", status: .skipped, at: Timestamp(milliseconds: Self.nine), rule: .all)
        moved.occurrence = occ
        let before = moved
        #expect(throws: DomainError.self) {
            try moved.withdraw(
                Self.completion(by: "a", at: Self.ten), otherAnswers: [], previousCompletedAt: nil, activeMembers: ["o", "a"],
                at: Self.nine)
        }
        #expect(moved == before)
    }
}
