import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// Personal completions (docs/personal-sync.md#completions): one per occurrence, lists with
/// filters and paging, tiers, 404s, retention, erasure, and the change on the user topic. "Devices" are
/// two sessions of one account; the clock is the harness's manual clock.
@Suite("Personal completions — idempotent per occurrence, filters and paging, tiers, retention, erasure, live sync")
struct PersonalCompletionTests {
    static let alarmA = PersonalAlarmTests.alarmA
    static let alarmB = PersonalAlarmTests.alarmB
    static let unknownAlarm = "2d7e5b80-af4c-4e3d-9a91-3c4d5e6f7081"
    static let completionID = "4f9a7da2-c16e-4a5f-9cb3-5e6f708192a3"

    static func path(_ alarm: String = alarmA) -> String { "/v1/me/alarms/\(alarm)/completions" }

    static func answer(_ scheduled: Int64, status: String = "completed", extra: String = "") -> String {
        #"{"status":"\#(status)","scheduled_at":"\#(PersonalAlarmTests.stamp(scheduled))"\#(extra)}"#
    }

    /// A plus account (two devices) with alarms A ("Rent") and B ("Filter"); clock at 2026-02-06T09:00Z.
    static func setUp(tier: Tier = .plus) async throws -> (AppHarness, phone: String, tablet: String) {
        let (h, phone, tablet) = try await PersonalAlarmTests.twoDevices(tier: tier)
        if tier != .free {
            try await h.expect(201, .put, "/v1/me/alarms/\(alarmA)", json: PersonalAlarmTests.body("Rent"), token: phone)
            try await h.expect(201, .put, "/v1/me/alarms/\(alarmB)", json: PersonalAlarmTests.body("Filter"), token: phone)
        }
        return (h, phone, tablet)
    }

    static func completionRows(_ h: AppHarness) throws -> Int64 {
        try h.database.readSync { db in try db.queryOne("SELECT COUNT(*) AS n FROM personal_completions", [])?.int("n") ?? -1 }
    }

