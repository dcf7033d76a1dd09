import Domain
import Foundation
import Realtime
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// Done and archived shared alarms (docs/design.md#done-and-archived): `is_done` derived from the
/// document, `PATCH {"archived": true}` only on a done alarm (409 CA069 otherwise, nothing written),
/// archived alarms out of the group's default list and listed with `?archived=true|any`, and
/// `archived_at` cleared by the server as soon as the alarm is no longer done.
@Suite("Shared alarms — done and archived")
struct SharedAlarmArchiveTests {
    typealias F = SharedAlarmFixture

    /// 2026-02-06T10:00:00Z: the one-time alarms' only fire (the fixture's clock starts an hour before).
    static let fire: Int64 = 1_770_372_000_000
    static let oneTime =
        #""schedule":{"type":"one_time","date":"2026-02-06"},"times_of_day":[{"hour":10,"minute":0}],"timezone":"UTC""#

    func createOneTime(_ f: F, title: String = "Vet") async throws -> String {
        let json = #"{"title":"\#(title)",\#(Self.oneTime)}"#
        let alarm = try await f.h.expect(201, .post, "\(f.g)/alarms", json: json, token: f.owner.token).json
        #expect(alarm["is_done"] as? Bool == false)
        #expect(alarm["archived_at"] is NSNull)
        return try #require(alarm["id"] as? String)
    }

    func patch(_ f: F, _ id: String, _ json: String, token: String? = nil) async -> Reply {
        await f.h.send(.patch, "\(f.g)/alarms/\(id)", json: json, token: token ?? f.owner.token)
    }

