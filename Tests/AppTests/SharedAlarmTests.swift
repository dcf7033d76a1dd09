import Domain
import Foundation
import SQLite
import Storage
import TestSupport
import Testing
import Wire

@testable import App

/// Shared alarms end to end: create/read/edit/delete, occurrences under rules `any` and
/// `all`, retries, closed-occurrence conflicts, membership hooks, versions, validation, limits.
/// Serialized: each test builds a premium fixture of six accounts.
@Suite("Shared alarms — occurrences and completions", .serialized)
struct SharedAlarmTests {
    typealias F = SharedAlarmFixture

    @Test("create: 201 with next_fire_at, version 1, an open occurrence needing every active member")
    func create() async throws {
        let f = try await F.make(members: 2)
        let alarm = try await f.createAlarm()
        #expect(alarm["next_fire_at"] as? String == F.firstFire)
        #expect(alarm["version"] as? Int == 1)
        #expect(alarm["is_active"] as? Bool == true)
        #expect(alarm["require_any_completion"] as? Bool == true)
        #expect(alarm["persistence_level"] as? String == "full")
        #expect(alarm["snooze_options"] as? [Int] == [60, 1440, 10080])
        let occ = alarm.occurrence
        #expect(occ["scheduled_at"] as? String == F.firstFire)
        #expect(occ["status"] as? String == "open")
        #expect(Set(occ["required_uids"] as? [String] ?? []) == Set([f.owner.id] + f.members.map(\.id)))
        #expect(occ["pending_uids"] as? [String] == occ["required_uids"] as? [String])
        let batch = try f.h.lastBatch()
        #expect(batch.count == 1)
        #expect(batch.first?.string("event") == "shared_alarm_created")
        #expect(batch.first?.string("topic") == "group:\(f.groupID)")
        #expect(batch.first?.string("kind") == "shared_alarm")
        let id = try #require(alarm["id"] as? String)
        #expect(try await f.alarm(id)["title"] as? String == "Feed the cat")
    }

    @Test("rule any with 1…5 assignees: the first answer closes and advances one step", arguments: 1...5)
    func ruleAny(_ n: Int) async throws {
        let f = try await F.make()
        let assignees = Array(f.members.prefix(n))
        let alarm = try await f.createAlarm(rule: "any", assignees: assignees)
        let id = try #require(alarm["id"] as? String)
        #expect(alarm.occurrence["required_uids"] as? [String] == assignees.map(\.id))
        f.h.clock.advance(by: 3_600_000)
        let first = await f.answer(id, by: assignees[n - 1])
        #expect(first.status == 201, "\(first.text)")
        let after = try #require(first.object("alarm"))
        #expect(after["next_fire_at"] as? String == F.secondFire)
        #expect(after.occurrence["status"] as? String == "open")
        #expect((after.occurrence["answered"] as? [Any])?.isEmpty == true)
        #expect(after["last_completed_at"] as? String == first.object("completion")?["completed_at"] as? String)
        #expect(first.object("completion")?["scheduled_at"] as? String == F.firstFire)
        #expect(first.object("completion")?["completed_by_name"] as? String == "M\(n - 1)")
        // Everyone else is too late for that occurrence.
        for other in assignees.dropLast() {
            let late = await f.answer(id, by: other, scheduledAt: F.firstFire)
            #expect(late.status == 409)
            #expect(late.errorName == "OCCURRENCE_CLOSED")
            #expect((late.json["error"] as? [String: Any])?["current"] as? [String: Any] != nil)
        }
        // The answerer's retry returns the first record.
        let retry = await f.answer(id, by: assignees[n - 1], scheduledAt: F.firstFire)
        #expect(retry.status == 200)
        #expect(retry.object("completion")?["id"] as? String == first.object("completion")?["id"] as? String)
        #expect(try await f.alarm(id)["next_fire_at"] as? String == F.secondFire)
    }

    @Test("rule all with 1…5 assignees: closes only when every required member answered", arguments: 1...5)
    func ruleAll(_ n: Int) async throws {
        let f = try await F.make()
        let assignees = Array(f.members.prefix(n))
        let alarm = try await f.createAlarm(rule: "all", assignees: assignees)
        let id = try #require(alarm["id"] as? String)
        for (i, member) in assignees.enumerated() {
            f.h.clock.advance(by: 1000)
            let reply = await f.answer(id, by: member, status: i == 0 ? "skipped" : "completed")
            #expect(reply.status == 201, "\(reply.text)")
            let doc = try #require(reply.object("alarm"))
            #expect(doc["version"] as? Int == 2 + i)
            if i < n - 1 {
                #expect(doc["next_fire_at"] as? String == F.firstFire)
                #expect(doc.occurrence["pending_uids"] as? [String] == assignees.dropFirst(i + 1).map(\.id))
                #expect((doc.occurrence["answered"] as? [[String: Any]])?.count == i + 1)
            } else {
                #expect(doc["next_fire_at"] as? String == F.secondFire)
                #expect(doc.occurrence["required_uids"] as? [String] == assignees.map(\.id))
                // Only skips (n = 1) set no last_completed_at.
                #expect((doc["last_completed_at"] is String) == (n > 1))
            }
        }
    }

