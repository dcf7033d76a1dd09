import Domain
import Foundation
import Realtime
import SQLite
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// no hot statement may cost more as history grows. A workload through the HTTP API (plus
/// the sweeper jobs and the realtime feed's change-log reads) leaves every statement it ran in the
/// connections' prepared-statement caches; each is checked with `EXPLAIN QUERY PLAN`: none may scan
/// a table that grows with use (a `SCAN` step, even one "USING INDEX", reads every row).
@Suite("Query plans: every statement the API runs searches an index", .enabled(if: TestBackend.current == .sqlite, "SQLite query plans"))
struct QueryPlanTests {
    /// Tables that grow with use. Small bounded tables (log_epoch, schema_migrations) may be scanned.
    static let growingTables: Set<String> = [
        "users", "sessions", "login_failures", "change_log", "groups", "group_members", "invite_codes",
        "invite_attempts", "invitations", "shared_alarms", "shared_completions", "shared_alarm_pending",
        "attachments", "personal_alarms",
    ]

    /// Statements allowed to scan, each with the reason it is not a per-request cost.
    static let allowedScans: [String: String] = [
        "SELECT DISTINCT sha256 FROM attachments WHERE deleted_ms IS NOT NULL":
            "the orphan sweep (every 10 minutes) reads every tombstone to drop those whose file is gone: "
            + "it walks the partial index attachments_tombstones only, which holds at most the grace period's deletions"
    ]

