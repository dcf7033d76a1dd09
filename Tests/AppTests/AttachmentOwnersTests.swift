import Domain
import Foundation
import Hashing
import Realtime
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// Attachments on personal alarms and shared completions, the attachment lists inside the documents
/// (answers, change log, group snapshot), the byte quotas, and account deletion
/// (docs/attachments.md). The shared-alarm pipeline itself is `AttachmentTests`'.
@Suite("Attachments — personal alarms, completions, documents, quotas, account deletion")
struct AttachmentOwnersTests {
    static let personalID = "5b0c6d3e-7f81-4a92-b3c4-d5e6f7a8b9c0"
    static var personal: String { "/v1/me/alarms/\(personalID)" }
    static let personalBody = #"{"title":"Vitamins",\#(SharedAlarmFixture.dailyTen)}"#

    /// The attachments listed in a document.
    static func listed(_ document: [String: Any]?) -> [String]? {
        (document?["attachments"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
    }

    /// The error envelope's message.
    static func message(_ reply: Reply) -> String? { (reply.json["error"] as? [String: Any])?["message"] as? String }

    /// A member answers the alarm (assigned to them, rule `any`); the completion's path.
    static func answer(_ f: SharedAlarmFixture, by member: GroupFixture.Account) async throws -> String {
        let alarm = try await f.createAlarm(assignees: [member])
        let alarmID = try #require(alarm["id"] as? String)
        let answered = try await f.h.expect(
            201, .post, "\(f.g)/alarms/\(alarmID)/completions", json: #"{"status":"completed"}"#, token: member.token)
        return "\(f.g)/completions/\(try #require(answered.object("completion")?["id"] as? String))"
    }

    @Test("a personal alarm's attachments: its account alone uploads, reads and deletes; its documents list them")
    func personalAlarm() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let h = f.h
        let other = f.members[0]
        try await h.expect(201, .put, Self.personal, json: Self.personalBody, token: f.owner.token)
        // The same id in another account is another alarm (ids are per account): nothing leaks across.
        try await h.expect(201, .put, Self.personal, json: Self.personalBody, token: other.token)

        let png = SampleMedia.png(width: 120, height: 80)
        let upload = await h.sendBytes(.post, "\(Self.personal)/attachments", body: png, contentType: "image/png", token: f.owner.token)
        #expect(upload.status == 201, "\(upload.text)")
        let id = try #require(upload.json["id"] as? String)
        #expect(upload.json["owner_kind"] as? String == "personal_alarm")
        #expect(upload.json["owner_id"] as? String == Self.personalID)
        #expect(upload.json["group_id"] == nil)
        let sha = try #require(upload.json["sha256"] as? String)

        let download = await h.send(.get, "\(Self.personal)/attachments/\(id)", token: f.owner.token)
        #expect(download.status == 200 && Hex.encode(SHA256.hash(download.response.body)) == sha)
        #expect(await h.send(.get, "\(Self.personal)/attachments/\(id)/thumbnail", token: f.owner.token).status == 200)
        // Another account: its own alarm of that id has none, and the owner's attachment is not found.
        #expect(Self.listed(await h.send(.get, "\(Self.personal)/attachments", token: other.token).json) == [])
        #expect(await h.send(.get, "\(Self.personal)/attachments/\(id)", token: other.token).status == 404)
        #expect(await h.send(.delete, "\(Self.personal)/attachments/\(id)", token: other.token).status == 404)

        // The documents: the alarm, the full list, the sync read, the change log's next alarm document.
        #expect(Self.listed(await h.send(.get, Self.personal, token: f.owner.token).json) == [id])
        let full = await h.send(.get, "/v1/me/alarms", token: f.owner.token)
        #expect((full.json["alarms"] as? [[String: Any]])?.map { Self.listed($0) } == [[id]])
        let sync = await h.send(.get, "/v1/me/alarms?since=0", token: f.owner.token)
        let synced = try #require(sync.json["changes"] as? [[String: Any]])
        #expect(synced.map { Self.listed($0["alarm"] as? [String: Any]) } == [[id]])
        let patched = await h.send(.patch, Self.personal, json: #"{"title":"Vitamin D"}"#, token: f.owner.token)
        #expect(Self.listed(patched.json) == [id])
        // Made from the bytes the row got with the attachments put in: what a read encodes whole.
        #expect(await h.send(.get, Self.personal, token: f.owner.token).response.body == patched.response.body)
        let ownerID = f.owner.id
        let logged = try await h.database.read { db in
            try db.query(
                "SELECT kind, document FROM change_log WHERE topic = ?1 AND kind IN ('attachment', 'personal_alarm') ORDER BY seq",
                [.text("user:\(ownerID)")])
        }
        #expect(logged.map { $0.string("kind") } == ["personal_alarm", "attachment", "personal_alarm"])
        #expect(logged.last?.string("document")?.contains(id) == true)
        // The answer is the change log's document, byte for byte (the write encoded it once for both).
        #expect(logged.last?.string("document").map { Array($0.utf8) } == patched.response.body)
        let replaced = await h.send(.put, Self.personal, json: Self.personalBody, token: f.owner.token)
        #expect(replaced.status == 200 && Self.listed(replaced.json) == [id], "\(replaced.text)")
        let newest = try await h.database.read { db in
            try db.queryOne("SELECT document FROM change_log WHERE kind = 'personal_alarm' ORDER BY seq DESC LIMIT 1")
        }
        #expect(newest?.string("document").map { Array($0.utf8) } == replaced.response.body)

        #expect(await h.send(.delete, "\(Self.personal)/attachments/\(id)", token: f.owner.token).status == 204)
        #expect(Self.listed(await h.send(.get, Self.personal, token: f.owner.token).json) == [])
    }

    @Test("every owner's upload route gets the upload body limit; the routes around them keep the JSON one")
    func uploadLimitPerRoute() throws {
        let h = try AppHarness()
        let limits = Application.limits(HTTPLimits(), config: h.app.services.config)
        let group = "/v1/groups/\(UUID().uuidString.lowercased())"
        for path in [
            "\(group)/alarms/a/attachments", "\(group)/completions/c/attachments", "\(Self.personal)/attachments",
        ] {
            #expect(limits.maxBodyBytes(for: HTTPRequestHead(method: .post, target: path)) == 10 << 20, "\(path)")
        }
        for (method, path) in [
            (HTTPMethod.post, "\(group)/alarms/a/completions"), (.put, Self.personal), (.post, "\(group)/completions/c/attachments/x"),
            (.get, "\(Self.personal)/attachments"),
        ] {
            #expect(limits.maxBodyBytes(for: HTTPRequestHead(method: method, target: path)) == 1 << 20, "\(method) \(path)")
        }
    }

    @Test("free tier: 403 TIER_REQUIRED; an unknown or deleted personal alarm: 404 ALARM_NOT_FOUND")
    func personalRefusals() async throws {
        let h = try AppHarness(defaultTier: .free)
        let (token, id) = try await h.register("free@example.com")
        let refused = await h.sendBytes(.post, "\(Self.personal)/attachments", body: SampleMedia.png(), contentType: nil, token: token)
        #expect(refused.status == 403 && refused.errorName == "TIER_REQUIRED")
        try await h.database.write { db in _ = try db.run("UPDATE users SET tier = 'premium' WHERE id = ?1", [.text(id)]) }
        let unknown = await h.sendBytes(.post, "\(Self.personal)/attachments", body: SampleMedia.png(), contentType: nil, token: token)
        #expect(unknown.status == 404 && unknown.errorName == "ALARM_NOT_FOUND")
        try await h.expect(201, .put, Self.personal, json: Self.personalBody, token: token)
        try await h.expect(204, .delete, Self.personal, token: token)
        let tombstone = await h.sendBytes(.post, "\(Self.personal)/attachments", body: SampleMedia.png(), contentType: nil, token: token)
        #expect(tombstone.status == 404 && tombstone.errorName == "ALARM_NOT_FOUND")
    }

    @Test("a completion's attachments: the member who answered uploads, every member reads, a removed one gets 404")
    func completion() async throws {
        let f = try await SharedAlarmFixture.make(members: 2)
        let h = f.h
        let (answerer, other) = (f.members[0], f.members[1])
        let completion = try await Self.answer(f, by: answerer)
        let pdf = SampleMedia.pdf()
        let refused = await h.sendBytes(.post, "\(completion)/attachments", body: pdf, contentType: nil, token: other.token)
        #expect(refused.status == 403 && refused.errorCode == "CA007")
        let byOwner = await h.sendBytes(.post, "\(completion)/attachments", body: pdf, contentType: nil, token: f.owner.token)
        #expect(byOwner.status == 403)
        let upload = await h.sendBytes(.post, "\(completion)/attachments", body: pdf, contentType: nil, token: answerer.token)
        #expect(upload.status == 201, "\(upload.text)")
        let id = try #require(upload.json["id"] as? String)
        #expect(upload.json["owner_kind"] as? String == "shared_completion")
        #expect(upload.json["group_id"] as? String == f.groupID)

        let download = await h.send(.get, "\(completion)/attachments/\(id)", token: other.token)
        #expect(download.status == 200 && download.response.body == pdf)
        #expect(download.header("Content-Disposition") == "attachment; filename=\"\(id).pdf\"")
        let list = await h.send(.get, "\(f.g)/completions", token: other.token)
        #expect((list.json["completions"] as? [[String: Any]])?.map { Self.listed($0) } == [[id]])
        // Another completion's path does not reach it.
        #expect(
            await h.send(.get, "\(f.g)/completions/\(UUID().uuidString.lowercased())/attachments/\(id)", token: other.token).status == 404)

        let removed = await h.send(.delete, "\(f.g)/members/\(other.id)", token: f.owner.token)
        #expect(removed.status == 204 || removed.status == 200, "\(removed.text)")
        #expect(await h.send(.get, "\(completion)/attachments/\(id)", token: other.token).status == 404)
        #expect(await h.send(.get, "\(completion)/attachments", token: other.token).status == 404)
        // The uploader deletes; the change goes to the group.
        #expect(await h.send(.delete, "\(completion)/attachments/\(id)", token: answerer.token).status == 204)
        let groupID = f.groupID
        let events = try await h.database.read { db in
            try db.query(
                "SELECT event FROM change_log WHERE topic = ?1 AND kind = 'attachment' ORDER BY seq", [.text("group:\(groupID)")])
        }.map { $0.string("event") }
        #expect(events == ["attachment_added", "attachment_deleted"])
    }

    @Test("the group snapshot and the alarm documents carry the attachments of alarms and completions")
    func snapshot() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let h = f.h
        let completion = try await Self.answer(f, by: f.members[0])
        h.clock.advance(by: 1)  // alarms list oldest first: this one second
        let alarm = try await f.createAlarm()
        let alarmID = try #require(alarm["id"] as? String)
        #expect(Self.listed(alarm) == [])
        let onAlarm = await h.sendBytes(
            .post, "\(f.g)/alarms/\(alarmID)/attachments", body: SampleMedia.png(), contentType: nil, token: f.owner.token)
        h.clock.advance(by: 1)
        let onCompletion = await h.sendBytes(
            .post, "\(completion)/attachments", body: SampleMedia.pdf(), contentType: nil, token: f.members[0].token)
        let alarmAttachment = try #require(onAlarm.json["id"] as? String)
        let completionAttachment = try #require(onCompletion.json["id"] as? String)

        let (groupID, userID, now) = (f.groupID, f.members[0].id, h.clock.nowMilliseconds())
        let data = try await h.database.read { db in
            try RealtimeSnapshots.read(.group(groupID), userID: userID, at: now, on: db).data
        }
        let snapshot = try #require(try JSONSerialization.jsonObject(with: Data(data)) as? [String: Any])
        let alarms = try #require(snapshot["alarms"] as? [[String: Any]])
        #expect(alarms.count == 2 && alarms[1]["id"] as? String == alarmID)
        #expect(alarms.map { Self.listed($0) } == [[], [alarmAttachment]])
        let completions = try #require(snapshot["recent_completions"] as? [[String: Any]])
        #expect(completions.map { Self.listed($0) } == [[completionAttachment]])

        // HTTP answers, and the next change-log document of the alarm.
        #expect(Self.listed(await h.send(.get, "\(f.g)/alarms/\(alarmID)", token: f.members[0].token).json) == [alarmAttachment])
        let page = await h.send(.get, "\(f.g)/alarms", token: f.members[0].token)
        #expect((page.json["alarms"] as? [[String: Any]])?.map { Self.listed($0) } == [[], [alarmAttachment]])
        let patched = try await h.expect(200, .patch, "\(f.g)/alarms/\(alarmID)", json: #"{"title":"Renamed"}"#, token: f.owner.token)
        #expect(Self.listed(patched.json) == [alarmAttachment])
        let logged = try await h.database.read { db in
            try db.queryOne(
                "SELECT document FROM change_log WHERE kind = 'shared_alarm' AND entity_id = ?1 ORDER BY seq DESC LIMIT 1",
                [.text(alarmID)])?.string("document")
        }
        let document = try #require(logged.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) } as? [String: Any])
        #expect(Self.listed(document) == [alarmAttachment])
        // The edit's answer is its change-log document with `occurrence_state` put in: the bytes a read
        // answers, and the change log's members.
        let read = await h.send(.get, "\(f.g)/alarms/\(alarmID)", token: f.owner.token)
        #expect(patched.response.body == read.response.body)
        var patchMembers = try #require(DocumentMembers.of(patched.response.body))
        #expect(patchMembers.removeValue(forKey: "occurrence_state") != nil)
        #expect(patchMembers == DocumentMembers.of(Array((logged ?? "").utf8)))

        // An answer carries the alarm's attachments (a new answer has none); a retry, the answer's own.
        let answered = try await h.expect(
            201, .post, "\(f.g)/alarms/\(alarmID)/completions", json: #"{"status":"completed"}"#, token: f.members[0].token)
        #expect(Self.listed(answered.object("alarm") ?? [:]) == [alarmAttachment])
        #expect(Self.listed(answered.object("completion") ?? [:]) == [])
        let firstAlarmID = try #require(alarms[0]["id"] as? String)
        let retried = try await h.expect(
            200, .post, "\(f.g)/alarms/\(firstAlarmID)/completions", json: #"{"status":"completed"}"#, token: f.members[0].token)
        #expect(Self.listed(retried.object("completion") ?? [:]) == [completionAttachment])
    }

    @Test("the user quota: an upload past it is 409 ATTACHMENT_QUOTA_EXCEEDED and stores nothing")
    func userQuota() async throws {
        let pdf = SampleMedia.pdf()
        let s = try await AttachmentTests.Setup.make(members: 1) { $0.attachments.userQuotaBytes = Int64(2 * pdf.count) }
        #expect(await s.upload(pdf).status == 201)
        s.h.clock.advance(by: 1)
        let second = await s.upload(pdf)
        #expect(second.status == 201, "\(second.text)")
        s.h.clock.advance(by: 61_000)
        let files = s.storedFiles().count
        let third = await s.upload(SampleMedia.png(width: 30, height: 30))
        #expect(third.status == 409 && third.errorCode == "CA065" && third.errorName == "ATTACHMENT_QUOTA_EXCEEDED")
        #expect(Self.message(third)?.contains("your attachments") == true)
        #expect(try await s.rowCount() == 2 && s.storedFiles().count == files)
        // Another member has a quota of their own.
        #expect(await s.upload(pdf, token: s.f.members[0].token).status == 201)
    }

    @Test("a deleted attachment's bytes count against the quota until the sweep has removed its file")
    func quotaUntilFileGone() async throws {
        let pdf = SampleMedia.pdf()
        let s = try await AttachmentTests.Setup.make(members: 1) { $0.attachments.userQuotaBytes = Int64(pdf.count * 3 / 2) }
        let first = await s.upload(pdf)
        #expect(first.status == 201)
        let id = try #require(first.json["id"] as? String)
        #expect(await s.h.send(.delete, "\(s.path)/\(id)", token: s.f.owner.token).status == 204)
        s.h.clock.advance(by: 1)
        // Delete and upload again: the deleted file is still on disk for 7 days, so its bytes still count.
        let again = await s.upload(pdf)
        #expect(again.status == 409 && again.errorCode == "CA065", "\(again.text)")
        #expect(try await s.h.database.read { try AttachmentStore.quotaBytes(uploadedBy: s.f.owner.id, on: $0) } == Int64(pdf.count))
        // The sweep removes the file (and its thumbnail) after the grace, and with it the row's bytes.
        let grace = AttachmentConfiguration().orphanGraceMilliseconds
        let outcome = try AttachmentSweep.run(
            files: AttachmentFiles(dataDirectory: s.h.directory.path), graceMilliseconds: grace,
            at: s.h.clock.nowMilliseconds() + grace + 1_000, on: s.h.database)
        #expect(outcome == AttachmentSweep.Outcome(rowsRetired: 0, filesRemoved: 2, tombstonesDropped: 1))
        #expect(try await s.rowCount() == 0)
        #expect(await s.upload(pdf).status == 201)
    }

    @Test("the group quota counts every member's uploads in the group, not personal alarms'")
    func groupQuota() async throws {
        let pdf = SampleMedia.pdf()
        let s = try await AttachmentTests.Setup.make(members: 1) { $0.attachments.groupQuotaBytes = Int64(2 * pdf.count) }
        let member = s.f.members[0]
        #expect(await s.upload(pdf).status == 201)
        #expect(await s.upload(pdf, token: member.token).status == 201)
        s.h.clock.advance(by: 1)
        let refused = await s.upload(pdf, token: member.token)
        #expect(refused.status == 409 && refused.errorCode == "CA065")
        #expect(Self.message(refused)?.contains("this group's attachments") == true)
        // At exactly the quota (2 × the PDF) the group is full; a personal alarm is outside it.
        try await s.h.expect(201, .put, Self.personal, json: Self.personalBody, token: member.token)
        let personal = await s.h.sendBytes(.post, "\(Self.personal)/attachments", body: pdf, contentType: nil, token: member.token)
        #expect(personal.status == 201, "\(personal.text)")
        let groupID = s.f.groupID
        #expect(try await s.h.database.read { try AttachmentStore.quotaBytes(groupID: groupID, on: $0) } == Int64(2 * pdf.count))
    }

    @Test("account deletion marks the user's uploads deleted everywhere; the sweep then removes their files only")
    func accountDeletion() async throws {
        let s = try await AttachmentTests.Setup.make(members: 1)
        let h = s.h
        let leaving = s.f.members[0]
        let kept = await s.upload(SampleMedia.png(width: 64, height: 64))
        h.clock.advance(by: 1)
        let shared = await s.upload(SampleMedia.png(width: 65, height: 65), token: leaving.token)
        try await h.expect(201, .put, Self.personal, json: Self.personalBody, token: leaving.token)
        h.clock.advance(by: 1)
        let personal = await h.sendBytes(
            .post, "\(Self.personal)/attachments", body: SampleMedia.png(width: 66, height: 66), contentType: nil, token: leaving.token)
        #expect(kept.status == 201 && shared.status == 201 && personal.status == 201)
        let sharedID = try #require(shared.json["id"] as? String)

        try await h.expect(204, .delete, "/v1/me", token: leaving.token)
        let leavingID = leaving.id
        let live = try await h.database.read { db in
            try db.query("SELECT uploaded_by FROM attachments WHERE deleted_ms IS NULL", []).compactMap { $0.string("uploaded_by") }
        }
        #expect(live == [s.f.owner.id])
        let keptID = try #require(kept.json["id"] as? String)
        #expect(Self.listed(await h.send(.get, "\(s.f.g)/alarms/\(s.alarmID)", token: s.f.owner.token).json) == [keptID])
        let groupID = s.f.groupID
        let removal = try await h.database.read { db in
            try db.queryOne(
                "SELECT event, op FROM change_log WHERE topic = ?1 AND kind = 'attachment' AND entity_id = ?2 ORDER BY seq DESC",
                [.text("group:\(groupID)"), .text(sharedID)])
        }
        #expect(removal?.string("event") == "account_deleted" && removal?.string("op") == "removed")
        // The personal alarm's attachment documents on the deleted account's topic are redacted.
        let personalDocuments = try await h.database.read { db in
            try db.query(
                "SELECT document FROM change_log WHERE topic = ?1 AND kind = 'attachment'", [.text("user:\(leavingID)")])
        }
        #expect(personalDocuments.count == 1 && personalDocuments.allSatisfy { $0.string("document") == nil })

        let grace = AttachmentConfiguration().orphanGraceMilliseconds
        let files = AttachmentFiles(dataDirectory: h.directory.path)
        _ = try AttachmentSweep.run(files: files, graceMilliseconds: grace, at: h.clock.nowMilliseconds() + grace + 1, on: h.database)
        let keptSHA = try #require(kept.json["sha256"] as? String)
        let keptThumbnail = try #require((kept.json["thumbnail"] as? [String: Any])?["sha256"] as? String)
        #expect(Set(s.storedFiles().map(\.name)) == [keptSHA, keptThumbnail])
    }

    @Test("the sweep retires the attachments of a deleted personal alarm")
    func personalTombstone() async throws {
        let f = try await SharedAlarmFixture.make(members: 0)
        let h = f.h
        try await h.expect(201, .put, Self.personal, json: Self.personalBody, token: f.owner.token)
        #expect(
            await h.sendBytes(.post, "\(Self.personal)/attachments", body: SampleMedia.png(), contentType: nil, token: f.owner.token)
                .status == 201)
        try await h.expect(204, .delete, Self.personal, token: f.owner.token)
        let files = AttachmentFiles(dataDirectory: h.directory.path)
        let outcome = try AttachmentSweep.run(
            files: files, graceMilliseconds: AttachmentConfiguration().orphanGraceMilliseconds, at: h.clock.nowMilliseconds(),
            on: h.database)
        #expect(outcome.rowsRetired == 1)
    }
}
