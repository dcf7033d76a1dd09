import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// A deleted group's alarms, completions and attachments are purged 30 days after its deletion by
/// the retention sweep, and the orphan sweep then removes the files and releases the quota bytes
/// (docs/design.md#retention, docs/attachments.md#storage). Time is the harness's injected clock;
/// runs on both engines (`CHRONIR_TEST_BACKEND`).
@Suite("Deleted groups purged after 30 days")
struct DeletedGroupPurgeTests {
    func count(_ h: AppHarness, _ sql: String, _ groupID: String) throws -> Int64 {
        try h.database.readSync { db in try db.queryOne(sql, [.text(groupID)])?.int("n") ?? -1 }
    }

    @Test("exactly 30 days after: nothing purged; 1 ms later: alarms, completions, attachment rows and files gone, quotas free")
    func purged() async throws {
        let s = try await AttachmentTests.Setup.make(members: 1)
        let h = s.h
        let groupID = s.f.groupID
        let owner = s.f.owner.id
        let upload = await s.upload(SampleMedia.png(width: 64, height: 64))
        #expect(upload.status == 201, "\(upload.text)")
        h.clock.set(APNsSenderTests.ms(SharedAlarmFixture.firstFire) + 60_000)
        #expect(await s.f.answer(s.alarmID, by: s.f.members[0]).status == 201)
        // Another group of the same owner, not deleted: untouched throughout.
        let kept = try await h.createGroup(token: s.f.owner.token, name: "Kept")
        try await h.expect(
            201, .post, "/v1/groups/\(kept)/alarms",
            json: #"{"title":"Stays",\#(SharedAlarmFixture.dailyTen),"completion_rule":"any","assigned_to_uids":[]}"#,
            token: s.f.owner.token)
        let usedBefore = try h.database.readSync { db in try AttachmentStore.quotaBytes(uploadedBy: owner, on: db) }
        #expect(usedBefore > 0)

        try await h.expect(204, .delete, s.f.g, token: s.f.owner.token)
        let deletedAt = h.clock.nowMilliseconds()
        let files = AttachmentFiles(dataDirectory: h.directory.path)
        let grace = AttachmentConfiguration().orphanGraceMilliseconds

        // At exactly 30 days the sweeps keep everything (the files are past their grace, but a live
        // row still names them).
        let early = deletedAt + GroupStore.retentionAfterDeleteMilliseconds
        let report = try h.database.writeSync { db in try Retention.sweep(at: early, on: db) }
        #expect(report.deletedGroupAlarms == 0)
        #expect(try AttachmentSweep.run(files: files, graceMilliseconds: grace, at: early, on: h.database).filesRemoved == 0)
        #expect(try count(h, "SELECT COUNT(*) AS n FROM shared_alarms WHERE group_id = ?1", groupID) == 1)
        #expect(try count(h, "SELECT COUNT(*) AS n FROM shared_completions WHERE group_id = ?1", groupID) == 1)
        #expect(try count(h, "SELECT COUNT(*) AS n FROM attachments WHERE group_id = ?1 AND deleted_ms IS NULL", groupID) == 1)
        #expect(s.storedFiles().count == 2)

        let due = early + 1
        let purge = try h.database.writeSync { db in try Retention.sweep(at: due, on: db) }
        #expect(purge.deletedGroupAlarms == 1)
        #expect(try count(h, "SELECT COUNT(*) AS n FROM shared_alarms WHERE group_id = ?1", groupID) == 0)
        #expect(try count(h, "SELECT COUNT(*) AS n FROM shared_completions WHERE group_id = ?1", groupID) == 0)
        let swept = try AttachmentSweep.run(files: files, graceMilliseconds: grace, at: due, on: h.database)
        #expect(swept == AttachmentSweep.Outcome(rowsRetired: 0, filesRemoved: 2, tombstonesDropped: 1))
        #expect(s.storedFiles().isEmpty)
        #expect(try count(h, "SELECT COUNT(*) AS n FROM attachments WHERE group_id = ?1", groupID) == 0)
        #expect(try h.database.readSync { db in try AttachmentStore.quotaBytes(uploadedBy: owner, on: db) } == 0)
        #expect(try h.database.readSync { db in try AttachmentStore.quotaBytes(groupID: groupID, on: db) } == 0)

        // The group and its member rows stay (audit); the other group is untouched; a second sweep does nothing.
        #expect(try count(h, "SELECT COUNT(*) AS n FROM groups WHERE id = ?1 AND deleted_ms IS NOT NULL", groupID) == 1)
        #expect(try count(h, "SELECT COUNT(*) AS n FROM group_members WHERE group_id = ?1", groupID) == 2)
        #expect(try count(h, "SELECT COUNT(*) AS n FROM shared_alarms WHERE group_id = ?1", kept) == 1)
        #expect(try h.database.writeSync { db in try Retention.sweep(at: due + 1, on: db) }.deletedGroupAlarms == 0)
    }
}