    @Test("a second POST for the same occurrence returns the first record (200) and writes nothing; ids are the device's")
    func idempotentPerOccurrence() async throws {
        let (h, phone, tablet) = try await Self.setUp()
        let t0 = h.clock.nowMilliseconds()
        let first = try await h.expect(
            201, .post, Self.path(), json: Self.answer(t0, extra: #","id":"\#(Self.completionID.uppercased())","note":"new filter""#),
            token: phone)
        #expect(first.json["id"] as? String == Self.completionID, "the device's id, lowercased")
        #expect(first.json["alarm_id"] as? String == Self.alarmA)
        #expect(first.json["alarm_title"] as? String == "Rent")
        #expect(first.json["completion_method"] as? String == "on_time")
        #expect(first.json["completed_at"] as? String == PersonalAlarmTests.stamp(t0))
        #expect(first.json["total_snooze_minutes"] as? Int == 0)
        let seqBefore = try h.database.readSync { db in try ChangeLog.latestSeq(on: db) }

        // The tablet logged the same occurrence offline (another id, another note): the first answer stands.
        h.clock.advance(by: 60_000)
        let retry = try await h.expect(
            200, .post, Self.path(), json: Self.answer(t0, status: "skipped", extra: #","note":"from the tablet""#), token: tablet)
        #expect(retry.json["id"] as? String == Self.completionID)
        #expect(retry.json["note"] as? String == "new filter")
        #expect(retry.json["status"] as? String == "completed")
        // The seeds' field name names the same occurrence.
        let alias = try await h.expect(
            200, .post, Self.path(), json: #"{"status":"completed","scheduled_date":"\#(PersonalAlarmTests.stamp(t0))"}"#, token: phone)
        #expect(alias.json["id"] as? String == Self.completionID)
        #expect(try h.database.readSync { db in try ChangeLog.latestSeq(on: db) } == seqBefore, "a retry appends nothing")
        #expect(try Self.completionRows(h) == 1)

        // Another occurrence: a new record (server id when none is sent); the skip defaults its method.
        let next = try await h.expect(201, .post, Self.path(), json: Self.answer(t0 + 86_400_000, status: "skipped"), token: phone)
        #expect(next.json["completion_method"] as? String == "skipped")
        #expect((next.json["id"] as? String)?.count == 36)
        // The same occurrence of another alarm is another record.
        try await h.expect(201, .post, Self.path(Self.alarmB), json: Self.answer(t0), token: phone)
        // A device id already used by another record: 422 naming `id`, nothing written.
        let reused = try await h.expect(
            422, .post, Self.path(), json: Self.answer(t0 + 2 * 86_400_000, extra: #","id":"\#(Self.completionID)""#), token: phone)
        #expect(reused.errorField == "id")
        #expect(try Self.completionRows(h) == 3)
    }

    @Test("validation: scheduled_at required; note, snooze counts, completed_at ahead, ids, unknown fields → 422 naming the field")
    func validation() async throws {
        let (h, phone, _) = try await Self.setUp()
        let t0 = h.clock.nowMilliseconds()
        let cases: [(String, String)] = [
            (#"{"status":"completed"}"#, "scheduled_at"),
            (
                Self.answer(t0, extra: #","note":"\#(String(repeating: "n", count: SharedAlarmRules.maxCompletionNoteCharacters + 1))""#),
                "note"
            ),
            (Self.answer(t0, extra: #","snooze_count":-1"#), "snooze_count"),
            (Self.answer(t0, extra: #","snooze_count":1001"#), "snooze_count"),
            (Self.answer(t0, extra: #","total_snooze_minutes":525601"#), "total_snooze_minutes"),
            (Self.answer(t0, extra: #","completed_at":"\#(PersonalAlarmTests.stamp(t0 + 5 * 60_000 + 1))""#), "completed_at"),
            (Self.answer(t0, extra: #","id":"not-a-uuid""#), "id"),
            (Self.answer(t0 + PersonalCompletionRules.maxScheduledAheadMilliseconds + 1), "scheduled_at"),
            (Self.answer(t0 - PersonalCompletionRules.retentionMilliseconds - 1), "scheduled_at"),
            (
                Self.answer(
                    t0, extra: #","completed_at":"\#(PersonalAlarmTests.stamp(t0 - PersonalCompletionRules.retentionMilliseconds - 1))""#),
                "completed_at"
            ),
            (Self.answer(t0, extra: #","user_id":"someone""#), "user_id"),
        ]
        for (body, field) in cases {
            let refused = try await h.expect(422, .post, Self.path(), json: body, token: phone)
            #expect(refused.errorField == field, "\(body)")
        }
        let bad = try await h.expect(422, .post, "/v1/me/alarms/nope/completions", json: Self.answer(t0), token: phone)
        #expect(bad.errorField == "alarm_id")
        #expect(try Self.completionRows(h) == 0, "bad input writes nothing")
        // At the limits: accepted.
        let edge = try await h.expect(
            201, .post, Self.path(),
            json: Self.answer(
                t0,
                extra: #","snooze_count":1000,"total_snooze_minutes":525600,"completed_at":"\#(PersonalAlarmTests.stamp(t0 + 5 * 60_000))""#
                    + #","note":"\#(String(repeating: "n", count: SharedAlarmRules.maxCompletionNoteCharacters))""#),
            token: phone)
        #expect(edge.json["snooze_count"] as? Int == 1000)
        // The scheduled_at window's ends and the oldest completed_at: accepted.
        try await h.expect(
            201, .post, Self.path(), json: Self.answer(t0 + PersonalCompletionRules.maxScheduledAheadMilliseconds), token: phone)
        let oldest = t0 - PersonalCompletionRules.retentionMilliseconds
        try await h.expect(
            201, .post, Self.path(), json: Self.answer(oldest, extra: #","completed_at":"\#(PersonalAlarmTests.stamp(oldest))""#),
            token: phone)
        #expect(edge.json["completed_at"] as? String == PersonalAlarmTests.stamp(t0 + 5 * 60_000))
    }

    @Test("lists: newest completed_at first, status and [from, to) filters, cursor paging; /v1/me/completions spans alarms")
    func filtersAndPaging() async throws {
        let (h, phone, tablet) = try await Self.setUp()
        let t0 = h.clock.nowMilliseconds()
        let day: Int64 = 86_400_000
        // Five occurrences of A answered on days 0…4 (days 1 and 3 skipped), one of B on day 2.
        for i in Int64(0)..<5 {
            h.clock.set(t0 + i * day + 60_000)
            try await h.expect(
                201, .post, Self.path(), json: Self.answer(t0 + i * day, status: i % 2 == 1 ? "skipped" : "completed"), token: phone)
        }
        h.clock.set(t0 + 2 * day + 120_000)
        try await h.expect(201, .post, Self.path(Self.alarmB), json: Self.answer(t0 + 2 * day), token: phone)
        h.clock.set(t0 + 5 * day)

        func scheduled(_ reply: Reply) -> [Int64] {
            (reply.json["completions"] as? [[String: Any]] ?? []).compactMap {
                ($0["scheduled_at"] as? String).flatMap(Timestamp.parse).map { ($0 - t0) / day }
            }
        }
        var pages: [[Int64]] = []
        var cursor = ""
        repeat {
            let page = try await h.expect(200, .get, "\(Self.path())?limit=2&cursor=\(cursor)", token: tablet)
            pages.append(scheduled(page))
            cursor = page.json["next_cursor"] as? String ?? ""
        } while !cursor.isEmpty
        #expect(pages == [[4, 3], [2, 1], [0]])

        #expect(scheduled(try await h.expect(200, .get, "\(Self.path())?status=skipped", token: tablet)) == [3, 1])
        let from = PersonalAlarmTests.stamp(t0 + day)
        let to = PersonalAlarmTests.stamp(t0 + 3 * day + 60_000)
        #expect(scheduled(try await h.expect(200, .get, "\(Self.path())?from=\(from)&to=\(to)", token: tablet)) == [2, 1])
        let all = try await h.expect(200, .get, "/v1/me/completions", token: tablet)
        #expect(
            (all.json["completions"] as? [[String: Any]] ?? []).compactMap { $0["alarm_title"] as? String }
                == ["Rent", "Rent", "Filter", "Rent", "Rent", "Rent"])
        #expect(all.json["next_cursor"] is NSNull)
        #expect(scheduled(try await h.expect(200, .get, "/v1/me/completions?alarm_id=\(Self.alarmB)", token: tablet)) == [2])

        #expect(try await h.expect(422, .get, "\(Self.path())?status=done", token: tablet).errorField == "status")
        #expect(try await h.expect(422, .get, "\(Self.path())?from=yesterday", token: tablet).errorField == "from")
        #expect(try await h.expect(422, .get, "\(Self.path())?limit=101", token: tablet).errorField == "limit")
        #expect(try await h.expect(422, .get, "/v1/me/completions?alarm_id=x", token: tablet).errorField == "alarm_id")
    }

    @Test("tiers: free → 403 CA002 on POST, reads allowed; after a downgrade the history stays readable")
    func tiers() async throws {
        let (free, token, _) = try await Self.setUp(tier: .free)
        let refused = try await free.expect(403, .post, Self.path(), json: Self.answer(free.clock.nowMilliseconds()), token: token)
        #expect(refused.errorCode == "CA002")
        try await free.expect(200, .get, "/v1/me/completions", token: token)
        try await free.expect(401, .get, "/v1/me/completions")
        try await free.expect(401, .post, Self.path(), json: Self.answer(0))

        let (h, phone, _) = try await Self.setUp(tier: .premium)
        try await h.expect(201, .post, Self.path(), json: Self.answer(h.clock.nowMilliseconds()), token: phone)
        try h.database.writeSync { db in _ = try db.run("UPDATE users SET tier = 'free'", []) }
        let down = try await h.expect(403, .post, Self.path(), json: Self.answer(h.clock.nowMilliseconds() + 1), token: phone)
        #expect(down.errorCode == "CA002")
        let kept = try await h.expect(200, .get, Self.path(), token: phone)
        #expect((kept.json["completions"] as? [Any])?.count == 1)
    }

    @Test("404 ALARM_NOT_FOUND: unknown alarm, another account's alarm, a tombstone (whose history still lists)")
    func notFound() async throws {
        let (h, phone, _) = try await Self.setUp()
        let t0 = h.clock.nowMilliseconds()
        try await h.expect(201, .post, Self.path(), json: Self.answer(t0), token: phone)
        let unknown = try await h.expect(404, .post, Self.path(Self.unknownAlarm), json: Self.answer(t0), token: phone)
        #expect(unknown.errorCode == "CA006")
        #expect(try await h.expect(404, .get, Self.path(Self.unknownAlarm), token: phone).errorCode == "CA006")
        #expect(try await h.expect(404, .get, "/v1/me/completions?alarm_id=\(Self.unknownAlarm)", token: phone).errorCode == "CA006")

        let (bea, _) = try await h.register("bea@example.com")
        #expect(try await h.expect(404, .post, Self.path(), json: Self.answer(t0), token: bea).errorCode == "CA006")
        #expect(try await h.expect(404, .get, Self.path(), token: bea).errorCode == "CA006")
        #expect((try await h.expect(200, .get, "/v1/me/completions", token: bea).json["completions"] as? [Any])?.isEmpty == true)

        try await h.expect(204, .delete, "/v1/me/alarms/\(Self.alarmA)", token: phone)
        let late = try await h.expect(404, .post, Self.path(), json: Self.answer(t0 + 86_400_000), token: phone)
        #expect(late.errorCode == "CA006")
        let history = try await h.expect(200, .get, Self.path(), token: phone)
        #expect((history.json["completions"] as? [Any])?.count == 1, "a tombstone's history stays readable until it is purged")
        #expect(try Self.completionRows(h) == 1)
    }

    @Test("retention: kept 3 years from completed_at, then purged; a purged tombstone takes its completions")
    func retention() async throws {
        let (h, first, _) = try await Self.setUp()
        let t0 = h.clock.nowMilliseconds()
        try await h.expect(201, .post, Self.path(), json: Self.answer(t0), token: first)
        // Sessions lapse after 30 idle days: each jump of the clock signs in again.
        func signIn() async throws -> String { try #require(await h.login("ana@example.com").json["token"] as? String) }
        h.clock.set(t0 + 400 * 86_400_000)
        var phone = try await signIn()
        try await h.expect(201, .post, Self.path(), json: Self.answer(t0 + 400 * 86_400_000), token: phone)
        try await h.expect(201, .post, Self.path(Self.alarmB), json: Self.answer(t0 + 400 * 86_400_000), token: phone)

        func sweep(at ms: Int64) throws -> RetentionReport {
            h.clock.set(ms)
            return try h.database.writeSync { db in try Retention.sweep(at: ms, on: db) }
        }
        #expect(try sweep(at: t0 + PersonalCompletionRules.retentionMilliseconds).personalCompletions == 0, "exactly 3 years: kept")
        #expect(try sweep(at: t0 + PersonalCompletionRules.retentionMilliseconds + 1).personalCompletions == 1)
        phone = try await signIn()
        let left = try await h.expect(200, .get, "/v1/me/completions", token: phone)
        #expect((left.json["completions"] as? [Any])?.count == 2)

        // B deleted: its completion goes with its tombstone, 30 days later.
        try await h.expect(204, .delete, "/v1/me/alarms/\(Self.alarmB)", token: phone)
        let deletedAt = h.clock.nowMilliseconds()
        _ = try sweep(at: deletedAt + PersonalAlarmRules.tombstoneLifetimeMilliseconds)
        #expect(try Self.completionRows(h) == 2)
        let report = try sweep(at: deletedAt + PersonalAlarmRules.tombstoneLifetimeMilliseconds + 1)
        #expect(report.personalAlarmTombstones == 2, "the tombstone and its one completion")
        #expect(try Self.completionRows(h) == 1)
        phone = try await signIn()
        #expect(try await h.expect(404, .get, Self.path(Self.alarmB), token: phone).errorCode == "CA006")
    }

    @Test("account deletion erases the completions and nulls their change-log documents; the chain still verifies")
    func erasure() async throws {
        let (h, phone, _) = try await Self.setUp()
        let (bea, _) = try await h.register("bea@example.com", name: "Bea")
        try h.database.writeSync { db in _ = try db.run("UPDATE users SET tier = 'plus' WHERE email = 'bea@example.com'", []) }
        try await h.expect(201, .put, "/v1/me/alarms/\(Self.alarmA)", json: PersonalAlarmTests.body("Bea's"), token: bea)
        let t0 = h.clock.nowMilliseconds()
        try await h.expect(201, .post, Self.path(), json: Self.answer(t0, extra: #","note":"Secret pills taken""#), token: phone)
        try await h.expect(201, .post, Self.path(), json: Self.answer(t0, extra: #","note":"Bea keeps this""#), token: bea)
        let userID = try h.database.readSync { db in try PersonalAlarmTests.userID(h, db) }

        try await h.expect(204, .delete, "/v1/me", token: phone)
        let (rows, documents, secrets) = try h.database.readSync { db in
            (
                try db.queryOne("SELECT COUNT(*) AS n FROM personal_completions WHERE user_id = ?1", [.text(userID)])?.int("n"),
                try db.queryOne(
                    "SELECT COUNT(*) AS n FROM change_log WHERE kind = 'personal_completion' AND topic = ?1 AND document IS NOT NULL",
                    [.text("user:\(userID)")])?.int("n"),
                try db.queryOne("SELECT COUNT(*) AS n FROM change_log WHERE document LIKE '%Secret pills%'", [])?.int("n")
            )
        }
        #expect(rows == 0)
        #expect(documents == 0)
        #expect(secrets == 0)
        let kept = try await h.expect(200, .get, "/v1/me/completions", token: bea)
        #expect((kept.json["completions"] as? [[String: Any]])?.first?["note"] as? String == "Bea keeps this", "another account's stay")
        let report = try h.database.readSync { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == nil, "\(report)")
    }

    @Test("a completion is a change of kind personal_completion on user:<id>: the other device receives it live")
    func liveOnUserTopic() async throws {
        let (h, phone, tablet) = try await Self.setUp()
        let (server, port) = try RealtimeTests().serve(h)
        defer { server.shutdown() }
        let feed = try await blocking { () -> RealtimeTests.Feed in
            let feed = try RealtimeTests.Feed(port: port, token: tablet)
            guard feed.status == 101 else { throw RealtimeTests.Failure.unexpected("status \(feed.status)") }
            try feed.send(#"{"op":"subscribe","topic":"user"}"#)
            _ = try feed.next(RealtimeTests.type("snapshot", "user"))
            return feed
        }
        defer { feed.close() }
        let recorded = try await h.expect(
            201, .post, Self.path(), json: Self.answer(h.clock.nowMilliseconds(), extra: #","note":"done""#), token: phone)
        // (event, op, id, note) of the first personal_completion change the tablet receives.
        let change = try await blocking { () -> [String?] in
            while true {
                let message = try feed.next(RealtimeTests.type("change", "user"))
                let changes = message["changes"] as? [[String: Any]] ?? []
                if let row = changes.first(where: { $0["kind"] as? String == "personal_completion" }) {
                    return [
                        message["event"] as? String, row["op"] as? String, row["id"] as? String,
                        (row["doc"] as? [String: Any])?["note"] as? String,
                    ]
                }
            }
        }
        #expect(change == ["personal_completion", "added", recorded.json["id"] as? String, "done"])
    }

    @Test("the ?since= sync read carries completions in seq order beside alarm changes; a reset carries alarms only")
    func syncRead() async throws {
        let (h, phone, tablet) = try await Self.setUp()
        let start = try await h.expect(200, .get, "/v1/me/alarms", token: tablet).json["seq"] as? Int ?? -1
        let recorded = try await h.expect(
            201, .post, Self.path(), json: Self.answer(h.clock.nowMilliseconds(), extra: #","note":"done""#), token: phone)
        try await h.expect(200, .put, "/v1/me/alarms/\(Self.alarmB)", json: PersonalAlarmTests.body("Filter (new)"), token: phone)

        let sync = try await h.expect(200, .get, "/v1/me/alarms?since=\(start)", token: tablet)
        let changes = sync.json["changes"] as? [[String: Any]] ?? []
        #expect(changes.map { $0["kind"] as? String } == ["personal_completion", "personal_alarm"])
        #expect(changes.map { $0["op"] as? String } == ["added", "modified"])
        #expect(changes.first?["id"] as? String == recorded.json["id"] as? String)
        #expect((changes.first?["completion"] as? [String: Any])?["note"] as? String == "done")
        #expect(changes.first?["alarm"] == nil)
        #expect((changes.last?["alarm"] as? [String: Any])?["title"] as? String == "Filter (new)")
        #expect(changes.last?["completion"] == nil)

        // A cursor ahead of the log cannot be trusted: every live alarm, and no completion.
        let reset = try await h.expect(200, .get, "/v1/me/alarms?since=\(Int64.max / 2)", token: tablet)
        #expect(reset.json["reset"] as? Bool == true)
        let kinds = Set((reset.json["changes"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String })
        #expect(kinds == ["personal_alarm"])
    }
}