    @Test("concurrent answers from all five required members: exactly one close, one advance (rule all)")
    func concurrentAll() async throws {
        let f = try await F.make()
        let alarm = try await f.createAlarm(rule: "all")
        let id = try #require(alarm["id"] as? String)
        let everyone = [f.owner] + f.members
        let statuses = await withTaskGroup(of: Int.self) { group in
            for account in everyone {
                group.addTask { await f.answer(id, by: account, scheduledAt: F.firstFire).status }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.sorted() == Array(repeating: 201, count: everyone.count))
        let now = try await f.alarm(id)
        #expect(now["next_fire_at"] as? String == F.secondFire)
        #expect(now["version"] as? Int == 1 + everyone.count)
        let closes = try f.h.database.readSync { db in
            try db.query("SELECT document FROM change_log WHERE kind = 'shared_alarm' AND event = 'shared_completion'")
        }.filter { ($0.string("document") ?? "").contains(#""next_fire_at":"\#(F.secondFire)""#) }
        #expect(closes.count == 1)
    }

    @Test("answers racing the removal of the last pending member: one close, one advance")
    func concurrentRemoval() async throws {
        let f = try await F.make()
        let alarm = try await f.createAlarm(rule: "all", assignees: f.members)
        let id = try #require(alarm["id"] as? String)
        let leaving = f.members[4]
        let statuses = await withTaskGroup(of: Int.self) { group in
            for account in f.members.prefix(4) {
                group.addTask { await f.answer(id, by: account, scheduledAt: F.firstFire).status }
            }
            group.addTask { await f.h.send(.delete, "\(f.g)/members/\(leaving.id)", token: f.owner.token).status }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.sorted() == [201, 201, 201, 201, 204])
        let now = try await f.alarm(id)
        #expect(now["next_fire_at"] as? String == F.secondFire)
        #expect(now.occurrence["required_uids"] as? [String] == f.members.prefix(4).map(\.id))
        #expect(now["version"] as? Int == 6)
    }

    @Test("concurrent answers under rule any: one 201, the others 409, one advance")
    func concurrentAny() async throws {
        let f = try await F.make()
        let alarm = try await f.createAlarm(rule: "any")
        let id = try #require(alarm["id"] as? String)
        let everyone = [f.owner] + f.members
        let statuses = await withTaskGroup(of: Int.self) { group in
            for account in everyone {
                group.addTask { await f.answer(id, by: account, scheduledAt: F.firstFire).status }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.filter { $0 == 201 }.count == 1)
        #expect(statuses.filter { $0 == 409 }.count == everyone.count - 1)
        let now = try await f.alarm(id)
        #expect(now["next_fire_at"] as? String == F.secondFire)
        #expect(now["version"] as? Int == 2)
    }

    @Test("retries return the existing answer with 200; other occurrences conflict; non-assignees 403")
    func retries() async throws {
        let f = try await F.make(members: 3)
        let alarm = try await f.createAlarm(rule: "all", assignees: [f.members[0], f.members[1]])
        let id = try #require(alarm["id"] as? String)
        let first = await f.answer(id, by: f.members[0])
        #expect(first.status == 201)
        let again = await f.h.send(
            .post, "\(f.g)/alarms/\(id)/completions", json: #"{"status":"skipped","scheduled_date":"\#(F.firstFire)"}"#,
            token: f.members[0].token)
        #expect(again.status == 200)
        #expect(again.object("completion")?["status"] as? String == "completed")
        #expect(again.object("alarm")?["version"] as? Int == 2)
        let wrong = await f.answer(id, by: f.members[1], scheduledAt: F.secondFire)
        #expect(wrong.status == 409)
        #expect(wrong.errorName == "OCCURRENCE_CLOSED")
        let stranger = await f.answer(id, by: f.members[2])
        #expect(stranger.status == 403)
        #expect(stranger.errorName == "PERMISSION_DENIED")
        let owner = await f.answer(id, by: f.owner)
        #expect(owner.status == 403)
        // A personal completion's own field is unknown here: 422 naming it, as for any unknown key.
        let foreign = await f.h.send(
            .post, "\(f.g)/alarms/\(id)/completions", json: #"{"status":"completed","total_snooze_minutes":5}"#,
            token: f.members[1].token)
        #expect(foreign.status == 422 && foreign.errorField == "total_snooze_minutes", "\(foreign.text)")
        let count = try f.h.database.readSync { db in try db.scalar("SELECT COUNT(*) FROM shared_completions") }
        #expect(count == .integer(1))
    }

    @Test("no drift: a late answer advances from the scheduled time, not from now")
    func noDrift() async throws {
        let f = try await F.make(members: 1)
        let alarm = try await f.createAlarm(assignees: [f.members[0]])
        let id = try #require(alarm["id"] as? String)
        f.h.clock.advance(by: 30 * 3_600_000)  // 2026-02-07T15:00Z, past the second fire too
        let reply = await f.answer(id, by: f.members[0])
        #expect(reply.status == 201)
        #expect(reply.object("alarm")?["next_fire_at"] as? String == F.secondFire)
    }

    @Test("unassigning the last pending member in a PATCH closes and advances the occurrence")
    func unassignCloses() async throws {
        let f = try await F.make(members: 2)
        let alarm = try await f.createAlarm(rule: "all", assignees: [f.members[0], f.members[1]])
        let id = try #require(alarm["id"] as? String)
        try await f.h.expect(201, .post, "\(f.g)/alarms/\(id)/completions", json: #"{"status":"completed"}"#, token: f.members[0].token)
        let patched = try await f.h.expect(
            200, .patch, "\(f.g)/alarms/\(id)", json: #"{"assigned_to_uids":["\#(f.members[0].id)"],"version":2}"#,
            token: f.owner.token
        ).json
        #expect(patched["next_fire_at"] as? String == F.secondFire)
        #expect(patched["assigned_to_uids"] as? [String] == [f.members[0].id])
        #expect(patched.occurrence["required_uids"] as? [String] == [f.members[0].id])
        #expect(patched["last_completed_at"] is String)
        #expect(try f.h.lastBatch().first?.string("event") == "shared_alarm_updated")
    }

    @Test("removal and leaving drop members from open occurrences in the membership batch")
    func removalCloses() async throws {
        let f = try await F.make(members: 3)
        let alarm = try await f.createAlarm(rule: "all", assignees: [f.members[0], f.members[1], f.members[2]])
        let id = try #require(alarm["id"] as? String)
        try await f.h.expect(201, .post, "\(f.g)/alarms/\(id)/completions", json: #"{"status":"completed"}"#, token: f.members[0].token)
        // m1 leaves: still waiting for m2.
        try await f.h.expect(204, .delete, "\(f.g)/members/\(f.members[1].id)", token: f.members[1].token)
        var batch = try f.h.lastBatch()
        #expect(batch.first?.string("event") == "member_left")
        #expect(batch.contains { $0.string("kind") == "shared_alarm" && $0.string("entity_id") == id })
        var now = try await f.alarm(id)
        #expect(now["next_fire_at"] as? String == F.firstFire)
        #expect(now.occurrence["required_uids"] as? [String] == [f.members[0].id, f.members[2].id])
        #expect(now["assigned_to_uids"] as? [String] == [f.members[0].id, f.members[2].id])
        // The owner removes m2: every remaining required member has answered → closes and advances.
        try await f.h.expect(204, .delete, "\(f.g)/members/\(f.members[2].id)", token: f.owner.token)
        batch = try f.h.lastBatch()
        #expect(batch.first?.string("event") == "member_removed")
        now = try await f.alarm(id)
        #expect(now["next_fire_at"] as? String == F.secondFire)
        #expect(now.occurrence["required_uids"] as? [String] == [f.members[0].id])
        // The removed member can no longer see the alarm.
        let gone = await f.answer(id, by: f.members[2])
        #expect(gone.status == 404)
    }

    @Test("rule any: the only assignee leaving hands the open occurrence to everyone; nothing closes unanswered")
    func lastAssigneeLeaves() async throws {
        let f = try await F.make(members: 2)
        let alarm = try await f.createAlarm(rule: "any", assignees: [f.members[0]])
        let id = try #require(alarm["id"] as? String)
        try await f.h.expect(204, .delete, "\(f.g)/members/\(f.members[0].id)", token: f.members[0].token)
        let now = try await f.alarm(id)
        #expect(now["next_fire_at"] as? String == F.firstFire)
        #expect(now["assigned_to_uids"] as? [String] == [])
        #expect(now["last_completed_at"] is NSNull)
        #expect(now.occurrence["status"] as? String == "open")
        #expect(Set(now.occurrence["required_uids"] as? [String] ?? []) == [f.owner.id, f.members[1].id])
        #expect(await f.answer(id, by: f.members[1]).status == 201)
    }

    @Test("a member who joins an everyone alarm can answer its open occurrence; rule all waits for them too")
    func laterJoiner() async throws {
        let f = try await F.make(members: 1)
        let alarm = try await f.createAlarm(rule: "all")
        let id = try #require(alarm["id"] as? String)
        let code = try await f.h.inviteCode(f.groupID, token: f.owner.token)
        let (token, newID) = try await f.h.register("late@example.com", name: "Late")
        #expect(await f.h.join(code, token: token).status == 200)
        #expect(try f.h.lastBatch().contains { $0.string("kind") == "shared_alarm" && $0.string("entity_id") == id })
        let late = GroupFixture.Account(token: token, id: newID, email: "late@example.com")
        #expect(Set(try await f.alarm(id).occurrence["pending_uids"] as? [String] ?? []) == [f.owner.id, f.members[0].id, newID])
        #expect(await f.answer(id, by: f.owner).status == 201)
        #expect(await f.answer(id, by: f.members[0]).object("alarm")?.occurrence["pending_uids"] as? [String] == [newID])
        let closing = await f.answer(id, by: late)
        #expect(closing.status == 201)
        #expect(closing.object("alarm")?["next_fire_at"] as? String == F.secondFire)
    }

    @Test("reassigning to a disjoint set hands the open occurrence over: it never closes unanswered")
    func reassignDisjoint() async throws {
        let f = try await F.make(members: 2)
        let (cy, dee) = (f.members[0], f.members[1])
        let alarm = try await f.createAlarm(assignees: [cy])
        let id = try #require(alarm["id"] as? String)
        let patched = try await f.h.expect(
            200, .patch, "\(f.g)/alarms/\(id)", json: #"{"assigned_to_uids":["\#(dee.id)"]}"#, token: f.owner.token
        ).json
        #expect(patched["next_fire_at"] as? String == F.firstFire, "this week's occurrence does not vanish")
        #expect(patched["is_active"] as? Bool == true)
        #expect(patched.occurrence["status"] as? String == "open")
        #expect(patched.occurrence["required_uids"] as? [String] == [dee.id])
        #expect(patched["last_completed_at"] is NSNull)
        #expect(await f.answer(id, by: cy).status == 403)
        #expect(await f.answer(id, by: dee).object("alarm")?["next_fire_at"] as? String == F.secondFire)
    }

    @Test("a one-time alarm reassigned stays to do; adding an assignee lets them answer the open occurrence")
    func reassignOneTimeAndAdd() async throws {
        let f = try await F.make(members: 2)
        let (ana, bea) = (f.members[0], f.members[1])
        let once = try await f.h.expect(
            201, .post, "\(f.g)/alarms",
            json: #"""
                {"title":"Clean the bathroom","schedule":{"type":"one_time","date":"2026-02-06"},\#
                "times_of_day":[{"hour":10,"minute":0}],"timezone":"UTC","completion_rule":"all","assigned_to_uids":["\#(ana.id)"]}
                """#, token: f.owner.token
        ).json
        let id = try #require(once["id"] as? String)
        let moved = try await f.h.expect(
            200, .patch, "\(f.g)/alarms/\(id)", json: #"{"assigned_to_uids":["\#(bea.id)"]}"#, token: f.owner.token
        ).json
        #expect(moved["is_active"] as? Bool == true)
        #expect(moved["next_fire_at"] as? String == F.firstFire)
        #expect(moved.occurrence["required_uids"] as? [String] == [bea.id])
        let both = try await f.h.expect(
            200, .patch, "\(f.g)/alarms/\(id)", json: #"{"assigned_to_uids":["\#(bea.id)","\#(ana.id)"]}"#,
            token: f.owner.token
        ).json
        #expect(both.occurrence["required_uids"] as? [String] == [bea.id, ana.id], "what the card says is what is enforced")
        #expect(await f.answer(id, by: ana).object("alarm")?.occurrence["pending_uids"] as? [String] == [bea.id])
        let done = await f.answer(id, by: bea)
        #expect(done.object("alarm")?["is_active"] as? Bool == false)
        #expect(done.object("alarm")?.occurrence["status"] as? String == "closed")
    }

    @Test("reassigning keeps the answers given: they stay counted beside the new assignees")
    func reassignKeepsAnswers() async throws {
        let f = try await F.make(members: 3)
        let (m0, m1, m2) = (f.members[0], f.members[1], f.members[2])
        let id = try #require(try await f.createAlarm(rule: "all", assignees: [m0, m1])["id"] as? String)
        #expect(await f.answer(id, by: m0).status == 201)
        let patched = try await f.h.expect(
            200, .patch, "\(f.g)/alarms/\(id)", json: #"{"assigned_to_uids":["\#(m1.id)","\#(m2.id)"]}"#,
            token: f.owner.token
        ).json
        #expect(patched.occurrence["required_uids"] as? [String] == [m1.id, m2.id, m0.id])
        #expect(patched.occurrence["pending_uids"] as? [String] == [m1.id, m2.id])
        #expect((patched.occurrence["answered"] as? [[String: Any]])?.count == 1)
        #expect(patched["next_fire_at"] as? String == F.firstFire)
    }

    @Test("a removed member who rejoins is asked again at once by everyone alarms (My tasks lists it)")
    func rejoinEveryone() async throws {
        let f = try await F.make(members: 1)
        let bea = f.members[0]
        let id = try #require(try await f.createAlarm(rule: "all")["id"] as? String)
        try await f.h.expect(204, .delete, "\(f.g)/members/\(bea.id)", token: f.owner.token)
        #expect(try await f.alarm(id).occurrence["required_uids"] as? [String] == [f.owner.id])
        f.h.clock.advance(by: 1)
        let code = try await f.h.inviteCode(f.groupID, token: f.owner.token)
        #expect(await f.h.join(code, token: bea.token).status == 200)
        #expect(try await f.alarm(id).occurrence["pending_uids"] as? [String] == [f.owner.id, bea.id])
        let mine = try await f.h.expect(200, .get, "/v1/me/shared-alarms?assigned=me", token: bea.token).json
        #expect((mine["alarms"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [id])
    }

    @Test("a double tap answers once: an unnamed answer within two minutes is the first one's retry")
    func doubleTap() async throws {
        let f = try await F.make(members: 1)
        let m = f.members[0]
        let id = try #require(try await f.createAlarm(assignees: [m])["id"] as? String)
        f.h.clock.advance(by: 20 * 3_600_000)  // 2026-02-06T16:00Z: today's is due, tomorrow's answerable
        let first = await f.answer(id, by: m)
        #expect(first.status == 201)
        let second = await f.answer(id, by: m)
        #expect(second.status == 200)
        #expect(second.object("completion")?["id"] as? String == first.object("completion")?["id"] as? String)
        let now = try await f.alarm(id)
        #expect(now["next_fire_at"] as? String == F.secondFire)
        #expect((now.occurrence["answered"] as? [[String: Any]])?.isEmpty == true, "tomorrow's is not answered")
        // Past the window an unnamed answer is a new answer to the open occurrence, as before.
        f.h.clock.advance(by: SharedAlarmRules.unnamedAnswerRetryWindowMilliseconds + 1)
        #expect(await f.answer(id, by: m).status == 201)
    }

    @Test("undo: the author takes an answer back; the occurrence it closed opens again; the log keeps both")
    func withdraw() async throws {
        let f = try await F.make(members: 2)
        let (m0, m1) = (f.members[0], f.members[1])
        let id = try #require(try await f.createAlarm(assignees: [m0, m1])["id"] as? String)
        let answered = await f.answer(id, by: m0, scheduledAt: F.firstFire)
        let cid = try #require(answered.object("completion")?["id"] as? String)
        #expect(answered.object("alarm")?["next_fire_at"] as? String == F.secondFire)
        let path = "\(f.g)/alarms/\(id)/completions/\(cid)"
        #expect(await f.h.send(.delete, path, token: m1.token).status == 403, "only its author")
        f.h.clock.advance(by: 60_000)
        let undone = try await f.h.expect(200, .delete, path, token: m0.token)
        #expect(undone.object("completion")?["withdrawn_at"] is String)
        let alarm = try #require(undone.object("alarm"))
        #expect(alarm["next_fire_at"] as? String == F.firstFire)
        #expect(alarm.occurrence["status"] as? String == "open")
        #expect(alarm.occurrence["pending_uids"] as? [String] == [m0.id, m1.id])
        #expect(alarm["last_completed_at"] is NSNull)
        let batch = try f.h.lastBatch()
        #expect(batch.first?.string("event") == "shared_completion_withdrawn")
        #expect(batch.count == 2)
        // Idempotent; the history keeps the withdrawn answer; the member can answer again.
        #expect(try await f.h.expect(200, .delete, path, token: m0.token).object("completion")?["id"] as? String == cid)
        let history = try await f.h.expect(200, .get, "\(f.g)/alarms/\(id)/completions", token: m1.token).json
        #expect((history["completions"] as? [[String: Any]])?.first?["withdrawn_at"] is String)
        let again = await f.answer(id, by: m1, scheduledAt: F.firstFire)
        #expect(again.status == 201)
        #expect(again.object("alarm")?["next_fire_at"] as? String == F.secondFire)
    }

    @Test("undo is refused after 10 minutes and once the occurrence has moved on (answered since)")
    func withdrawRefused() async throws {
        let f = try await F.make(members: 1)
        let m = f.members[0]
        let id = try #require(try await f.createAlarm()["id"] as? String)
        f.h.clock.advance(by: 20 * 3_600_000)  // today's due, tomorrow's answerable
        let first = try #require(await f.answer(id, by: m, scheduledAt: F.firstFire).object("completion")?["id"] as? String)
        #expect(await f.answer(id, by: f.owner, scheduledAt: F.secondFire).status == 201)
        let movedOn = await f.h.send(.delete, "\(f.g)/alarms/\(id)/completions/\(first)", token: m.token)
        #expect(movedOn.status == 409 && movedOn.errorName == "ANSWER_WITHDRAWAL_CLOSED")
        f.h.clock.advance(by: 20 * 3_600_000)  // 2026-02-07T12:00Z: the third fire is answerable
        let late = try #require(await f.answer(id, by: m, scheduledAt: F.thirdFire).object("completion")?["id"] as? String)
        f.h.clock.advance(by: SharedAlarmRules.answerWithdrawalWindowMilliseconds + 1)
        let expired = await f.h.send(.delete, "\(f.g)/alarms/\(id)/completions/\(late)", token: m.token)
        #expect(expired.status == 409 && expired.errorName == "ANSWER_WITHDRAWAL_CLOSED")
        #expect(await f.h.send(.delete, "\(f.g)/alarms/\(id)/completions/\(UUID().uuidString.lowercased())", token: m.token).status == 404)
    }

    @Test("PATCH: versions, schedule change recomputes next_fire_at and re-opens the occurrence")
    func patchVersions() async throws {
        let f = try await F.make(members: 2)
        let alarm = try await f.createAlarm(rule: "all")
        let id = try #require(alarm["id"] as? String)
        #expect(await f.answer(id, by: f.members[0]).status == 201)
        let stale = await f.h.send(.patch, "\(f.g)/alarms/\(id)", json: #"{"title":"X","version":1}"#, token: f.owner.token)
        #expect(stale.status == 409)
        #expect(stale.errorName == "SYNC_CONFLICT")
        #expect(((stale.json["error"] as? [String: Any])?["current"] as? [String: Any])?["version"] as? Int == 2)
        // A title change keeps the occurrence and its answer.
        let renamed = try await f.h.expect(
            200, .patch, "\(f.g)/alarms/\(id)", json: #"{"title":"Walk the dog","version":2}"#, token: f.owner.token
        ).json
        #expect(renamed["version"] as? Int == 3)
        #expect((renamed.occurrence["answered"] as? [Any])?.count == 1)
        // Same body again: nothing changes, no new version.
        let same = try await f.h.expect(
            200, .patch, "\(f.g)/alarms/\(id)", json: #"{"title":"Walk the dog"}"#, token: f.owner.token
        ).json
        #expect(same["version"] as? Int == 3)
        // A new time: next fire 11:30 today, fresh occurrence without answers.
        let moved = try await f.h.expect(
            200, .patch, "\(f.g)/alarms/\(id)", json: #"{"times_of_day":[{"hour":11,"minute":30}],"version":3}"#,
            token: f.owner.token
        ).json
        #expect(moved["next_fire_at"] as? String == "2026-02-06T11:30:00.000Z")
        #expect(moved.occurrence["scheduled_at"] as? String == "2026-02-06T11:30:00.000Z")
        #expect((moved.occurrence["answered"] as? [Any])?.count == 0)
        #expect(try f.h.lastBatch().first?.string("event") == "shared_alarm_updated")
        // all → any once someone has answered closes the occurrence and advances.
        #expect(await f.answer(id, by: f.members[1]).status == 201)
        let closing = try await f.h.expect(
            200, .patch, "\(f.g)/alarms/\(id)", json: #"{"completion_rule":"any","version":5}"#, token: f.owner.token
        ).json
        #expect(closing["next_fire_at"] as? String == "2026-02-07T11:30:00.000Z")
        #expect(closing["last_completed_at"] is String)
        try await f.h.expect(
            200, .patch, "\(f.g)/alarms/\(id)", json: #"{"require_all_completion":true,"version":6}"#, token: f.owner.token)
        // Switching the rule to any: the open occurrence has no answers yet, stays open.
        let any = try await f.h.expect(
            200, .patch, "\(f.g)/alarms/\(id)", json: #"{"require_any_completion":true}"#, token: f.owner.token
        ).json
        #expect(any["completion_rule"] as? String == "any")
        #expect(any.occurrence["status"] as? String == "open")
    }

    @Test(
        "validation names the field; timing errors are SCHEDULE_INVALID",
        arguments: [
            (#""title":"","# + F.dailyTen, "VALIDATION_FAILED", "title"),
            (#""title":"\#(String(repeating: "t", count: 201))","# + F.dailyTen, "VALIDATION_FAILED", "title"),
            (#""title":"T","note":"\#(String(repeating: "n", count: 2001))","# + F.dailyTen, "VALIDATION_FAILED", "note"),
            (
                #"""
                "title":"T","schedule":{"type":"weekly","days_of_week":[8],"start_date":"2026-02-01"},"times_of_day":[{"hour":10,\#
                "minute":0}],"timezone":"UTC"
                """#,
                "SCHEDULE_INVALID", "schedule.days_of_week"
            ),
            (
                #"""
                "title":"T","schedule":{"type":"hourly","start_date":"2026-02-01"},"times_of_day":[{"hour":10,"minute":0}],\#
                "timezone":"UTC"
                """#,
                "SCHEDULE_INVALID", "schedule.type"
            ),
            (
                #"""
                "title":"T","schedule":{"type":"custom_days","interval_days":1,"start_date":"2026-02-01"},"times_of_day":[{"hour":24,\#
                "minute":0}],"timezone":"UTC"
                """#,
                "SCHEDULE_INVALID", "times_of_day.0.hour"
            ),
            (
                #"""
                "title":"T","schedule":{"type":"custom_days","interval_days":1,"start_date":"2026-02-01"},"times_of_day":[{"hour":10,\#
                "minute":0}],"timezone":"Mars/Base"
                """#,
                "SCHEDULE_INVALID", "timezone"
            ),
            (
                #""title":"T","schedule":{"type":"one_time","date":"2026-01-01"},"times_of_day":[{"hour":10,"minute":0}],"timezone":"UTC""#,
                "SCHEDULE_INVALID", "schedule.date"
            ),
            (#""title":"T","times_of_day":[{"hour":10,"minute":0}],"timezone":"UTC""#, "SCHEDULE_INVALID", "schedule"),
            (#""title":"T","persistence_level":"loud","# + F.dailyTen, "VALIDATION_FAILED", "persistence_level"),
            (#""title":"T","dismiss_method":"shake","# + F.dailyTen, "VALIDATION_FAILED", "dismiss_method"),
            (#""title":"T","category":"garden","# + F.dailyTen, "VALIDATION_FAILED", "category"),
            (#""title":"T","color_tag":"blue","# + F.dailyTen, "VALIDATION_FAILED", "color_tag"),
            (#""title":"T","snooze_options":[0],"# + F.dailyTen, "VALIDATION_FAILED", "snooze_options"),
            (#""title":"T","pre_alarm_offset":0,"# + F.dailyTen, "VALIDATION_FAILED", "pre_alarm_offset"),
            (#""title":"T","grace_minutes":0,"# + F.dailyTen, "VALIDATION_FAILED", "grace_minutes"),
            (#""title":"T","completion_rule":"most","# + F.dailyTen, "VALIDATION_FAILED", "completion_rule"),
            (
                #""title":"T","require_any_completion":true,"require_all_completion":true,"# + F.dailyTen, "VALIDATION_FAILED",
                "require_all_completion"
            ),
            (
                #""title":"T","assigned_to_uids":["00000000-0000-4000-8000-000000000000"],"# + F.dailyTen, "VALIDATION_FAILED",
                "assigned_to_uids"
            ),
            (#""title":"T","cycle_type":"weekly","# + F.dailyTen, "VALIDATION_FAILED", "cycle_type"),
            (#""title":"T","version":1,"# + F.dailyTen, "VALIDATION_FAILED", "version"),
        ])
    func validation(_ body: String, _ name: String, _ field: String) async throws {
        let f = try await F.make(members: 0)
        let reply = await f.h.send(.post, "\(f.g)/alarms", json: "{\(body)}", token: f.owner.token)
        #expect(reply.status == 422, "\(reply.text)")
        #expect(reply.errorName == name, "\(reply.text)")
        #expect(reply.errorField == field, "\(reply.text)")
    }

    @Test("limits at the edge: title 200, note 2000, completion note 500, the product's booleans and presentation fields")
    func limitsAtEdge() async throws {
        let f = try await F.make(members: 1)
        let body =
            #"{"title":"\#(String(repeating: "t", count: 200))","note":"\#(String(repeating: "n", count: 2000))","#
            + F.dailyTen
            + #","require_all_completion":true,"persistence_level":"notification_only","sound_id":"chime","dismiss_method":"hold_3s","#
            + ##""color_tag":"#3b82f6","icon_name":"pawprint","category":"pets","pre_alarm_enabled":true,"pre_alarm_offset":60,"##
            + #""snooze_enabled":false,"snooze_options":[5,10],"grace_minutes":60}"#
        let alarm = try await f.h.expect(201, .post, "\(f.g)/alarms", json: body, token: f.owner.token).json
        #expect(alarm["completion_rule"] as? String == "all")
        #expect(alarm["persistence_level"] as? String == "notification")
        #expect(alarm["color_tag"] as? String == "#3B82F6")
        #expect(alarm["category"] as? String == "pets")
        #expect(alarm["grace_minutes"] as? Int == 60)
        let id = try #require(alarm["id"] as? String)
        let long = #"{"status":"completed","note":"\#(String(repeating: "c", count: 501))"}"#
        let over = await f.h.send(.post, "\(f.g)/alarms/\(id)/completions", json: long, token: f.members[0].token)
        #expect(over.status == 422)
        #expect(over.errorField == "note")
        let ok =
            #"""
            {"status":"completed","note":"\#(String(repeating: "c", count: 500))","completion_method":"snoozed_then_done",\#
            "snooze_count":2}
            """#
        let reply = await f.h.send(.post, "\(f.g)/alarms/\(id)/completions", json: ok, token: f.members[0].token)
        #expect(reply.status == 201, "\(reply.text)")
        #expect(reply.object("completion")?["completion_method"] as? String == "snoozed_then_done")
        #expect(reply.object("completion")?["snooze_count"] as? Int == 2)
    }

    @Test("5 creations per user per minute, then 429; 100 live alarms per group")
    func creationLimits() async throws {
        let f = try await F.make(members: 0)
        for _ in 0..<5 { _ = try await f.createAlarm() }
        let sixth = await f.h.send(.post, "\(f.g)/alarms", json: #"{"title":"T",\#(F.dailyTen)}"#, token: f.owner.token)
        #expect(sixth.status == 429)
        #expect(sixth.errorName == "RATE_LIMITED")
        f.h.clock.advance(by: 60_000)
        _ = try await f.createAlarm()
        // Fill the group to 100 straight in the store (rate limit aside), then the 101st is refused.
        let group = f.groupID
        let owner = f.owner.id
        try f.h.database.writeSync { db in
            for i in 6..<100 {
                try db.run(
                    """
                    INSERT INTO shared_alarms (id, group_id, created_by, document, grace_ms, version, created_ms, updated_ms)
                    VALUES (?1, ?2, ?3, '{}', 1, 1, 0, 0)
                    """, [.text("00000000-0000-4000-8000-\(String(format: "%012d", i))"), .text(group), .text(owner)])
            }
        }
        f.h.clock.advance(by: 60_000)
        let over = await f.h.send(.post, "\(f.g)/alarms", json: #"{"title":"T",\#(F.dailyTen)}"#, token: f.owner.token)
        #expect(over.status == 403)
        #expect(over.errorName == "ALARM_LIMIT_REACHED")
    }

    @Test("delete: soft, by the creator or the owner; lists hide it unless include_deleted=true")
    func deleteAndList() async throws {
        let f = try await F.make(members: 1)
        let a = try #require(try await f.createAlarm()["id"] as? String)
        f.h.clock.advance(by: 1)
        let b = try #require(try await f.createAlarm()["id"] as? String)
        #expect(await f.h.send(.delete, "\(f.g)/alarms/\(a)", token: f.members[0].token).status == 403)
        try await f.h.expect(204, .delete, "\(f.g)/alarms/\(a)", token: f.owner.token)
        let batch = try f.h.lastBatch()
        #expect(batch.first?.string("event") == "shared_alarm_deleted")
        #expect(batch.first?.string("op") == "removed")
        let live = try await f.h.expect(200, .get, "\(f.g)/alarms", token: f.members[0].token).json
        #expect((live["alarms"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [b])
        let all = try await f.h.expect(200, .get, "\(f.g)/alarms?include_deleted=true", token: f.members[0].token).json
        #expect((all["alarms"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [a, b])
        #expect(await f.h.send(.get, "\(f.g)/alarms/\(a)", token: f.owner.token).errorName == "ALARM_NOT_FOUND")
        #expect(await f.answer(a, by: f.owner).status == 404)
        let paged = try await f.h.expect(200, .get, "\(f.g)/alarms?include_deleted=true&limit=1", token: f.owner.token).json
        let cursor = try #require(paged["next_cursor"] as? String)
        let next = try await f.h.expect(200, .get, "\(f.g)/alarms?include_deleted=true&limit=1&cursor=\(cursor)", token: f.owner.token).json
        #expect((next["alarms"] as? [[String: Any]])?.first?["id"] as? String == b)
    }

    @Test("completion lists: newest first, paged, filtered by user_id, status, from, to")
    func completionLists() async throws {
        let f = try await F.make(members: 2)
        let id = try #require(try await f.createAlarm(rule: "all")["id"] as? String)
        let other = try #require(try await f.createAlarm(rule: "any")["id"] as? String)
        var ids: [String] = []
        for (i, account) in ([f.owner] + f.members).enumerated() {
            f.h.clock.advance(by: 1000)
            let reply = await f.answer(id, by: account, status: i == 1 ? "skipped" : "completed")
            ids.append(try #require(reply.object("completion")?["id"] as? String))
        }
        f.h.clock.advance(by: 1000)
        let otherID = try #require(await f.answer(other, by: f.owner).object("completion")?["id"] as? String)
        func list(_ path: String) async throws -> [String] {
            let json = try await f.h.expect(200, .get, path, token: f.members[1].token).json
            return (json["completions"] as? [[String: Any]])?.compactMap { $0["id"] as? String } ?? []
        }
        #expect(try await list("\(f.g)/alarms/\(id)/completions") == ids.reversed())
        #expect(try await list("\(f.g)/completions") == [otherID] + ids.reversed())
        #expect(try await list("\(f.g)/alarms/\(id)/completions?status=skipped") == [ids[1]])
        #expect(try await list("\(f.g)/completions?user_id=\(f.owner.id)") == [otherID, ids[0]])
        #expect(
            try await list("\(f.g)/alarms/\(id)/completions?from=2026-02-06T09:00:02.000Z&to=2026-02-06T09:00:03.000Z")
                == [ids[1]])
        let page = try await f.h.expect(200, .get, "\(f.g)/completions?limit=2", token: f.owner.token).json
        let cursor = try #require(page["next_cursor"] as? String)
        #expect(try await list("\(f.g)/completions?limit=2&cursor=\(cursor)") == [ids[1], ids[0]])
        let bad = await f.h.send(.get, "\(f.g)/completions?from=yesterday", token: f.owner.token)
        #expect(bad.status == 422)
        #expect(bad.errorField == "from")
        #expect(await f.h.send(.get, "\(f.g)/alarms/\(UUID().uuidString.lowercased())/completions", token: f.owner.token).status == 404)
    }

    @Test("account deletion anonymises completions as Deleted User and unassigns the account")
    func accountDeletion() async throws {
        let f = try await F.make(members: 2)
        let id = try #require(try await f.createAlarm(rule: "all", assignees: [f.members[0], f.members[1]])["id"] as? String)
        #expect(await f.answer(id, by: f.members[0]).status == 201)
        try await f.h.expect(204, .delete, "/v1/me", token: f.members[0].token)
        let batch = try f.h.lastBatch()
        #expect(batch.first?.string("event") == "account_deleted")
        #expect(batch.contains { $0.string("kind") == "shared_completion" && $0.string("op") == "modified" })
        let list = try await f.h.expect(200, .get, "\(f.g)/completions", token: f.owner.token).json
        let entry = try #require((list["completions"] as? [[String: Any]])?.first)
        #expect(entry["completed_by_name"] as? String == "Deleted User")
        #expect(entry["completed_by_uid"] is NSNull)
        let now = try await f.alarm(id)
        #expect(now["assigned_to_uids"] as? [String] == [f.members[1].id])
        #expect(now["next_fire_at"] as? String == F.firstFire)
    }

    @Test("PATCH and completion bodies: errors name their field; a deleted alarm is ALARM_NOT_FOUND")
    func patchAndAnswerValidation() async throws {
        let f = try await F.make(members: 1)
        let id = try #require(try await f.createAlarm(assignees: [f.members[0]])["id"] as? String)
        let a = "\(f.g)/alarms/\(id)"
        let cases: [(String, String, String)] = [
            (
                #"{"schedule":{"type":"monthly_date","days_of_month":[32],"start_date":"2026-02-01"}}"#, "SCHEDULE_INVALID",
                "schedule.days_of_month"
            ),
            (#"{"times_of_day":[]}"#, "SCHEDULE_INVALID", "times_of_day"),
            (#"{"timezone":"Nowhere/City"}"#, "SCHEDULE_INVALID", "timezone"),
            (#"{"time_of_day":"25:00"}"#, "SCHEDULE_INVALID", "time_of_day"),
            (#"{"title":"   "}"#, "VALIDATION_FAILED", "title"),
            (#"{"assigned_to_uids":["\#(UUID().uuidString.lowercased())"]}"#, "VALIDATION_FAILED", "assigned_to_uids"),
            (#"{"assigned_to_uids":["\#(f.members[0].id)","\#(f.members[0].id)"]}"#, "VALIDATION_FAILED", "assigned_to_uids"),
            (#"{"next_fire_at":"2026-01-01T00:00:00Z"}"#, "VALIDATION_FAILED", "next_fire_at"),
        ]
        for (body, name, field) in cases {
            let reply = await f.h.send(.patch, a, json: body, token: f.owner.token)
            #expect(reply.status == 422, "\(body) \(reply.text)")
            #expect(reply.errorName == name, "\(body) \(reply.text)")
            #expect(reply.errorField == field, "\(body) \(reply.text)")
        }
        #expect(try await f.alarm(id)["version"] as? Int == 1)
        // The product's legacy single time of day (docs/design.md#shared-alarms).
        let legacy = try await f.h.expect(200, .patch, a, json: #"{"time_of_day":"11:15"}"#, token: f.owner.token).json
        #expect(legacy["times_of_day"] as? [[String: Int]] == [["hour": 11, "minute": 15]])
        #expect(legacy["next_fire_at"] as? String == "2026-02-06T11:15:00.000Z")
        let answers: [(String, String)] = [
            (#"{}"#, "status"),
            (#"{"status":"done"}"#, "status"),
            (#"{"status":"completed","completion_method":"telepathy"}"#, "completion_method"),
            (#"{"status":"completed","snooze_count":-1}"#, "snooze_count"),
            (#"{"status":"completed","scheduled_at":"tomorrow"}"#, "scheduled_at"),
            (#"{"status":"completed","extra":1}"#, "extra"),
        ]
        for (body, field) in answers {
            let reply = await f.h.send(.post, "\(a)/completions", json: body, token: f.members[0].token)
            #expect(reply.status == 422, "\(body) \(reply.text)")
            #expect(reply.errorField == field, "\(body) \(reply.text)")
        }
        try await f.h.expect(204, .delete, a, token: f.owner.token)
        let gone = await f.h.send(.patch, a, json: #"{"title":"X"}"#, token: f.owner.token)
        #expect(gone.status == 404)
        #expect(gone.errorName == "ALARM_NOT_FOUND")
        #expect(await f.h.send(.delete, a, token: f.owner.token).errorName == "ALARM_NOT_FOUND")
        // History of a deleted alarm stays readable until it is purged.
        #expect(await f.h.send(.get, "\(a)/completions", token: f.owner.token).status == 200)
    }

    @Test("DST: an alarm at 02:30 New York fires at 03:30 EDT on the spring-forward day, then advances to 02:30 EDT")
    func dst() async throws {
        let f = try await F.make(members: 1)
        f.h.clock.set(1_772_892_000_000)  // 2026-03-07T14:00:00Z
        let json =
            #"""
            {"title":"Meds","schedule":{"type":"custom_days","interval_days":1,"start_date":"2026-03-01"},"times_of_day":[{"hour":2,\#
            "minute":30}],"timezone":"America/New_York"}
            """#
        let alarm = try await f.h.expect(201, .post, "\(f.g)/alarms", json: json, token: f.owner.token).json
        #expect(alarm["next_fire_at"] as? String == "2026-03-08T07:30:00.000Z")
        let id = try #require(alarm["id"] as? String)
        let reply = await f.answer(id, by: f.members[0])
        #expect(reply.object("alarm")?["next_fire_at"] as? String == "2026-03-09T06:30:00.000Z")
    }
}