    @Test("the plans of the API's statements after a full workload contain no scan of a growing table")
    func noScans() async throws {
        let f = try await SharedAlarmFixture.make(members: 3)
        let h = f.h
        let owner = f.owner
        // Accounts and sessions.
        _ = await h.send(.get, "/v1/me", token: owner.token)
        _ = await h.send(.patch, "/v1/me", json: #"{"display_name":"Owner Two"}"#, token: owner.token)
        _ = await h.send(
            .post, "/v1/auth/login", json: #"{"email":"owner@example.com","password":"wrong password"}"#)
        let second = await h.send(
            .post, "/v1/auth/login", json: #"{"email":"owner@example.com","password":"correct horse"}"#)
        // Sessions and the password change.
        let listed = await h.send(.get, "/v1/me/sessions", token: owner.token)
        let sessions = listed.json["sessions"] as? [[String: Any]] ?? []
        if let other = sessions.first(where: { $0["current"] as? Bool == false })?["id"] as? String {
            _ = await h.send(.delete, "/v1/me/sessions/\(other)", token: owner.token)
        }
        #expect(second.status == 200 && sessions.count == 2)
        _ = await h.send(.post, "/v1/me/sessions/revoke-others", token: owner.token)
        _ = await h.send(
            .post, "/v1/me/password", json: #"{"current_password":"correct horse","new_password":"correct horse"}"#,
            token: owner.token)
        // Groups, members, codes, invitations.
        _ = await h.send(.get, "/v1/groups", token: owner.token)
        _ = await h.send(.get, f.g, token: f.members[0].token)
        _ = await h.send(.patch, f.g, json: #"{"name":"Flat 2"}"#, token: owner.token)
        _ = await h.send(.patch, "\(f.g)/members/\(f.members[0].id)", json: #"{"role":"admin"}"#, token: owner.token)
        let invitation = await h.send(
            .post, "\(f.g)/invitations", json: #"{"email":"guest@example.com"}"#, token: owner.token)
        _ = await h.send(.get, "\(f.g)/invitations", token: owner.token)
        let guest = try await h.register("guest@example.com", name: "Guest")
        _ = await h.send(.get, "/v1/invitations", token: guest.token)
        if let token = invitation.json["token"] as? String {
            _ = await h.send(.post, "/v1/invitations/\(token)/accept", token: guest.token)
        }
        _ = await h.send(.post, "\(f.g)/invite-code", token: owner.token)
        _ = await h.join("WRONG-CODE-XX", token: guest.token)
        // Shared alarms and completions.
        let alarm = try await f.createAlarm(assignees: [f.members[1]])
        let alarmID = try #require(alarm["id"] as? String)
        _ = await h.send(.get, "\(f.g)/alarms", token: f.members[1].token)
        _ = await h.send(.get, "\(f.g)/alarms?include_deleted=true&limit=1", token: owner.token)
        _ = await h.send(.get, "\(f.g)/alarms/\(alarmID)", token: owner.token)
        for query in ["", "?state=upcoming", "?state=due&assigned=me", "?state=overdue", "?state=overdue&assigned=me&limit=1"] {
            _ = await h.send(.get, "/v1/me/shared-alarms\(query)", token: f.members[1].token)
        }
        _ = await h.send(.patch, "\(f.g)/alarms/\(alarmID)", json: #"{"title":"Filter"}"#, token: owner.token)
        h.clock.advance(by: 3_600_000)
        let answered = await f.answer(alarmID, by: f.members[1])
        _ = await h.send(.get, "\(f.g)/alarms/\(alarmID)/completions", token: owner.token)
        _ = await h.send(.get, "\(f.g)/completions?limit=2", token: owner.token)
        // Attachments on every owner: upload (access, limits, quotas), list, download, delete,
        // and the documents that carry them.
        let completionID = try #require(answered.object("completion")?["id"] as? String, "\(answered.text)")
        let personal = "/v1/me/alarms/7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
        _ = await h.send(.put, personal, json: #"{"title":"Pills",\#(SharedAlarmFixture.dailyTen)}"#, token: f.members[1].token)
        for (collection, token) in [
            ("\(f.g)/alarms/\(alarmID)/attachments", owner.token), ("\(f.g)/completions/\(completionID)/attachments", f.members[1].token),
            ("\(personal)/attachments", f.members[1].token),
        ] {
            let uploaded = await h.sendBytes(
                .post, collection, body: SampleMedia.png(width: 40, height: 30), contentType: nil, token: token)
            let id = try #require(uploaded.json["id"] as? String, "\(uploaded.text)")
            _ = await h.send(.get, collection, token: token)
            _ = await h.send(.get, "\(collection)/\(id)/thumbnail", token: token)
            if collection.contains("/completions/") { _ = await h.send(.delete, "\(collection)/\(id)", token: token) }
        }
        _ = await h.send(.get, "\(f.g)/alarms/\(alarmID)", token: owner.token)
        _ = await h.send(.get, "/v1/me/alarms?since=0", token: f.members[1].token)
        _ = await h.send(.get, "/v1/me/alarms", token: f.members[1].token)
        let (groupID, ownerID, now) = (f.groupID, owner.id, h.clock.nowMilliseconds())
        _ = try h.database.readSync { db in try RealtimeSnapshots.read(.group(groupID), userID: ownerID, at: now, on: db) }
        _ = await h.send(.delete, "\(f.g)/members/\(f.members[2].id)", token: owner.token)
        _ = await h.send(.delete, "\(f.g)/alarms/\(alarmID)", token: owner.token)
        _ = await h.send(.post, "/v1/auth/logout", token: f.members[0].token)
        // The realtime feed's reads and the sweeper's jobs.
        let groupTopic = "group:\(f.groupID)"
        _ = try h.database.readSync { db in
            _ = try ChangeFeed.batches(after: 0, on: db)
            _ = try ChangeFeed.replay(topic: groupTopic, after: 1, maxRows: 100, member: f.members[1].id, on: db)
            return try ChangeFeed.batches(after: 1, topic: groupTopic, limit: 10, on: db)
        }
        h.clock.advance(by: 40 * 86_400_000)
        for job in Sweeper.Job.standard { _ = try job.run(h.database, h.clock.nowMilliseconds()) }
        _ = try AttachmentSweep.run(
            files: AttachmentFiles(dataDirectory: h.directory.path), graceMilliseconds: 0, at: h.clock.nowMilliseconds(),
            on: h.database)
        _ = await h.send(.delete, "/v1/me", json: #"{"password":"correct horse"}"#, token: guest.token)

        let statements = try h.sqlite.preparedStatementTexts()
        #expect(statements.count >= 50, "the workload ran only \(statements.count) distinct statements")
        // The attachment workload's statements are among them: quotas, documents' lists, the sweep's retirement.
        for fragment in ["SUM(size_bytes)", "owner_id IN (", "UPDATE attachments SET deleted_ms = ?1"] {
            #expect(statements.contains { $0.contains(fragment) }, "no statement with \(fragment)")
        }
        var scans: [String] = []
        for sql in statements.sorted() {
            let plan = try h.sqlite.withWriterConnection { try $0.queryPlan(sql) }
            for step in plan where Self.isScanOfGrowingTable(step) && Self.allowedScans[sql] == nil {
                scans.append("\(step)\n    in: \(sql.split(whereSeparator: \.isNewline).joined(separator: " "))")
            }
        }
        // A topic's change-log reads (resume, replay) go through the topic index, not a seq range
        // over every topic's rows.
        let topicReads = statements.filter { $0.contains("FROM change_log WHERE topic = ?1") }
        #expect(!topicReads.isEmpty)
        for sql in topicReads {
            let plan = try h.sqlite.withWriterConnection { try $0.queryPlan(sql) }
            #expect(plan.contains { $0.contains("USING INDEX change_log_topic") }, "\(sql): \(plan)")
        }
        #expect(scans.isEmpty, "statements that scan a growing table:\n\(scans.joined(separator: "\n"))")
    }

    /// "SCAN change_log", "SCAN m USING INDEX …", "SCAN change_log USING COVERING INDEX …" all read
    /// every row; SEARCH steps and scans of subquery results ("SCAN (subquery-1)") do not.
    static func isScanOfGrowingTable(_ step: String) -> Bool {
        let words = step.split(separator: " ")
        guard words.first == "SCAN", words.count >= 2 else { return false }
        return growingTables.contains(String(words[1]))
    }
}
