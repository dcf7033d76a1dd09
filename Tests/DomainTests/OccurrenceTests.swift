import Domain
import Testing

/// Occurrence progress and the alarm's advance, as pure functions.
@Suite("Occurrence — any/all progress, shrinking required set, advance without drift")
struct OccurrenceTests {
    static let t0 = Timestamp(milliseconds: 1_000)

    @Test("rule any closes on the first answer, whatever the set size", arguments: 1...5)
    func any(_ n: Int) {
        var occ = Occurrence(scheduledAt: Self.t0, requiredUIDs: (0..<n).map { "u\($0)" })
        let closed = occ.answer(userID: "u0", status: .skipped, at: Self.t0, rule: .any)
        #expect(closed)
        #expect(occ.status == .closed)
        #expect(occ.pendingUIDs == (1..<n).map { "u\($0)" })
    }

    @Test("rule all closes on the last answer", arguments: 1...5)
    func all(_ n: Int) {
        var occ = Occurrence(scheduledAt: Self.t0, requiredUIDs: (0..<n).map { "u\($0)" })
        for i in 0..<n {
            let closed = occ.answer(userID: "u\(i)", status: .completed, at: Self.t0, rule: .all)
            #expect(closed == (i == n - 1))
        }
        #expect(occ.status == .closed)
        #expect(occ.pendingUIDs.isEmpty)
    }

    @Test("dropping the last pending member closes; dropping one who answered changes nothing")
    func drop() {
        var occ = Occurrence(scheduledAt: Self.t0, requiredUIDs: ["a", "b"])
        _ = occ.answer(userID: "a", status: .completed, at: Self.t0, rule: .all)
        let answeredDrop = occ.drop("a", rule: .all)
        #expect(!answeredDrop)
        #expect(occ.requiredUIDs == ["a", "b"])
        let lastDrop = occ.drop("b", rule: .all)
        #expect(lastDrop)
        #expect(occ.status == .closed)
        var lonely = Occurrence(scheduledAt: Self.t0, requiredUIDs: ["a"])
        let emptied = lonely.drop("a", rule: .any)
        #expect(emptied)
        let unknown = lonely.drop("zzz", rule: .any)
        #expect(!unknown)
    }

    @Test("the required set: assignees still active, or everyone when unassigned")
    func requiredSet() {
        #expect(SharedAlarm.requiredSet(assignees: [], activeMembers: ["o", "m"]) == ["o", "m"])
        #expect(SharedAlarm.requiredSet(assignees: ["m", "gone"], activeMembers: ["o", "m"]) == ["m"])
    }

    @Test("closing advances from the scheduled time, and only completed answers set last_completed_at")
    func advance() throws {
        let timing = AlarmTiming(
            schedule: Schedule(.customDays(intervalDays: 1), startDate: try #require(LocalDate(year: 2026, month: 2, day: 1))),
            timesOfDay: [try #require(TimeOfDay(hour: 10, minute: 0))], timezone: "UTC")
        var alarm = SharedAlarm(
            id: "x", groupID: "g", createdBy: "o", settings: AlarmSettings(title: "T", timing: timing),
            createdAt: Self.t0, updatedAt: Self.t0)
        let nine: Int64 = 1_770_368_400_000  // 2026-02-06T09:00Z
        alarm.openNextOccurrence(after: nine, activeMembers: ["o"])
        #expect(alarm.nextFireAt?.milliseconds == nine + 3_600_000)
        var occ = try #require(alarm.openOccurrence)
        _ = occ.answer(userID: "o", status: .skipped, at: Self.t0, rule: .any)
        alarm.occurrence = occ
        alarm.advanceAfterClose(at: nine + 50 * 3_600_000, activeMembers: ["o"])
        #expect(alarm.nextFireAt?.milliseconds == nine + 25 * 3_600_000)
        #expect(alarm.lastCompletedAt == nil)
        let missed = alarm.markMissed(at: 0, activeMembers: ["o"])
        #expect(missed?.status == .missed)
        #expect(alarm.nextFireAt?.milliseconds == nine + 49 * 3_600_000)
    }

    @Test("completion rule from completion_rule and the product's booleans")
    func ruleNames() throws {
        #expect(try SharedAlarmRules.completionRule(named: nil, requireAny: nil, requireAll: nil) == nil)
        #expect(try SharedAlarmRules.completionRule(named: nil, requireAny: nil, requireAll: true) == .all)
        #expect(try SharedAlarmRules.completionRule(named: nil, requireAny: true, requireAll: false) == .any)
        #expect(try SharedAlarmRules.completionRule(named: .all, requireAny: false, requireAll: true) == .all)
        #expect(throws: DomainError.self) { try SharedAlarmRules.completionRule(named: .any, requireAny: nil, requireAll: true) }
        #expect(throws: DomainError.self) { try SharedAlarmRules.completionRule(named: nil, requireAny: true, requireAll: true) }
    }
}
