import Domain
import Hashing
import Storage
import TestSupport
import Testing
import Wire

@testable import App

/// `Services.writeAsUser` (`PATCH /v1/me`): a token this process has seen is checked inside the write's
/// own transaction instead of by a read before it — and answers exactly as a read first would.
@Suite("Session read inside the write — answers as a read before it, keeps nothing of a refused write")
struct SessionInWriteTests {
    /// What `PATCH /v1/me` left: the user's display name and version, and the change-log rows so far.
    func stored(_ h: AppHarness, _ userID: String) throws -> (name: String?, version: Int64?, changes: Int64?) {
        try h.database.readSync { db in
            let user = try db.queryOne("SELECT display_name, version FROM users WHERE id = ?1", [.text(userID)])
            guard case .integer(let changes) = try db.scalar("SELECT COUNT(*) FROM change_log") else { return (nil, nil, nil) }
            return (user?.string("display_name"), user?.int("version"), changes)
        }
    }

    func rename(_ h: AppHarness, _ token: String, to name: String, version: Int? = nil) async -> Reply {
        let json = version.map { #"{"display_name":"\#(name)","version":\#($0)}"# } ?? #"{"display_name":"\#(name)"}"#
        return await h.send(.patch, "/v1/me", json: json, token: token)
    }

    func tokenHash(_ token: String) throws -> [UInt8] { try #require(TokenHashing.hash(token: token)) }

    @Test("a token seen once is remembered with its account, and its next writes are answered as before")
    func seenTokenWrites() async throws {
        let h = try AppHarness()
        let (token, id) = try await h.register("ana@example.com")
        let owners = h.app.services.sessionOwners
        #expect(owners.owner(of: try tokenHash(token)) == nil, "registering reads no session")
        #expect(await rename(h, token, to: "Ana One").status == 200)
        #expect(owners.owner(of: try tokenHash(token)) == id)
        let reply = await rename(h, token, to: "Ana Two")
        #expect(reply.status == 200, "\(reply.text)")
        #expect((reply.json["display_name"] as? String) == "Ana Two")
        #expect(try stored(h, id).name == "Ana Two")
        // A token never seen on this process takes the read first, then is remembered.
        let second = try #require((await h.login("ana@example.com")).json["token"] as? String)
        #expect(await rename(h, second, to: "Ana Three").status == 200)
        #expect(owners.owner(of: try tokenHash(second)) == id)
    }

    @Test(
        """
        a seen session revoked behind this process's back (another instance, the admin tool): the write is refused 401, \
        nothing of it is kept, and the token is forgotten
        """
    )
    func revokedElsewhere() async throws {
        let h = try AppHarness()
        let (token, id) = try await h.register("ana@example.com")
        #expect(await rename(h, token, to: "Kept").status == 200)
        let before = try stored(h, id)
        let hash = try tokenHash(token)
        let now = h.clock.nowMilliseconds()
        try await h.database.write { db in
            try db.run("UPDATE sessions SET revoked_ms = ?2 WHERE token_hash = ?1", [.blob(hash), .integer(now)])
        }
        let reply = await rename(h, token, to: "Lost")
        #expect(reply.status == 401, "\(reply.text)")
        #expect(reply.errorName == "AUTH_REQUIRED")
        #expect(try stored(h, id) == before, "the UPDATE and its change-log row were undone")
        #expect(h.app.services.sessionOwners.owner(of: hash) == nil)
        #expect(await rename(h, token, to: "Lost").status == 401, "and stays refused, now by the read first")
    }

    @Test(
        """
        a device registered and removed, a group's notifications switched, with a seen session: the device carries \
        that session; revoked elsewhere, each is refused 401 inside its write (a malformed body too), nothing changed
        """
    )
    func devicesRevokedElsewhere() async throws {
        let h = try AppHarness(defaultTier: .premium)
        let (token, id) = try await h.register("ana@example.com")
        #expect(await rename(h, token, to: "Seen").status == 200)
        func body(_ byte: String) -> String { #"{"platform":"ios","provider":"apns","token":"\#(String(repeating: byte, count: 32))"}"# }
        try await h.expect(201, .put, "/v1/me/devices/phone", json: body("ab"), token: token)
        try await h.expect(201, .put, "/v1/me/devices/pad", json: body("cd"), token: token)
        try await h.expect(204, .delete, "/v1/me/devices/pad", token: token)
        try await h.expect(404, .delete, "/v1/me/devices/pad", token: token)
        let hash = try tokenHash(token)
        let devices = { () throws -> [String] in
            try h.database.readSync { db in
                try db.query(
                    "SELECT device_id, session_hash FROM devices WHERE user_id = ?1 ORDER BY device_id", [.text(id)]
                ).map { "\($0.string("device_id") ?? "") \($0.blob("session_hash") == hash)" }
            }
        }
        #expect(try devices() == ["phone true"], "the device remembers the session that registered it")
        let groupID = try await h.createGroup(token: token)
        let changes = { () throws -> SQLValue in try h.database.readSync { try $0.scalar("SELECT COUNT(*) FROM change_log") } }
        let before = try changes()
        let now = h.clock.nowMilliseconds()
        try await h.database.write { db in
            try db.run("UPDATE sessions SET revoked_ms = ?2 WHERE token_hash = ?1", [.blob(hash), .integer(now)])
        }
        let attempts: [(HTTPMethod, String, String?)] = [
            (.put, "/v1/me/devices/tablet", body("ef")),
            (.put, "/v1/me/devices/tablet", #"{"platform":"ios"}"#),
            (.delete, "/v1/me/devices/phone", nil),
            (.patch, "/v1/groups/\(groupID)/membership", #"{"notification_enabled":false}"#),
        ]
        for (method, path, json) in attempts {
            // Remembered again before each, so every attempt is checked inside its write, not by a read first.
            h.app.services.sessionOwners.record(hash, owner: id)
            let reply = await h.send(method, path, json: json, token: token)
            #expect(reply.status == 401 && reply.errorName == "AUTH_REQUIRED", "\(method) \(path): \(reply.status) \(reply.text)")
        }
        #expect(try devices() == ["phone true"])
        #expect(try changes() == before, "no member_settings_changed")
    }

    @Test("a seen session whose account was suspended without its sessions revoked: 403, nothing kept")
    func suspendedElsewhere() async throws {
        let h = try AppHarness()
        let (token, id) = try await h.register("ana@example.com")
        #expect(await rename(h, token, to: "Kept").status == 200)
        let before = try stored(h, id)
        try await h.database.write { db in try db.run("UPDATE users SET status = 'suspended' WHERE id = ?1", [.text(id)]) }
        let reply = await rename(h, token, to: "Lost")
        #expect(reply.status == 403, "\(reply.text)")
        #expect(reply.errorName == "ACCOUNT_SUSPENDED")
        #expect(try stored(h, id) == before)
    }

    @Test(
        """
        401 comes first, as from a read before the write: a revoked seen token with a malformed body or a stale version \
        gets 401, not 422 or 409; a valid one gets 422 and 409
        """
    )
    func refusalComesFirst() async throws {
        let h = try AppHarness()
        let (token, anaID) = try await h.register("ana@example.com")
        let (other, _) = try await h.register("bo@example.com")
        #expect(await rename(h, token, to: "Seen").status == 200)
        #expect(await rename(h, other, to: "Seen").status == 200)
        #expect(await h.send(.patch, "/v1/me", json: #"{"display_name":3}"#, token: other).status == 422)
        #expect(await rename(h, other, to: "Stale", version: 1).status == 409)
        let hash = try tokenHash(token)
        let now = h.clock.nowMilliseconds()
        try await h.database.write { db in
            try db.run("UPDATE sessions SET revoked_ms = ?2 WHERE token_hash = ?1", [.blob(hash), .integer(now)])
        }
        #expect(await h.send(.patch, "/v1/me", json: #"{"display_name":3}"#, token: token).status == 401)
        // A valid token remembered with another account (never so, but the write checks it): 401, whatever
        // the write said (here 409, Ana's version is not 1), and Ana's row untouched.
        h.app.services.sessionOwners.record(try tokenHash(other), owner: anaID)
        let crossed = await rename(h, other, to: "Crossed", version: 1)
        #expect(crossed.status == 401, "\(crossed.text)")
        #expect(try stored(h, anaID).name == "Seen")
    }

    @Test("answering a shared alarm with a seen session revoked elsewhere: 401, no completion stored, the alarm unchanged")
    func completionRevokedElsewhere() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let member = f.members[0]
        let alarmID = try #require(try await f.createAlarm(assignees: [member])["id"] as? String)
        let path = "\(f.g)/alarms/\(alarmID)/completions"
        // Seen: a first write by this token (the read first), withdrawn again by a second (inside the write).
        let answered = try await f.h.expect(201, .post, path, json: #"{"status":"completed"}"#, token: member.token)
        let completionID = try #require(answered.object("completion")?["id"] as? String)
        try await f.h.expect(200, .delete, "\(path)/\(completionID)", token: member.token)
        let hash = try tokenHash(member.token)
        #expect(f.h.app.services.sessionOwners.owner(of: hash) == member.id)
        func completions() throws -> Int64? {
            try f.h.database.readSync { db in
                guard case .integer(let n) = try db.scalar("SELECT COUNT(*) FROM shared_completions WHERE status = 'completed'") else {
                    return nil
                }
                return n
            }
        }
        let before = try completions()
        let now = f.h.clock.nowMilliseconds()
        try await f.h.database.write { db in
            try db.run("UPDATE sessions SET revoked_ms = ?2 WHERE token_hash = ?1", [.blob(hash), .integer(now)])
        }
        let refused = await f.h.send(.post, path, json: #"{"status":"completed"}"#, token: member.token)
        #expect(refused.status == 401, "\(refused.text)")
        #expect(try completions() == before)
    }

    @Test(
        """
        the group's writes (a shared alarm created, edited, deleted; the group renamed; the invite code disabled) with a \
        seen session revoked elsewhere: 401 each, the change log and the rows as they were; a malformed body gets 401 too
        """
    )
    func groupWritesRevokedElsewhere() async throws {
        let f = try await SharedAlarmFixture.make(members: 1)
        let alarmID = try #require(try await f.createAlarm()["id"] as? String)
        try await f.h.expect(200, .patch, "\(f.g)/alarms/\(alarmID)", json: #"{"title":"Seen"}"#, token: f.owner.token)
        let hash = try tokenHash(f.owner.token)
        #expect(f.h.app.services.sessionOwners.owner(of: hash) == f.owner.id)
        func state() throws -> [String?] {
            try f.h.database.readSync { db in
                [
                    try db.scalar("SELECT COUNT(*) FROM change_log"),
                    try db.scalar("SELECT COUNT(*) FROM shared_alarms WHERE deleted_ms IS NULL"),
                    try db.scalar("SELECT version FROM shared_alarms WHERE id = ?1", [.text(alarmID)]),
                    try db.scalar("SELECT name FROM groups WHERE id = ?1", [.text(f.groupID)]),
                    try db.scalar("SELECT COUNT(*) FROM invite_codes WHERE disabled_ms IS NULL"),
                ].map { "\($0)" }
            }
        }
        let before = try state()
        let now = f.h.clock.nowMilliseconds()
        try await f.h.database.write { db in
            try db.run("UPDATE sessions SET revoked_ms = ?2 WHERE token_hash = ?1", [.blob(hash), .integer(now)])
        }
        let attempts: [(HTTPMethod, String, String?)] = [
            (.post, "\(f.g)/alarms", #"{"title":"Lost",\#(SharedAlarmFixture.dailyTen)}"#),
            (.patch, "\(f.g)/alarms/\(alarmID)", #"{"title":"Lost"}"#),
            (.delete, "\(f.g)/alarms/\(alarmID)", nil),
            (.patch, f.g, #"{"name":"Lost"}"#),
            (.patch, f.g, #"{"name":3}"#),
            (.delete, "\(f.g)/invite-code", nil),
        ]
        for (method, path, json) in attempts {
            // Remembered again before each, so every attempt is checked inside its write, not by a read first.
            f.h.app.services.sessionOwners.record(hash, owner: f.owner.id)
            let reply = await f.h.send(method, path, json: json, token: f.owner.token)
            #expect(reply.status == 401, "\(method) \(path): \(reply.text)")
            #expect(try state() == before, "\(method) \(path)")
        }
    }

    @Test(
        """
        personal sync writes with a seen session: a tier taken away elsewhere answers 403 TIER_REQUIRED (before a \
        malformed body's 422 and a stale version's 409) and keeps nothing; revoked answers 401; restored, the write goes
        """
    )
    func syncWritesCheckTheTierInsideTheWrite() async throws {
        let (h, phone, _) = try await PersonalAlarmTests.twoDevices()
        let path = "/v1/me/alarms/\(PersonalAlarmTests.alarmA)"
        try await h.expect(201, .put, path, json: PersonalAlarmTests.body("Rent"), token: phone)
        let hash = try tokenHash(phone)
        let userID = try #require(h.app.services.sessionOwners.owner(of: hash))
        func state() throws -> [String] {
            try h.database.readSync { db in
                [
                    try db.scalar("SELECT COUNT(*) FROM change_log"), try db.scalar("SELECT COUNT(*) FROM personal_alarms"),
                    try db.scalar("SELECT COUNT(*) FROM personal_completions"),
                ].map { "\($0)" }
            }
        }
        func setTier(_ tier: String) async throws {
            try await h.database.write { db in try db.run("UPDATE users SET tier = ?2 WHERE id = ?1", [.text(userID), .text(tier)]) }
        }
        let before = try state()
        try await setTier("free")
        let attempts: [(HTTPMethod, String, String?)] = [
            (.put, path, PersonalAlarmTests.body("Lost")),
            (.put, path, PersonalAlarmTests.body("Lost", version: 9)),
            (.put, path, #"{"title":3}"#),
            (.patch, path, #"{"title":"Lost"}"#),
            (.delete, path, nil),
            (.post, "\(path)/completions", #"{"status":"completed","scheduled_at":"2026-02-06T08:00:00.000Z"}"#),
        ]
        for (method, target, json) in attempts {
            let reply = await h.send(method, target, json: json, token: phone)
            #expect(reply.status == 403, "\(method) \(target): \(reply.text)")
            #expect(reply.errorName == "TIER_REQUIRED", "\(method) \(target)")
            #expect(try state() == before, "\(method) \(target)")
            #expect(h.app.services.sessionOwners.owner(of: hash) == userID, "a tier refusal does not forget the session")
        }
        try await setTier("plus")
        try await h.expect(200, .patch, path, json: #"{"title":"Kept"}"#, token: phone)
        let now = h.clock.nowMilliseconds()
        try await h.database.write { db in
            try db.run("UPDATE sessions SET revoked_ms = ?2 WHERE token_hash = ?1", [.blob(hash), .integer(now)])
        }
        let revoked = await h.send(.patch, path, json: #"{"title":"Lost"}"#, token: phone)
        #expect(revoked.status == 401, "\(revoked.text)")
    }

    @Test("the bound: a full map starts over; a forgotten token is read again and remembered")
    func bounded() {
        let owners = SessionOwners(maxEntries: 2)
        owners.record([1], owner: "a")
        owners.record([2], owner: "b")
        owners.record([2], owner: "b")
        #expect(owners.count == 2)
        owners.record([3], owner: "c")
        #expect(owners.count == 1)
        #expect(owners.owner(of: [3]) == "c" && owners.owner(of: [1]) == nil)
        owners.forget([3])
        #expect(owners.count == 0)
    }
}
