import Domain
import Foundation
import Logging
import SQLite
import Storage
import Store
import Synchronization
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// The built `chronir-admin` run as a subprocess on the database of a server running in this process
/// (real transport on 127.0.0.1, real clock, the secret file in the data directory), with subscribed
/// WebSocket clients: the admin's commits reach them through the feed's `PRAGMA data_version` poll.
/// Every wait is bounded (`messageTimeout`, `adminTimeout`); nothing asserts a timing.
@Suite("chronir-admin on a live server — subprocess + WebSocket", .serialized)
struct AdminLiveTests {
    typealias Feed = RealtimeTests.Feed
    typealias Message = RealtimeTests.Message

    // MARK: Tests

    @Test("members remove: the removed member's group subscription is revoked, the others get the change, the removed one nothing after")
    func membersRemove() async throws {
        let live = try LiveServer()
        defer { live.stop() }
        let owner = try await live.register("owner")
        let victim = try await live.register("victim")
        let peer = try await live.register("peer")
        let group = try await live.createGroup(owner)
        let code = try await live.inviteCode(group, owner)
        try await live.join(code, victim)
        try await live.join(code, peer)
        let topic = "group:\(group)"
        let (ownerFeed, victimFeed, peerFeed) = try await blocking {
            (try live.subscribe(owner, topic), try live.subscribe(victim, topic, "user"), try live.subscribe(peer, topic))
        }
        defer { [ownerFeed, victimFeed, peerFeed].forEach { $0.close() } }

        let run = try await live.admin("members", "remove", group, victim.email, "--reason", "harassment", "--yes", "--json")
        #expect(run.status == 0, "\(run)")
        let printed = try #require(run.jsonObject, "--json output: \(run.stdout)")
        #expect(printed["user_id"] as? String == victim.id)
        #expect(printed["status"] as? String == "removed")

        let revoked = try await blocking { try victimFeed.waitFor(RealtimeTests.type("revoked", topic)) }
        #expect(revoked["topic"] as? String == topic)
        for feed in [ownerFeed, peerFeed] {
            let change = try await blocking { try feed.waitFor(Self.memberChange(topic, member: "\(group):\(victim.id)")) }
            #expect(Self.memberRow(change, "\(group):\(victim.id)").map(Self.isRemoval) == true, "\(change.object)")
        }

        // A later change to the group reaches the others but never the removed member. Once the owner
        // has it, the fan-out is done; a ping is then a barrier: the hub answers it after whatever it
        // queued for that socket — the peer's drain shows the change (so the barrier works), the
        // removed member's shows nothing on the topic.
        try await live.http(200, "PATCH", "/v1/groups/\(group)", #"{"name":"After the removal"}"#, owner)
        let change = try await blocking { try ownerFeed.waitFor(RealtimeTests.type("change", topic)) }
        #expect(Self.rows(change).contains { $0["kind"] as? String == "group" })
        let (peerSaw, victimSaw) = try await blocking { (try peerFeed.drain(), try victimFeed.drain()) }
        #expect(peerSaw.contains { $0["type"] as? String == "change" && $0["seq"] as? Int == change["seq"] as? Int })
        #expect(!victimSaw.contains { $0["topic"] as? String == topic }, "\(victimSaw.map(\.object))")
        try await live.http(404, "GET", "/v1/groups/\(group)", nil, victim)
    }

    @Test("users suspend: the user's sockets close with 4003 and the token stops working over HTTP")
    func usersSuspend() async throws {
        let live = try LiveServer()
        defer { live.stop() }
        let owner = try await live.register("owner")
        let sam = try await live.register("sam")
        let group = try await live.createGroup(owner)
        try await live.join(try await live.inviteCode(group, owner), sam)
        let topic = "group:\(group)"
        let (groupFeed, userFeed, ownerFeed) = try await blocking {
            (try live.subscribe(sam, topic), try live.subscribe(sam, "user"), try live.subscribe(owner, topic))
        }
        defer { [groupFeed, userFeed, ownerFeed].forEach { $0.close() } }
        try await live.http(200, "GET", "/v1/me", nil, sam)

        let run = try await live.admin("users", "suspend", sam.email, "--reason", "spam", "--yes", "--json")
        #expect(run.status == 0, "\(run)")
        #expect(run.jsonObject?["status"] as? String == "suspended", "\(run.stdout)")

        let codes = try await blocking { [try groupFeed.awaitClose(), try userFeed.awaitClose()] }
        #expect(codes == [CloseCodes.suspended, CloseCodes.suspended])
        let me = try await live.http(401, "GET", "/v1/me", nil, sam)
        #expect(me.errorCode == "CA012")
        // Suspension is not revealed to whoever knows the password: the same 401 as a wrong one.
        let login = try await live.http(401, "POST", "/v1/auth/login", #"{"email":"\#(sam.email)","password":"correct horse"}"#)
        #expect(login.errorCode == "CA021")
        // The owner's socket stays open and still answers.
        let pong = try await blocking { try ownerFeed.drain() }
        #expect(pong.last?["type"] as? String == "pong")
    }

    @Test("users sessions lists the live sessions; users revoke-sessions closes their sockets with 4003 (one, then all)")
    func usersRevokeSessions() async throws {
        let live = try LiveServer()
        defer { live.stop() }
        let sam = try await live.register("sam")
        let login = try await live.http(
            200, "POST", "/v1/auth/login", #"{"email":"\#(sam.email)","password":"correct horse"}"#)
        let phone = LiveServer.Account(token: try #require(login.json["token"] as? String), id: sam.id, email: sam.email)
        let (first, second) = try await blocking { (try live.subscribe(sam, "user"), try live.subscribe(phone, "user")) }
        defer { [first, second].forEach { $0.close() } }

        let listed = try await live.admin("users", "sessions", sam.email, "--json")
        #expect(listed.status == 0, "\(listed)")
        let sessions = try #require(listed.jsonValue as? [[String: Any]], "\(listed.stdout)")
        #expect(sessions.count == 2)
        #expect(sessions.allSatisfy { $0["client_ip"] as? String == "127.0.0.1" && $0["network"] as? String == "127.0.0.0/24" })
        let phoneID = try #require(
            try await live.http(200, "GET", "/v1/me/sessions", nil, phone).json["sessions"].flatMap { $0 as? [[String: Any]] }?
                .first { $0["current"] as? Bool == true }?["id"] as? String)
        #expect(sessions.contains { $0["id"] as? String == phoneID })

        // Without --yes and without a terminal: refused, nothing revoked.
        let refused = try await live.admin("users", "revoke-sessions", sam.email)
        #expect(refused.status != 0, "\(refused)")
        try await live.http(200, "GET", "/v1/me", nil, phone)

        let one = try await live.admin("users", "revoke-sessions", sam.email, "--session", phoneID, "--yes", "--json")
        #expect(one.status == 0, "\(one)")
        #expect(one.jsonObject?["revoked"] as? Int == 1, "\(one.stdout)")
        #expect(try await blocking { try second.awaitClose() } == CloseCodes.suspended)
        try await live.http(401, "GET", "/v1/me", nil, phone)
        try await live.http(200, "GET", "/v1/me", nil, sam)
        let unknown = try await live.admin("users", "revoke-sessions", sam.email, "--session", phoneID, "--yes")
        #expect(unknown.status == 1, "\(unknown)")
        #expect(unknown.stderr.contains("no live session"), "\(unknown)")

        let all = try await live.admin("users", "revoke-sessions", sam.email, "--reason", "lost phone", "--yes")
        #expect(all.status == 0, "\(all)")
        #expect(all.stdout.contains("revoked 1 session(s) of \(sam.email)"), "\(all)")
        #expect(try await blocking { try first.awaitClose() } == CloseCodes.suspended)
        try await live.http(401, "GET", "/v1/me", nil, sam)
        // The password stays: signing in again works.
        try await live.http(200, "POST", "/v1/auth/login", #"{"email":"\#(sam.email)","password":"correct horse"}"#)
    }

    @Test("groups delete revokes every member's subscription; users delete closes the user's sockets with 4003")
    func deletions() async throws {
        let live = try LiveServer()
        defer { live.stop() }
        let owner = try await live.register("owner")
        let member = try await live.register("member")
        let leaving = try await live.register("leaving")
        let group = try await live.createGroup(owner)
        let code = try await live.inviteCode(group, owner)
        try await live.join(code, member)
        try await live.join(code, leaving)
        let topic = "group:\(group)"
        let (ownerFeed, memberFeed, leavingFeed) = try await blocking {
            (try live.subscribe(owner, topic), try live.subscribe(member, topic), try live.subscribe(leaving, "user"))
        }
        defer { [ownerFeed, memberFeed, leavingFeed].forEach { $0.close() } }

        let deleted = try await live.admin("users", "delete", leaving.email, "--reason", "GDPR request", "--yes")
        #expect(deleted.status == 0, "\(deleted)")
        #expect(try await blocking { try leavingFeed.awaitClose() } == CloseCodes.suspended)
        try await live.http(401, "GET", "/v1/me", nil, leaving)
        let left = try await blocking { try ownerFeed.waitFor(Self.memberChange(topic, member: "\(group):\(leaving.id)")) }
        #expect(Self.memberRow(left, "\(group):\(leaving.id)").map(Self.isEnded) == true, "\(left.object)")

        let dropped = try await live.admin("groups", "delete", group, "--reason", "spam", "--yes")
        #expect(dropped.status == 0, "\(dropped)")
        for feed in [ownerFeed, memberFeed] {
            let revoked = try await blocking { try feed.waitFor(RealtimeTests.type("revoked", topic)) }
            #expect(revoked["topic"] as? String == topic)
        }
        try await live.http(404, "GET", "/v1/groups/\(group)", nil, owner)
    }

    @Test("invites rotate: the old code fails with CA031, the printed one works, subscribers see both changes")
    func invitesRotate() async throws {
        let live = try LiveServer()
        defer { live.stop() }
        let owner = try await live.register("owner")
        let ana = try await live.register("ana")
        let bob = try await live.register("bob")
        let group = try await live.createGroup(owner)
        let old = try await live.inviteCode(group, owner)
        let topic = "group:\(group)"
        let ownerFeed = try await blocking { try live.subscribe(owner, topic) }
        defer { ownerFeed.close() }

        let run = try await live.admin("invites", "rotate", group, "--reason", "leaked")
        #expect(run.status == 0, "\(run)")
        let new = try #require(
            run.stdout.split(separator: " ").dropFirst().first.map(String.init), "rotate printed: \(run.stdout)")
        #expect(run.stdout.hasPrefix("code: ") && new.count == 6 && new != old, "\(run.stdout)")
        let rotated = try await blocking { try ownerFeed.waitFor(Self.hasKind("invite_code", topic)) }
        #expect(rotated["event"] as? String == "invite_code_rotated")

        let refused = try await live.http(404, "POST", "/v1/join", #"{"code":"\#(old)"}"#, ana)
        #expect(refused.errorCode == "CA031")
        try await live.http(200, "POST", "/v1/join", #"{"code":"\#(new)"}"#, ana)
        let joined = try await blocking { try ownerFeed.waitFor(Self.memberChange(topic, member: "\(group):\(ana.id)")) }
        #expect(Self.memberRow(joined, "\(group):\(ana.id)")?["op"] as? String == "added")

        // --json prints the code for scripts; that rotation retires the code printed before.
        let again = try await live.admin("invites", "rotate", group, "--json")
        #expect(again.status == 0, "\(again)")
        let newest = try #require(again.jsonObject?["code"] as? String, "\(again.stdout)")
        #expect(again.jsonObject?["expires_at"] as? String != nil)
        #expect(try await live.http(404, "POST", "/v1/join", #"{"code":"\#(new)"}"#, bob).errorCode == "CA031")
        try await live.http(200, "POST", "/v1/join", #"{"code":"\#(newest)"}"#, bob)
    }

    @Test("db backup under concurrent HTTP writes: the copy opens, passes db check and audit verify, and is a consistent prefix")
    func backupUnderWrites() async throws {
        let live = try LiveServer()
        defer { live.stop() }
        let owner = try await live.register("owner")
        let group = try await live.createGroup(owner)
        let code = try await live.inviteCode(group, owner)
        var answerers: [LiveServer.Account] = []
        for i in 0..<Self.answererCount {
            let account = try await live.register("m\(i)")
            try await live.join(code, account)
            answerers.append(account)
        }
        let alarm = try await live.http(
            201, "POST", "/v1/groups/\(group)/alarms",
            #"""
            {"title":"Backups","schedule":{"type":"custom_days","interval_days":1,"start_date":"2026-01-01"},"times_of_day":[{"hour":10,\#
            "minute":0}],"timezone":"UTC","completion_rule":"all"}
            """#,
            owner)
        let alarmID = try #require(alarm.json["id"] as? String, "\(alarm.text)")

        // Writers through HTTP until the backups have finished: registrations, joins, renames, completions.
        let done = Flag()
        let rounds = Counter()
        let writers = (0..<Self.writerCount).map { writer in
            let mine = answerers.enumerated().filter { $0.offset % Self.writerCount == writer }.map(\.element)
            return Task {
                var i = 0
                while !done.isSet, i < Self.maxWriterRounds {
                    let joiner = try await live.register("w\(writer)-\(i)")
                    try await live.join(code, joiner)
                    try await live.http(200, "PATCH", "/v1/groups/\(group)", #"{"name":"Round \#(i)"}"#, owner)
                    if i < mine.count {
                        try await live.http(
                            201, "POST", "/v1/groups/\(group)/alarms/\(alarmID)/completions", #"{"status":"completed"}"#,
                            mine[i])
                    }
                    rounds.increment()
                    i += 1
                }
            }
        }
        // Let the writers get going (bounded), then take several copies while they write.
        _ = await eventually { rounds.value >= Self.writerCount }
        var copies: [(path: String, before: Int)] = []
        for k in 0..<Self.backupCount {
            let path = live.directory.file(named: "backup-\(k).sqlite")
            let before = try live.database.readSync { try Self.logHashes(on: $0) }.count
            let backup = try await live.admin("db", "backup", path, "--json")
            #expect(backup.status == 0, "\(backup)")
            #expect(backup.jsonObject?["integrity"] as? String == "ok", "\(backup.stdout)")
            copies.append((path, before))
        }
        done.set()
        for writer in writers { try await writer.value }
        #expect(rounds.value > Self.writerCount)
        let liveLog = try live.database.readSync { try Self.logHashes(on: $0) }

        for (copy, before) in copies {
            // The copy is a self-contained database the admin opens, checks and verifies (shared
            // options before the command work too).
            let check = try await live.admin(dataDir: nil, "--db", copy, "db", "check")
            #expect(check.status == 0, "\(check)")
            let verify = try await live.admin(dataDir: nil, "audit", "verify", "--db", copy, "--json")
            #expect(verify.status == 0, "\(verify)")
            #expect(verify.jsonObject?["first_broken_seq"] == nil, "\(verify.stdout)")

            // A consistent prefix: its change log is the first rows of the live one, byte for byte
            // (hash chain included), holding at least everything committed before the backup began;
            // and every row of its tables has its change-log row and vice versa.
            let copied = try SQLiteDatabase(path: copy, options: SQLiteConfiguration(readerCount: 1))
            defer { copied.close() }
            let copyLog = try copied.readSync { try Self.logHashes(on: $0) }
            #expect(copyLog.count >= before && copyLog.count <= liveLog.count, "\(before) ≤ \(copyLog.count) ≤ \(liveLog.count)")
            #expect(Array(liveLog.prefix(copyLog.count)) == copyLog)
            let mismatches = try copied.readSync { try Self.prefixMismatches(on: $0) }
            #expect(mismatches.isEmpty, "\(mismatches)")
        }
    }

    @Test("db backup copies the attachment files the copy's live rows name, byte-equal; --no-attachments skips them")
    func backupAttachments() async throws {
        let live = try LiveServer()
        defer { live.stop() }
        let owner = try await live.register("owner")
        let group = try await live.createGroup(owner)
        let alarm = try await live.http(
            201, "POST", "/v1/groups/\(group)/alarms",
            #"{"title":"Filter",\#(SharedAlarmFixture.dailyTen)}"#,
            owner)
        let collection = "/v1/groups/\(group)/alarms/\(try #require(alarm.json["id"] as? String))/attachments"
        let port = live.port
        let token = owner.token
        func upload(_ bytes: [UInt8]) async throws -> [String: Any] {
            let reply = try await TestSupport.blocking {
                let client = try LoopbackClient(port: port, timeout: LiveServer.httpTimeout)
                defer { client.close() }
                return try client.request("POST", collection, headers: [("Authorization", "Bearer \(token)")], body: bytes)
            }
            #expect(reply.status == 201, "\(String(decoding: reply.body, as: UTF8.self))")
            return (try JSONSerialization.jsonObject(with: Data(reply.body))) as? [String: Any] ?? [:]
        }
        let kept = try await upload(SampleMedia.png(width: 60, height: 40))
        let deleted = try await upload(SampleMedia.pdf())
        try await live.http(204, "DELETE", "\(collection)/\(try #require(deleted["id"] as? String))", nil, owner)

        let path = live.directory.file(named: "backup.sqlite")
        let backup = try await live.admin("db", "backup", path, "--json")
        #expect(backup.status == 0, "\(backup)")
        #expect(backup.jsonObject?["attachments"] as? String == path + ".attachments")
        #expect(backup.jsonObject?["attachment_files"] as? Int == 2, "\(backup.stdout)")
        // The live one's file and thumbnail, byte-equal to the store's; not the deleted one's.
        let files = AttachmentFiles(dataDirectory: live.directory.path)
        let thumbnail = try #require((kept["thumbnail"] as? [String: Any])?["sha256"] as? String)
        for name in [try #require(kept["sha256"] as? String), thumbnail] {
            let copied = try Data(contentsOf: URL(fileURLWithPath: "\(path).attachments/\(Attachment.relativePath(of: name))"))
            #expect(Array(copied) == (try files.read(name, count: Int(files.size(name) ?? 0))))
        }
        #expect(
            !FileManager.default.fileExists(
                atPath: "\(path).attachments/\(Attachment.relativePath(of: deleted["sha256"] as? String ?? ""))"))

        let bare = live.directory.file(named: "bare.sqlite")
        let skipped = try await live.admin("db", "backup", bare, "--no-attachments", "--json")
        #expect(skipped.status == 0 && skipped.jsonObject?["attachments"] == nil, "\(skipped)")
        #expect(!FileManager.default.fileExists(atPath: bare + ".attachments"))
        // A directory that exists already is refused.
        let refused = live.directory.file(named: "again.sqlite")
        let again = try await live.admin("db", "backup", refused, "--attachments", path + ".attachments")
        #expect(again.status != 0 && again.stderr.contains("already exists"), "\(again)")
        #expect(!FileManager.default.fileExists(atPath: refused))
    }

    @Test("failures exit non-zero with a clear message; refusals without --yes; --json everywhere parses")
    func failuresAndJSON() async throws {
        let live = try LiveServer()
        defer { live.stop() }
        let owner = try await live.register("owner")
        let group = try await live.createGroup(owner)
        let unknownGroup = "00000000-0000-4000-8000-000000000000"

        let cases: [([String], String)] = [
            (["members", "remove", unknownGroup, owner.email, "--reason", "x", "--yes"], "no group \(unknownGroup)"),
            (["members", "remove", group, "nobody@example.com", "--reason", "x", "--yes"], "no user nobody@example.com"),
            (["members", "remove", group, owner.email, "--reason", "x", "--yes"], "the owner"),
            (["users", "suspend", "nobody@example.com", "--reason", "x", "--yes"], "no user nobody@example.com"),
            (["invites", "rotate", unknownGroup], "no group \(unknownGroup)"),
            (["groups", "show", unknownGroup], "no group \(unknownGroup)"),
            (["members", "role", group, owner.email, "owner"], "role must be admin or member"),
            (["users", "suspend", owner.email, "--reason", "x"], "refusing without --yes"),
        ]
        for (arguments, message) in cases {
            let run = try await live.admin(arguments)
            #expect(run.status == 1, "\(arguments): \(run)")
            #expect(run.stderr.contains(message), "\(arguments): stderr \(run.stderr)")
            #expect(!run.stderr.contains("DomainError") && !run.stderr.contains("notFound("), "\(run.stderr)")
        }
        // A test notification is queued for the account (the server sends it to its devices).
        let queued = try await live.admin("notifications", "test", owner.email, "--json")
        #expect(queued.status == 0 && (queued.jsonObject?["key"] as? String)?.hasPrefix("test:") == true, "\(queued)")
        // Any state: the live server's dispatcher may already have expanded it.
        let listed = try await live.admin("notifications", "list", "--json")
        #expect(listed.status == 0 && listed.stdout.contains(#""type":"test""#), "\(listed)")
        let usage = try await live.admin("members", "remove", group)
        #expect(usage.status == 64, "\(usage)")
        let missing = try await live.admin(dataDir: live.directory.file(named: "nowhere"), "stats")
        #expect(missing.status == 1 && missing.stderr.contains("no database at"), "\(missing)")
        // The refused suspension changed nothing.
        try await live.http(200, "GET", "/v1/me", nil, owner)

        for arguments in [
            ["users", "list"], ["users", "show", owner.email], ["groups", "list"], ["groups", "show", group],
            ["members", "list", group], ["invitations", "list"], ["stats"], ["db", "status"], ["db", "check"],
            ["audit", "verify"], ["notifications", "list"], ["notifications", "stats"], ["notifications", "retry"],
        ] {
            let run = try await live.admin(arguments + ["--json"])
            #expect(run.status == 0, "\(arguments): \(run)")
            #expect(run.jsonValue != nil, "\(arguments): not JSON: \(run.stdout)")
        }
        // Compaction on the live server: everything but the newest batch goes behind a checkpoint, the
        // chain still verifies, and the server keeps answering.
        let compact = try await live.admin("db", "compact", "--window-days", "0", "--keep", "0", "--json")
        #expect(compact.status == 0, "\(compact)")
        #expect((compact.jsonObject?["rows_removed"] as? Int ?? 0) > 0, "\(compact)")
        // What stays: the newest batch (kept whole) and the checkpoint row.
        #expect((compact.jsonObject?["rows_after"] as? Int ?? 0) <= (compact.jsonObject?["rows_before"] as? Int ?? 0))
        let verified = try await live.admin("audit", "verify", "--json")
        #expect(verified.status == 0 && verified.jsonObject?["compacted_through_seq"] != nil, "\(verified)")
        try await live.http(200, "PATCH", "/v1/me", #"{"display_name":"After compaction"}"#, owner)
        // Commands that change something print JSON too, and `users create` shows the generated
        // password there (its only appearance), which then signs in.
        let created = try await live.admin("users", "create", "ops@example.com", "--tier", "premium", "--json")
        let password = try #require(created.jsonObject?["one_time_password"] as? String, "\(created)")
        #expect((created.jsonObject?["user"] as? [String: Any])?["email"] as? String == "ops@example.com")
        try await live.http(200, "POST", "/v1/auth/login", #"{"email":"ops@example.com","password":"\#(password)"}"#)
        for arguments in [
            ["invites", "unlock", group], ["invites", "disable", group], ["groups", "delete", group, "--reason", "x", "--dry-run"],
            ["groups", "delete", group, "--reason", "x", "--yes"], ["users", "delete", "ops@example.com", "--reason", "x", "--yes"],
        ] {
            let run = try await live.admin(arguments + ["--json"])
            #expect(run.status == 0 && run.jsonObject != nil, "\(arguments): \(run)")
        }
        let trail = try await live.admin("audit", "--group", group, "--json")
        #expect(trail.status == 0, "\(trail)")
        let lines = trail.stdout.split(separator: "\n")
        #expect(!lines.isEmpty)
        #expect(lines.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) is [String: Any] })
    }

    // MARK: Consistency of a copy

    /// Bounds on every wait. Generous because the full suite runs ~500 tests in this process at once
    /// and the in-process server competes with them for the cooperative pool's threads; a healthy run
    /// needs well under a second per wait.
    static let messageTimeout: Duration = LoopbackClient.hangBound

    static let answererCount = 6
    static let writerCount = 3
    static let backupCount = 3
    /// Bounds the writer loop should the backup hang (it is stopped as soon as the backup exits).
    static let maxWriterRounds = 500

    static func logHashes(on db: any SQLConnection) throws -> [String] {
        try db.query("SELECT seq, hex(hash) AS h FROM change_log ORDER BY seq").map {
            "\($0.int("seq") ?? -1):\($0.string("h") ?? "")"
        }
    }

    /// Rows of the copy's tables without their change-log row, and counts that disagree with the log.
    static func prefixMismatches(on db: any SQLConnection) throws -> [String] {
        func count(_ sql: String) throws -> Int64 {
            guard case .integer(let n) = try db.scalar(sql) else { return -1 }
            return n
        }
        var problems: [String] = []
        let checks: [(String, String)] = [
            (
                "users without user_registered",
                """
                SELECT count(*) FROM users u WHERE NOT EXISTS (SELECT 1 FROM change_log c WHERE c.event = 'user_registered' AND \
                c.entity_id = u.id)
                """
            ),
            (
                "member rows without a member change",
                """
                SELECT count(*) FROM group_members m WHERE NOT EXISTS (SELECT 1 FROM change_log c WHERE c.kind = 'member' AND c.entity_id \
                = m.group_id || ':' || m.user_id)
                """
            ),
            (
                "completions without their change",
                """
                SELECT count(*) FROM shared_completions s WHERE NOT EXISTS (SELECT 1 FROM change_log c WHERE c.kind = 'shared_completion' \
                AND c.entity_id = s.id)
                """
            ),
            (
                "member changes without a member row",
                """
                SELECT count(*) FROM (SELECT DISTINCT entity_id FROM change_log WHERE kind = 'member') c WHERE NOT EXISTS (SELECT 1 FROM \
                group_members m WHERE m.group_id || ':' || m.user_id = c.entity_id)
                """
            ),
            (
                "completion changes without a completion",
                """
                SELECT count(*) FROM (SELECT DISTINCT entity_id FROM change_log WHERE kind = 'shared_completion' AND op = 'added') c \
                WHERE NOT EXISTS (SELECT 1 FROM shared_completions s WHERE s.id = c.entity_id)
                """
            ),
            (
                "registrations without a user",
                """
                SELECT count(*) FROM change_log c WHERE c.event = 'user_registered' AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = \
                c.entity_id)
                """
            ),
            (
                "groups whose member_count disagrees with their active members",
                """
                SELECT count(*) FROM groups g WHERE g.member_count != (SELECT count(*) FROM group_members m WHERE m.group_id = g.id AND \
                m.status = 'active')
                """
            ),
        ]
        for (what, sql) in checks {
            let n = try count(sql)
            if n != 0 { problems.append("\(what): \(n)") }
        }
        // The group document in the log's last group row is the group row itself (same version).
        let lastGroupDoc = try db.query(
            "SELECT document FROM change_log WHERE kind = 'group' AND topic LIKE 'group:%' ORDER BY seq DESC LIMIT 1")
        if let text = lastGroupDoc.first?.string("document"),
            let doc = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
            let id = doc["id"] as? String
        {
            let version = try count("SELECT version FROM groups WHERE id = '\(id)'")
            if Int64(doc["version"] as? Int ?? -2) != version {
                problems.append("group \(id): table version \(version), last logged \(doc["version"] ?? "nil")")
            }
        } else {
            problems.append("no group document in the copy's change log")
        }
        return problems
    }

    // MARK: Message predicates

    static func rows(_ m: Message) -> [[String: Any]] { m["changes"] as? [[String: Any]] ?? [] }
    static func rows(_ m: [String: Any]) -> [[String: Any]] { m["changes"] as? [[String: Any]] ?? [] }

    static func memberRow(_ m: Message, _ entity: String) -> [String: Any]? {
        rows(m).first { $0["kind"] as? String == "member" && $0["id"] as? String == entity }
    }

    /// A member row that ends the membership: `op: removed` (typed removal) or the document's status.
    static func isRemoval(_ row: [String: Any]) -> Bool {
        row["op"] as? String == "removed" || (row["doc"] as? [String: Any])?["status"] as? String == "removed"
    }

    /// A member row that ends the membership for any reason (removed, left, account deleted).
    static func isEnded(_ row: [String: Any]) -> Bool {
        row["op"] as? String == "removed" || ((row["doc"] as? [String: Any])?["status"] as? String).map { $0 != "active" } == true
    }

    static func memberChange(_ topic: String, member entity: String) -> ([String: Any]) -> Bool {
        { m in
            m["type"] as? String == "change" && m["topic"] as? String == topic
                && rows(m).contains { $0["kind"] as? String == "member" && $0["id"] as? String == entity }
        }
    }

    static func hasKind(_ kind: String, _ topic: String) -> ([String: Any]) -> Bool {
        { m in
            m["type"] as? String == "change" && m["topic"] as? String == topic
                && rows(m).contains { $0["kind"] as? String == kind }
        }
    }

    /// The close code the feed documents for a suspended account.
    enum CloseCodes { static let suspended: UInt16 = 4003 }
}

// MARK: - Harness

extension AdminLiveTests {
    /// `blocking` whose failure names the test line that waited (a timeout alone says little).
    func blocking<T: Sendable>(line: Int = #line, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        do {
            return try await TestSupport.blocking(body)
        } catch {
            throw LiveServer.Failure.unexpected("line \(line): \(error)")
        }
    }

    /// A count shared between tasks.
    final class Counter: Sendable {
        private let count = Mutex(0)
        var value: Int { count.withLock { $0 } }
        func increment() { count.withLock { $0 += 1 } }
    }

    /// A one-way flag shared between tasks.
    final class Flag: Sendable {
        private let value = Mutex(false)
        var isSet: Bool { value.withLock { $0 } }
        func set() { value.withLock { $0 = true } }
    }
}

extension RealtimeTests.Feed {
    /// The next text message matching `predicate` (others are skipped); throws on close or after
    /// `AdminLiveTests.messageTimeout` without a frame.
    func waitFor(_ predicate: ([String: Any]) -> Bool) throws -> RealtimeTests.Message {
        while true {
            let frame = try ws.readFrame(timeout: AdminLiveTests.messageTimeout)
            if frame.opcode == .close { throw RealtimeTests.Failure.closed(frame.closeCode) }
            guard frame.opcode == .text,
                let object = (try? JSONSerialization.jsonObject(with: Data(frame.payload))) as? [String: Any]
            else { continue }
            if predicate(object) { return RealtimeTests.Message(object: object) }
        }
    }

    /// The close code the server sends (messages before it are skipped).
    func awaitClose() throws -> UInt16? {
        while true {
            let frame = try ws.readFrame(timeout: AdminLiveTests.messageTimeout)
            if frame.opcode == .close { return frame.closeCode }
        }
    }

    /// Sends `ping` and returns every message up to and including its `pong`.
    func drain() throws -> [RealtimeTests.Message] {
        try send(#"{"op":"ping"}"#)
        var seen: [RealtimeTests.Message] = []
        _ = try waitFor { m in
            seen.append(RealtimeTests.Message(object: m))
            return m["type"] as? String == "pong"
        }
        return seen
    }
}

extension AdminLiveTests {
    /// chronir-server's application on the real transport, real clock and a temporary data directory
    /// (database and `server.secret`, which `chronir-admin invites rotate` reads too).
    final class LiveServer: Sendable {
        struct Account: Sendable {
            var token: String
            var id: String
            var email: String
        }

        /// What one `chronir-admin` run did.
        struct AdminRun: Sendable, CustomStringConvertible {
            var status: Int32
            var stdout: String
            var stderr: String
            var jsonValue: Any? { try? JSONSerialization.jsonObject(with: Data(stdout.utf8)) }
            var jsonObject: [String: Any]? { jsonValue as? [String: Any] }
            var description: String { "exit \(status), stdout: \(stdout), stderr: \(stderr)" }
        }

        enum Failure: Error { case unexpected(String) }

        let directory = TemporaryDirectory(prefix: "admin-live")
        let database: any SQLDatabase
        let app: Application
        let server: HTTPServer
        let port: Int

        init() throws {
            var quiet = Logger(label: "admin-live")
            quiet.logLevel = .critical
            var config = AppConfiguration(
                dataDirectory: directory.path, publicDirectory: nil, defaultTier: .premium, workerThreads: 2,
                passwordHashing: .fast, maxMembersPerGroup: 1000)
            // The backup test registers many accounts from 127.0.0.1 within the hour, and its owner
            // renames the group from three writers for as long as the backups take (on a loaded
            // machine, past the standard write budget's burst: 429s that tested nothing).
            config.registrationLimits = RegistrationLimits(perNetworkPerHour: 1_000_000, totalPerHour: 1_000_000)
            config.writeBudget = .unlimited
            database = try Bootstrap.openDatabase(config: config, logger: quiet, nowMilliseconds: SystemClock().nowMilliseconds())
            let services = Services(
                config: config, database: database, clock: SystemClock(), workers: WorkerPool(width: 2), logger: quiet,
                secret: try ServerSecret.loadOrCreate(path: config.secretPath))
            app = Application(services: services, accessLog: nil)
            var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
            configuration.loopCount = 2
            server = HTTPServer(configuration: configuration, responder: app)
            port = try server.start()
        }

        func stop() {
            server.shutdown()
            app.realtime.stop()
            database.close()
            withExtendedLifetime(directory) {}
        }

        // MARK: HTTP over loopback

        struct HTTPReply: Sendable {
            var status: Int
            var body: [UInt8]
            var text: String { String(decoding: body, as: UTF8.self) }
            var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
            var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
        }

        /// Bounds one HTTP exchange.
        static let httpTimeout: Duration = AdminLiveTests.messageTimeout

        /// One request on its own connection; throws unless the answer has `status`.
        @discardableResult
        func http(_ status: Int, _ method: String, _ path: String, _ body: String? = nil, _ account: Account? = nil)
            async throws -> HTTPReply
        {
            let port = port
            let reply = try await TestSupport.blocking {
                var headers: [(String, String)] = []
                if body != nil { headers.append(("Content-Type", "application/json")) }
                if let account { headers.append(("Authorization", "Bearer \(account.token)")) }
                do {
                    let client = try LoopbackClient(port: port, timeout: LiveServer.httpTimeout)
                    defer { client.close() }
                    let response = try client.request(method, path, headers: headers, body: Array((body ?? "").utf8))
                    return HTTPReply(status: response.status, body: response.body)
                } catch {
                    throw Failure.unexpected("\(method) \(path): \(error)")
                }
            }
            guard reply.status == status else {
                throw Failure.unexpected("\(method) \(path): expected \(status), got \(reply.status) \(reply.text)")
            }
            return reply
        }

        func register(_ name: String) async throws -> Account {
            let email = "\(name)@example.com"
            let reply = try await http(
                201, "POST", "/v1/auth/register",
                #"{"email":"\#(email)","password":"correct horse","display_name":"\#(name)"}"#)
            guard let token = reply.json["token"] as? String, let id = (reply.json["user"] as? [String: Any])?["id"] as? String
            else { throw Failure.unexpected(reply.text) }
            return Account(token: token, id: id, email: email)
        }

        func createGroup(_ owner: Account) async throws -> String {
            let reply = try await http(201, "POST", "/v1/groups", #"{"name":"Household"}"#, owner)
            guard let id = (reply.json["group"] as? [String: Any])?["id"] as? String else { throw Failure.unexpected(reply.text) }
            return id
        }

        func inviteCode(_ group: String, _ account: Account) async throws -> String {
            let reply = try await http(201, "POST", "/v1/groups/\(group)/invite-code", nil, account)
            guard let code = reply.json["code"] as? String else { throw Failure.unexpected(reply.text) }
            return code
        }

        func join(_ code: String, _ account: Account) async throws {
            try await http(200, "POST", "/v1/join", #"{"code":"\#(code)"}"#, account)
        }

        // MARK: WebSocket

        /// A feed authenticated as `account`, subscribed to `topics` (each snapshot read). Blocking.
        func subscribe(_ account: Account, _ topics: String...) throws -> RealtimeTests.Feed {
            let feed = try RealtimeTests.Feed(port: port, token: account.token)
            guard feed.status == 101 else { throw Failure.unexpected("upgrade status \(feed.status)") }
            for topic in topics {
                try feed.send(#"{"op":"subscribe","topic":"\#(topic)"}"#)
                _ = try feed.waitFor(RealtimeTests.type("snapshot", topic))
            }
            return feed
        }

        // MARK: chronir-admin

        /// Runs the built `chronir-admin` with `arguments` and `--data-dir` of this server appended.
        func admin(_ arguments: String...) async throws -> AdminRun {
            try await admin(arguments)
        }

        func admin(_ arguments: [String]) async throws -> AdminRun {
            try await Self.runAdmin(arguments + ["--data-dir", directory.path])
        }

        /// Runs it with `--data-dir DIR` appended when `dataDir` is given, else exactly `arguments`.
        func admin(dataDir: String?, _ arguments: String...) async throws -> AdminRun {
            try await Self.runAdmin(arguments + (dataDir.map { ["--data-dir", $0] } ?? []))
        }

        /// Bounds one admin run (it normally takes well under a second).
        static let adminTimeout: Duration = .seconds(60)

        /// The `chronir-admin` next to this test binary (`.build/<triple>/debug/`), or `$CHRONIR_ADMIN_BIN`.
        static let adminBinary: String? = {
            if let path = ProcessInfo.processInfo.environment["CHRONIR_ADMIN_BIN"] { return path }
            let executable =
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
                ?? CommandLine.arguments[0]
            var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
            for _ in 0..<4 {
                let candidate = directory.appendingPathComponent("chronir-admin").path
                if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
                directory = directory.deletingLastPathComponent()
            }
            return nil
        }()

        /// Runs the binary with stdin from /dev/null (no terminal: confirmations refuse), its output
        /// captured; kills it past `adminTimeout`.
        static func runAdmin(_ arguments: [String]) async throws -> AdminRun {
            guard let binary = adminBinary else {
                throw Failure.unexpected("chronir-admin not found next to the test binary: run `swift build --build-tests` first")
            }
            return try await TestSupport.blocking {
                // posix_spawn through ChildProcess, not Foundation's `Process`: its spawn reads
                // /proc/self/fd past its buffer when the test process holds many descriptors (ASan:
                // heap-buffer-overflow in findMaximumOpenFromProcSelfFD).
                let child = try ChildProcess(launching: binary, arguments, removing: ["CHRONIR_DB", "CHRONIR_DATA_DIR"])
                let stdout = try child.readToEnd(timeout: adminTimeout)
                let status = try child.exitStatus(timeout: adminTimeout)
                return AdminRun(status: Int32(status), stdout: stdout, stderr: child.standardError)
            }
        }
    }
}
