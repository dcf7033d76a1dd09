import Domain
import SQLite
import Storage
import Store
import TestSupport
import Testing

@Suite("Moderation and audit — the admin CLI's store functions")
struct ModerationTests {
    func database(_ backend: TestBackend) throws -> (TemporaryDirectory, any SQLDatabase) {
        let storage = try backend.open(migrations: Schema.migrations(for: backend.dialect))
        return (storage.directory, storage.database)
    }

    func user(_ email: String, on db: any SQLDatabase, at now: Int64 = 10) throws -> User {
        try db.writeSync { c in
            try AccountStore.register(email: email, displayName: "U", passwordHash: "h", tier: .free, at: now, on: c)
        }
    }

    @Test(
        "suspension revokes every session and is logged with the reason; unsuspend restores status only", arguments: TestBackend.available)
    func suspend(_ backend: TestBackend) throws {
        let (dir, db) = try database(backend)
        defer { withExtendedLifetime(dir) {} }
        let u = try user("a@example.com", on: db)
        try db.writeSync { c in
            for i in 0..<3 {
                try SessionStore.create(
                    tokenHash: [UInt8](repeating: UInt8(i), count: 32), userID: u.id, userAgent: nil, clientIP: nil,
                    at: 20, on: c)
            }
        }
        let suspended = try db.writeSync {
            try AccountStore.setStatus(userID: u.id, status: .suspended, actor: .admin, reason: "spam", at: 30, on: $0)
        }
        #expect(suspended.status == .suspended)
        #expect(suspended.version == 2)
        #expect(try db.readSync { try $0.scalar("SELECT count(*) FROM sessions WHERE revoked_ms IS NULL") } == .integer(0))
        let trail = try db.readSync { try AuditTrail.entries(AuditTrail.Filter(actor: "admin"), limit: 10, on: $0) }
        // The suspension, then its revocation of the three sessions (one `sessions_revoked` row each,
        // the path every revocation takes: their sockets close on every instance).
        #expect(trail.map(\.event) == ["user_suspended"] + Array(repeating: "sessions_revoked", count: 3))
        #expect(trail.first?.reason == "spam")
        #expect(trail.dropFirst().allSatisfy { $0.reason == "account_suspended" })
        #expect(trail.first?.document?.contains(#""status":"suspended""#) == true)

        let back = try db.writeSync {
            try AccountStore.setStatus(userID: u.id, status: .active, actor: .admin, reason: "appeal", at: 40, on: $0)
        }
        #expect(back.status == .active)
        #expect(try db.readSync { try $0.scalar("SELECT count(*) FROM sessions WHERE revoked_ms IS NULL") } == .integer(0))
    }

    @Test("setting the tier it already has writes nothing", arguments: TestBackend.available)
    func tierNoOp(_ backend: TestBackend) throws {
        let (dir, db) = try database(backend)
        defer { withExtendedLifetime(dir) {} }
        let u = try user("a@example.com", on: db)
        _ = try db.writeSync { try AccountStore.setTier(userID: u.id, tier: .free, actor: .admin, reason: nil, at: 5, on: $0) }
        #expect(try db.readSync { try ChangeLog.latestSeq(on: $0) } == 1)
        let premium = try db.writeSync {
            try AccountStore.setTier(userID: u.id, tier: .premium, actor: .admin, reason: "paid", at: 6, on: $0)
        }
        #expect(premium.tier == .premium)
        #expect(try db.readSync { try ChangeLog.latestSeq(on: $0) } == 2)
    }

    @Test("find by id or email; list with an escaped search", arguments: TestBackend.available)
    func findAndList(_ backend: TestBackend) throws {
        let (dir, db) = try database(backend)
        defer { withExtendedLifetime(dir) {} }
        let a = try user("ana@example.com", on: db, at: 1)
        _ = try user("bob_1@example.com", on: db, at: 2)
        _ = try user("bobx1@example.com", on: db, at: 3)
        #expect(try db.readSync { try AccountStore.find(a.id, on: $0) }?.email == "ana@example.com")
        #expect(try db.readSync { try AccountStore.find(" ANA@example.com", on: $0) }?.id == a.id)
        #expect(try db.readSync { try AccountStore.find("nobody@example.com", on: $0) } == nil)
        let all = try db.readSync { try AccountStore.list(search: nil, limit: 10, on: $0) }
        #expect(all.map(\.email) == ["ana@example.com", "bob_1@example.com", "bobx1@example.com"])
        // "_" is a LIKE wildcard; the search must treat it as text.
        let underscore = try db.readSync { try AccountStore.list(search: "bob_", limit: 10, on: $0) }
        #expect(underscore.map(\.email) == ["bob_1@example.com"])
    }

    @Test("audit filters by topic and time, and follows after a seq in order", arguments: TestBackend.available)
    func auditFilters(_ backend: TestBackend) throws {
        let (dir, db) = try database(backend)
        defer { withExtendedLifetime(dir) {} }
        let a = try user("a@example.com", on: db, at: 100)
        _ = try user("b@example.com", on: db, at: 200)
        let mine = try db.readSync {
            try AuditTrail.entries(AuditTrail.Filter(topic: ChangeLog.userTopic(a.id)), limit: 10, on: $0)
        }
        #expect(mine.count == 1)
        let recent = try db.readSync { try AuditTrail.entries(AuditTrail.Filter(sinceMilliseconds: 150), limit: 10, on: $0) }
        #expect(recent.map(\.seq) == [2])
        let after = try db.readSync {
            try AuditTrail.entries(AuditTrail.Filter(afterSeq: 0), limit: 10, newest: false, on: $0)
        }
        #expect(after.map(\.seq) == [1, 2])
        let newestOne = try db.readSync { try AuditTrail.entries(AuditTrail.Filter(), limit: 1, on: $0) }
        #expect(newestOne.map(\.seq) == [2])
    }

    @Test("online backup while a writer keeps committing gives a consistent, complete copy")
    func backupUnderWrites() async throws {
        let (dir, db) = try database(.sqlite)
        defer { withExtendedLifetime(dir) {} }
        for i in 0..<50 { _ = try user("u\(i)@example.com", on: db, at: Int64(i)) }
        let writes = Task.detached {
            for i in 50..<250 {
                _ = try await db.write { c in
                    try AccountStore.register(
                        email: "u\(i)@example.com", displayName: "U", passwordHash: "h", tier: .free, at: Int64(i),
                        on: c)
                }
            }
        }
        try (db as! SQLiteDatabase).backup(to: dir.path + "/copy.sqlite")
        try await writes.value
        let copy = try SQLiteDatabase(path: dir.path + "/copy.sqlite")
        defer { copy.close() }
        let (users, logRows, integrity) = try copy.readSync { c in
            (
                try c.scalar("SELECT count(*) FROM users"), try c.scalar("SELECT count(*) FROM change_log"),
                try c.scalar("PRAGMA integrity_check")
            )
        }
        #expect(integrity == .text("ok"))
        // A snapshot: every user in the copy has its change-log row, whatever moment it was taken at.
        #expect(users == logRows)
        guard case .integer(let n) = users else {
            Issue.record("no count")
            return
        }
        #expect(n >= 50 && n <= 250)
        #expect(throws: SQLiteError.self) { try (db as! SQLiteDatabase).backup(to: dir.path + "/copy.sqlite") }  // never overwrites
    }
}
