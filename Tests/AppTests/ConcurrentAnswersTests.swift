import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing

@testable import App

/// Answering a shared alarm is a `.concurrent` write (docs/architecture.md, Seq order on PostgreSQL):
/// answers to one alarm that arrive at once on two instances still close its occurrence exactly once.
@Suite("Concurrent answers: two instances answering one alarm close its occurrence once")
struct ConcurrentAnswersTests {
    @Test("six members answer a rule-all alarm at once, half through the API, half through another instance's writer")
    func answersOnTwoInstancesCloseOnce() async throws {
        let f = try await SharedAlarmFixture.make(members: 6)
        let alarm = try await f.createAlarm(rule: "all", assignees: f.members)
        let alarmID = try #require(alarm["id"] as? String)
        let other = try f.h.openAnotherHandle()
        defer { other.close() }
        let groupID = f.groupID
        let now = f.h.clock.nowMilliseconds()
        let answers = f.members.enumerated().map { index, member in
            Task { () -> Int in
                if index % 2 == 0 { return await f.answer(alarmID, by: member).status }
                // Another instance: its own writer connection, the same store call the route makes.
                let answer = CompletionStore.Answer(status: .completed, method: .onTime, snoozeCount: 0, note: nil, scheduledAt: nil)
                let recorded = try await other.write(.concurrent) { db in
                    try CompletionStore.record(groupID: groupID, alarmID: alarmID, userID: member.id, answer: answer, at: now, on: db)
                }
                return recorded.created ? 201 : 200
            }
        }
        for answer in answers { #expect(try await answer.value == 201) }
        // Closed once: the alarm moved to the next day's occurrence (not two days on) with nobody's
        // answer in it yet, and it holds exactly the six answers to the first one.
        let after = try await f.alarm(alarmID)
        #expect(after.occurrence["scheduled_at"] as? String == SharedAlarmFixture.secondFire)
        #expect((after.occurrence["answered"] as? [Any])?.isEmpty ?? true)
        let stored = try await f.h.database.read { db in
            try db.scalar("SELECT COUNT(*) FROM shared_completions WHERE alarm_id = ?1", [.text(alarmID)])
        }
        #expect(stored == .integer(6))
        let report = try await f.h.database.read { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == nil)
    }
}
