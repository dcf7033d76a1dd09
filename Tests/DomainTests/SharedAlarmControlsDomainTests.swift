import Domain
import Foundation
import Testing

/// The shared-alarm controls as pure functions of (alarm, now): `firstFire(after:)`, `setControls`,
/// `reopen`, `preAlarmAt`, `answerableFrom`, `occurrenceState(at:)`, and `SharedAlarmRules.pauseEnd`.
@Suite("SharedAlarm controls — pause and disable move the occurrence, the lead window, states")
struct SharedAlarmControlsDomainTests {
    static let hour: Int64 = 3_600_000
    static let nine: Int64 = 1_770_368_400_000  // 2026-02-06T09:00Z
    static let ten = nine + hour  // the first daily 10:00 fire

    static func alarm(_ configure: (inout AlarmSettings) -> Void = { _ in }) throws -> SharedAlarm {
        let timing = AlarmTiming(
            schedule: Schedule(.customDays(intervalDays: 1), startDate: try #require(LocalDate(year: 2026, month: 2, day: 1))),
            timesOfDay: [try #require(TimeOfDay(hour: 10, minute: 0))], timezone: "UTC")
        var settings = AlarmSettings(title: "T", timing: timing)
        configure(&settings)
        var alarm = SharedAlarm(
            id: "x", groupID: "g", createdBy: "o", settings: settings, createdAt: Timestamp(milliseconds: nine),
            updatedAt: Timestamp(milliseconds: nine))
        alarm.openNextOccurrence(after: nine, activeMembers: ["o"])
        return alarm
    }

    @Test("a fire exactly at paused_until is the first after the pause; one a millisecond before is not")
    func pauseBoundary() throws {
        var alarm = try Self.alarm()
        let changed1 = alarm.setControls(isEnabled: true, pausedUntil: Timestamp(milliseconds: Self.ten + 24 * Self.hour), at: Self.nine)
        #expect(changed1)
        #expect(alarm.firstFire(after: Self.nine) == Self.ten + 24 * Self.hour)
        let changed2 = alarm.setControls(
            isEnabled: true, pausedUntil: Timestamp(milliseconds: Self.ten + 24 * Self.hour + 1), at: Self.nine)
        #expect(changed2)
        #expect(alarm.firstFire(after: Self.nine) == Self.ten + 48 * Self.hour)
        alarm.reopen(at: Self.nine, activeMembers: ["o"])
        #expect(alarm.nextFireAt?.milliseconds == Self.ten + 48 * Self.hour)
        #expect(alarm.answerableFrom == Self.ten + 24 * Self.hour + 1, "never before the pause ends")
        #expect(alarm.isHeld(at: Self.ten + 24 * Self.hour) && !alarm.isHeld(at: Self.ten + 24 * Self.hour + 1))
    }

    @Test("disabling ends the occurrence; a lapsed pause is no pause; unchanged controls change nothing")
    func switches() throws {
        var alarm = try Self.alarm()
        let changed3 = alarm.setControls(isEnabled: true, pausedUntil: nil, at: Self.nine)
        #expect(!changed3, "already so")
        let changed4 = alarm.setControls(isEnabled: false, pausedUntil: nil, at: Self.nine)
        #expect(changed4)
        alarm.reopen(at: Self.nine, activeMembers: ["o"])
        #expect(alarm.nextFireAt == nil && alarm.openOccurrence == nil && alarm.occurrence?.status == .closed)
        #expect(alarm.preAlarmAt == nil && alarm.answerableFrom == nil && alarm.occurrenceState(at: Self.ten) == nil)
        #expect(alarm.firstFire(after: Self.nine) == nil)
        let changed5 = alarm.setControls(isEnabled: true, pausedUntil: nil, at: Self.ten + 1)
        #expect(changed5)
        alarm.reopen(at: Self.ten + 1, activeMembers: ["o"])
        #expect(alarm.nextFireAt?.milliseconds == Self.ten + 24 * Self.hour, "from now, not the 10:00 just past")
        // A pause that lapsed: clearing it is no change.
        alarm.pausedUntil = Timestamp(milliseconds: Self.ten)
        let changed6 = alarm.setControls(isEnabled: true, pausedUntil: nil, at: Self.ten + 1)
        #expect(!changed6)
        #expect(alarm.pausedUntil?.milliseconds == Self.ten, "kept as it was: nothing written")
    }

    @Test("a pre-alarm inside the pause is dropped; the lead window and the states at their edges")
    func preAlarmLeadStates() throws {
        var alarm = try Self.alarm {
            $0.preAlarmEnabled = true
            $0.preAlarmOffset = 120
            $0.answerLeadMinutes = 30
        }
        #expect(alarm.preAlarmAt == Self.ten - 2 * Self.hour)
        #expect(alarm.answerableFrom == Self.ten - 30 * 60_000)
        #expect(alarm.occurrenceState(at: Self.ten - 1) == .upcoming)
        #expect(alarm.occurrenceState(at: Self.ten) == .due)
        #expect(alarm.occurrenceState(at: Self.ten + 24 * Self.hour - 1) == .due)
        #expect(alarm.occurrenceState(at: Self.ten + 24 * Self.hour) == .missed)
        // Paused until 2026-02-07T09:00Z: the 10:00 occurrence's pre-alarm (08:00) falls inside.
        let changed7 = alarm.setControls(isEnabled: true, pausedUntil: Timestamp(milliseconds: Self.nine + 24 * Self.hour), at: Self.nine)
        #expect(changed7)
        alarm.reopen(at: Self.nine, activeMembers: ["o"])
        #expect(alarm.nextFireAt?.milliseconds == Self.ten + 24 * Self.hour)
        #expect(alarm.preAlarmAt == nil)
        #expect(alarm.answerableFrom == Self.ten + 24 * Self.hour - 30 * 60_000, "the lead window is after the pause")
    }

    @Test("pauseEnd: past or now is none, at most 366 days ahead")
    func pauseEnd() throws {
        let now = Self.nine
        #expect(try SharedAlarmRules.pauseEnd(Timestamp(milliseconds: now), now: now) == nil)
        #expect(try SharedAlarmRules.pauseEnd(nil, now: now) == nil)
        let limit = now + SharedAlarmRules.maxPauseMilliseconds
        #expect(try SharedAlarmRules.pauseEnd(Timestamp(milliseconds: limit), now: now)?.milliseconds == limit)
        #expect(throws: DomainError.self) { try SharedAlarmRules.pauseEnd(Timestamp(milliseconds: limit + 1), now: now) }
    }

    @Test("documents written before the controls existed read as enabled, not paused, with the default lead")
    func olderDocuments() throws {
        let alarm = try Self.alarm()
        var object = try #require(try JSONSerialization.jsonObject(with: Data(DocumentCoding.encode(alarm))) as? [String: Any])
        for key in ["is_enabled", "paused_until", "answer_lead_minutes", "answerable_from"] { object[key] = nil }
        let older = try JSONSerialization.data(withJSONObject: object)
        let read = try DocumentCoding.decode(SharedAlarm.self, from: Array(older))
        #expect(read.isEnabled && read.pausedUntil == nil)
        #expect(read.settings.answerLeadMinutes == SharedAlarmRules.defaultAnswerLeadMinutes)
        #expect(read == alarm)
    }
}