    /// The ids `GET …/alarms` lists with `query`.
    func listed(_ f: F, _ query: String = "") async throws -> [String] {
        let page = try await f.h.expect(200, .get, "\(f.g)/alarms\(query)", token: f.members[0].token).json
        return (page["alarms"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
    }

    /// Rows of `shared_alarm_updated` notifications in the outbox.
    func updateNotifications(_ f: F) throws -> Int {
        try f.h.database.readSync { db in try NotificationOutbox.entries(on: db) }.filter { $0.type == .sharedAlarmUpdated }.count
    }

    @Test("answered one-time alarm: done, archived by a manager only, out of the default list, back when the answer is taken back")
    func answeredThenArchived() async throws {
        let f = try await F.make(members: 2)
        let vet = try await createOneTime(f)
        let daily = try #require(try await f.createAlarm()["id"] as? String)

        // Not done yet: refused with the current alarm, nothing written.
        let early = await patch(f, vet, #"{"archived":true}"#)
        #expect(early.status == 409 && early.errorCode == "CA069" && early.errorName == "ALARM_NOT_DONE", "\(early.text)")
        let current = try #require((early.json["error"] as? [String: Any])?["current"] as? [String: Any])
        #expect(current["is_done"] as? Bool == false && current["version"] as? Int == 1)
        #expect(try await f.alarm(vet)["version"] as? Int == 1)

        // The answer closes the only occurrence: done, nothing fires again.
        let answer = await f.answer(vet, by: f.members[0])
        #expect(answer.status == 201 || answer.status == 200, "\(answer.text)")
        let completionID = try #require((answer.json["completion"] as? [String: Any])?["id"] as? String)
        let done = try await f.alarm(vet)
        #expect(done["is_done"] as? Bool == true && done["next_fire_at"] is NSNull && done["archived_at"] is NSNull)
        #expect(try await f.alarm(daily)["is_done"] as? Bool == false)

        // A plain member may not archive; the owner may. Archiving notifies nobody.
        #expect(await patch(f, vet, #"{"archived":true}"#, token: f.members[0].token).status == 403)
        let notifiedBefore = try updateNotifications(f)
        f.h.clock.advance(by: 60)
        let archived = await patch(f, vet, #"{"archived":true}"#)
        #expect(archived.status == 200, "\(archived.text)")
        let archivedAt = try #require(archived.json["archived_at"] as? String)
        #expect(archived.json["is_done"] as? Bool == true)
        #expect(archived.json["version"] as? Int == (done["version"] as? Int ?? 0) + 1)
        #expect(try updateNotifications(f) == notifiedBefore)
        // Again: nothing changes.
        let again = await patch(f, vet, #"{"archived":true}"#)
        #expect(again.json["archived_at"] as? String == archivedAt && again.json["version"] as? Int == archived.json["version"] as? Int)

        // Lists: archived ones out by default, only them with true, both with any.
        #expect(try await listed(f) == [daily])
        #expect(try await listed(f, "?archived=false") == [daily])
        #expect(try await listed(f, "?archived=true") == [vet])
        #expect(Set(try await listed(f, "?archived=any")) == [vet, daily])
        // The group's snapshot keeps every live alarm: a client counts "Archived (n)" from it.
        let (groupID, userID, now) = (f.groupID, f.members[0].id, f.h.clock.nowMilliseconds())
        let data = try await f.h.database.read { db in
            try RealtimeSnapshots.read(.group(groupID), userID: userID, at: now, on: db).data
        }
        let snapshot = try #require(try JSONSerialization.jsonObject(with: Data(data)) as? [String: Any])
        let inSnapshot = (snapshot["alarms"] as? [[String: Any]] ?? []).first { $0["id"] as? String == vet }
        #expect(inSnapshot?["archived_at"] as? String == archivedAt && inSnapshot?["is_done"] as? Bool == true)
        let bad = await f.h.send(.get, "\(f.g)/alarms?archived=maybe", token: f.owner.token)
        #expect(bad.status == 422 && bad.text.contains("archived"), "\(bad.text)")

        // The answer taken back re-opens the occurrence: no longer done, so no longer archived.
        let withdrawn = await f.h.send(
            .delete, "\(f.g)/alarms/\(vet)/completions/\(completionID)", token: f.members[0].token)
        #expect(withdrawn.status == 200, "\(withdrawn.text)")
        let reopened = try await f.alarm(vet)
        #expect(reopened["is_done"] as? Bool == false && reopened["archived_at"] is NSNull)
        #expect(Set(try await listed(f)) == [vet, daily])
        #expect(try await listed(f, "?archived=true") == [])
    }

    @Test("missed one-time alarm is done; a switched-off one is not; an edit that makes it fire again un-archives it")
    func missedSwitchedOffAndEdited() async throws {
        let f = try await F.make(members: 1)
        let missed = try await createOneTime(f, title: "Missed")
        let off = try await createOneTime(f, title: "Off")

        // Switched off before its time: its occurrence ends unanswered — not done, cannot be archived.
        #expect(await patch(f, off, #"{"is_enabled":false}"#).status == 200)
        let offNow = try await f.alarm(off)
        #expect(offNow["next_fire_at"] is NSNull && offNow["is_done"] as? Bool == false)
        let refused = await patch(f, off, #"{"archived":true}"#)
        #expect(refused.status == 409 && refused.errorCode == "CA069")
        // The refusal leaves the whole PATCH unapplied.
        let mixed = await patch(f, off, #"{"title":"Renamed","archived":true}"#)
        #expect(mixed.status == 409)
        #expect(try await f.alarm(off)["title"] as? String == "Off")

        // Missed by the sweep: done.
        f.h.clock.set(Self.fire + 86_400_000)
        let swept = try f.h.database.writeSync { db in
            try SharedAlarmStore.sweepOverdue(at: f.h.clock.nowMilliseconds(), on: db)
        }
        #expect(swept == 1)
        let missedNow = try await f.alarm(missed)
        #expect(missedNow.occurrence["status"] as? String == "missed" && missedNow["is_done"] as? Bool == true)
        #expect(await patch(f, missed, #"{"archived":true}"#).status == 200)
        #expect(try await listed(f) == [off])

        // Take it out of the archive, archive again, then move it to a later date: it fires again.
        let out = await patch(f, missed, #"{"archived":false}"#)
        #expect(out.status == 200 && out.json["archived_at"] is NSNull && out.json["is_done"] as? Bool == true)
        #expect(await patch(f, missed, #"{"archived":true}"#).status == 200)
        let moved = await patch(
            f, missed, #"{"schedule":{"type":"one_time","date":"2026-03-01"},"times_of_day":[{"hour":10,"minute":0}]}"#)
        #expect(moved.status == 200, "\(moved.text)")
        #expect(moved.json["is_done"] as? Bool == false && moved.json["archived_at"] is NSNull)
        #expect(moved.json["next_fire_at"] as? String == "2026-03-01T10:00:00.000Z")
        #expect(Set(try await listed(f)) == [off, missed])
        #expect(
            try f.h.database.readSync { db in
                try db.query("SELECT id FROM shared_alarms WHERE archived_ms IS NOT NULL", []).count
            } == 0)
    }

    @Test("a new alarm cannot be archived; archived is a shared alarm's field only")
    func notOnCreate() async throws {
        let f = try await F.make(members: 1)
        let json = #"{"title":"Vet",\#(Self.oneTime),"archived":true}"#
        let created = await f.h.send(.post, "\(f.g)/alarms", json: json, token: f.owner.token)
        #expect(created.status == 422 && created.text.contains("archived"), "\(created.text)")
        let personal = await f.h.send(
            .patch, "/v1/me/alarms/\(UUID().uuidString.lowercased())", json: #"{"archived":true}"#, token: f.owner.token)
        #expect(personal.status == 422 && personal.text.contains("archived"), "\(personal.text)")
        let wrongType = await f.h.send(
            .patch, "\(f.g)/alarms/\(try await createOneTime(f))", json: #"{"archived":"yes"}"#, token: f.owner.token)
        #expect(wrongType.status == 422, "\(wrongType.text)")
    }
}
