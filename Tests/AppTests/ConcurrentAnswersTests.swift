import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing
import Wire

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

    @Test("withdrawals racing the last answers on two instances: each alarm ends in one of the two orders, every version once")
    func withdrawalRacingAnswers() async throws {
        let f = try await SharedAlarmFixture.make(members: 3)
        let (first, second, last) = (f.members[0], f.members[1], f.members[2])
        var races: [(alarmID: String, completionID: String)] = []
        for _ in 0..<4 {
            let alarmID = try #require(try await f.createAlarm(rule: "all", assignees: f.members)["id"] as? String)
            let answered = await f.answer(alarmID, by: first)
            let completionID = try #require((answered.json["completion"] as? [String: Any])?["id"] as? String)
            #expect(await f.answer(alarmID, by: second).status == 201)
            races.append((alarmID, completionID))
        }
        let other = try f.h.openAnotherHandle()
        defer { other.close() }
        let (groupID, lastID, now) = (f.groupID, last.id, f.h.clock.nowMilliseconds())
        // Per alarm at once: the first member takes the answer back (API), the last answers (another instance).
        let outcomes = races.map { race in
            Task { () -> (withdrawn: Int, answered: Bool) in
                async let withdrawn = f.h.send(
                    .delete, "\(f.g)/alarms/\(race.alarmID)/completions/\(race.completionID)", token: first.token)
                let answer = CompletionStore.Answer(status: .completed, method: .onTime, snoozeCount: 0, note: nil, scheduledAt: nil)
                let recorded = try await other.write(.concurrent) { db in
                    try CompletionStore.record(groupID: groupID, alarmID: race.alarmID, userID: lastID, answer: answer, at: now, on: db)
                }
                return (await withdrawn.status, recorded.created)
            }
        }
        for (race, outcome) in zip(races, outcomes) {
            let (withdrawn, answered) = try await outcome.value
            #expect(answered)
            let after = try await f.alarm(race.alarmID)
            let names = Set((after.occurrence["answered"] as? [[String: Any]])?.compactMap { $0["user_id"] as? String } ?? [])
            if withdrawn == 200 {
                // The withdrawal first: the occurrence stays open, answered by the other two.
                #expect(after.occurrence["scheduled_at"] as? String == SharedAlarmFixture.firstFire)
                #expect(names == [second.id, last.id], "\(after.occurrence)")
            } else {
                // The last answer first: all three answered, it closed and moved on; too late to take back.
                #expect(withdrawn == 409)
                #expect(after.occurrence["scheduled_at"] as? String == SharedAlarmFixture.secondFire, "\(after.occurrence)")
            }
            let versions = try await ConcurrentSharedAlarmTests.loggedVersions(race.alarmID, f.h)
            #expect(versions == Array(1...(versions.count)), "every version of the alarm once, in order: \(versions)")
        }
        let report = try await f.h.database.read { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == nil)
    }
}
