import Domain
import Testing

/// Every named shared-alarm limit at exactly the limit and one over.
@Suite("SharedAlarmRules — limits at the edge")
struct SharedAlarmRulesTests {
    static func settings() throws -> AlarmSettings {
        AlarmSettings(
            title: "T",
            timing: AlarmTiming(
                schedule: Schedule(.customDays(intervalDays: 1), startDate: try #require(LocalDate(year: 2026, month: 2, day: 1))),
                timesOfDay: [try #require(TimeOfDay(hour: 10, minute: 0))], timezone: "UTC"))
    }

    static let cases: [(String, @Sendable (inout AlarmSettings, Int) -> Void, Int)] = [
        ("title", { s, n in s.title = String(repeating: "t", count: n) }, SharedAlarmRules.maxTitleCharacters),
        ("note", { s, n in s.note = String(repeating: "n", count: n) }, SharedAlarmRules.maxNoteCharacters),
        ("sound_id", { s, n in s.soundID = String(repeating: "s", count: n) }, SharedAlarmRules.maxSoundIDBytes),
        ("pre_alarm_offset", { s, n in s.preAlarmOffset = n }, SharedAlarmRules.maxPreAlarmOffset),
        ("snooze_options", { s, n in s.snoozeOptions = Array(1...n) }, SharedAlarmRules.maxSnoozeOptions),
        ("snooze_options", { s, n in s.snoozeOptions = [n] }, SharedAlarmRules.maxSnoozeMinutes),
        ("grace_minutes", { s, n in s.graceMinutes = n }, SharedAlarmRules.maxGraceMinutes),
    ]

    @Test("at the limit passes, one over names the field", arguments: 0..<7)
    func edge(_ i: Int) throws {
        let (field, set, limit) = Self.cases[i]
        var ok = try Self.settings()
        set(&ok, limit)
        _ = try SharedAlarmRules.validate(ok, now: 0)
        var over = try Self.settings()
        set(&over, limit + 1)
        do {
            _ = try SharedAlarmRules.validate(over, now: 0)
            Issue.record("\(field) at \(limit + 1) passed")
        } catch {
            if case .invalidField(let named, _) = error { #expect(named == field) } else { Issue.record("\(error)") }
        }
    }

    @Test("completion note 500, snooze_count 0…1000")
    func completionFields() throws {
        #expect(try SharedAlarmRules.completionNote(String(repeating: "c", count: 500))?.count == 500)
        #expect(throws: DomainError.self) { try SharedAlarmRules.completionNote(String(repeating: "c", count: 501)) }
        #expect(try SharedAlarmRules.completionNote("  ") == nil)
        try SharedAlarmRules.checkSnoozeCount(1000)
        #expect(throws: DomainError.self) { try SharedAlarmRules.checkSnoozeCount(1001) }
        #expect(throws: DomainError.self) { try SharedAlarmRules.checkSnoozeCount(-1) }
    }
}
