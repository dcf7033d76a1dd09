import Domain
import SQLite
import Storage
import Store
import TestSupport
import Testing

@Suite("Store — schema, accounts, sessions, change log")
struct AccountStoreTests {
    func database(_ backend: TestBackend) throws -> (TemporaryDirectory, any SQLDatabase) {
        let storage = try backend.open(migrations: Schema.migrations(for: backend.dialect))
        return (storage.directory, storage.database)
    }

    @Test("the embedded migrations are the files in Migrations/, in order")
    func embedded() throws {
        #expect(Schema.migrations.first?.name == "0001_init")
        #expect(Schema.migrations.map(\.name) == Schema.migrations.map(\.name).sorted())
        let (_, db) = try database(.sqlite)
        #expect(try MigrationRunner.pending(db, migrations: Schema.migrations).isEmpty)
    }

    @Test("register writes the user and one change-log row in the same transaction", arguments: TestBackend.available)
    func register(_ backend: TestBackend) throws {
        let (_, db) = try database(backend)
        let user = try db.writeSync { c in
            try AccountStore.register(
                email: "a@example.com", displayName: "A", passwordHash: "h", tier: .plus, at: 1000, on: c)
        }
        #expect(user.version == 1)
        #expect(user.createdAt == Timestamp(milliseconds: 1000))
        let rows = try db.readSync {
            try $0.query("SELECT seq, batch, event, actor, topic, kind, op, entity_id FROM change_log")
        }
        #expect(rows.count == 1)
        #expect(rows[0].int("batch") == rows[0].int("seq"))
        #expect(rows[0].string("event") == "user_registered")
        #expect(rows[0].string("actor") == "user:\(user.id)")
        #expect(rows[0].string("entity_id") == user.id)
        #expect(try db.readSync { try AccountStore.user(id: user.id, on: $0) } == user)
    }

    @Test("a failing mutation leaves neither its row nor its change-log row", arguments: TestBackend.available)
    func atomicity(_ backend: TestBackend) throws {
        let (_, db) = try database(backend)
        _ = try db.writeSync { c in
            try AccountStore.register(email: "a@example.com", displayName: "A", passwordHash: "h", tier: .free, at: 1, on: c)
        }
        #expect(throws: DomainError.emailTaken) {
            try db.writeSync { c in
                try AccountStore.register(
                    email: "a@example.com", displayName: "B", passwordHash: "h", tier: .free, at: 2, on: c)
            }
        }
        #expect(try db.readSync { try $0.scalar("SELECT count(*) FROM change_log") } == .integer(1))
        #expect(try db.readSync { try $0.scalar("SELECT count(*) FROM users") } == .integer(1))
    }

    @Test("a batch gets consecutive seqs sharing the first seq as its batch", arguments: TestBackend.available)
    func batches(_ backend: TestBackend) throws {
        let (_, db) = try database(backend)
        let change = Change(topic: "group:g", kind: .group, op: .modified, entityID: "g", document: Array("{}".utf8))
        try db.writeSync { try ChangeLog.append([change], event: ChangeEvent(rawValue: "a"), actor: .system, at: 1, on: $0) }
        try db.writeSync {
            try ChangeLog.append([change, change, change], event: ChangeEvent(rawValue: "b"), actor: .admin, at: 2, on: $0)
        }
        // Two mutations in one transaction (a group commit): two batches, in the order they appended.
        try db.writeSync { c in
            try ChangeLog.append([change, change], event: ChangeEvent(rawValue: "c"), actor: .admin, at: 3, on: c)
            try ChangeLog.append([change], event: ChangeEvent(rawValue: "d"), actor: .admin, at: 3, on: c)
        }
        let rows = try db.readSync { try $0.query("SELECT seq, batch, event FROM change_log ORDER BY seq") }
        #expect(rows.map { [$0.int("seq"), $0.int("batch")] } == [[1, 1], [2, 2], [3, 2], [4, 2], [5, 5], [6, 5], [7, 7]])
        #expect(rows.map { $0.string("event") } == ["a", "b", "b", "b", "c", "c", "d"])
        let report = try db.readSync { try ChangeLogChain.verify(on: $0) }
        #expect(report.verified == 7 && report.firstBroken == nil)
    }

    @Test("the change log refuses updates", arguments: TestBackend.available)
    func appendOnly(_ backend: TestBackend) throws {
        let (_, db) = try database(backend)
        _ = try db.writeSync { c in
            try AccountStore.register(email: "a@example.com", displayName: "A", passwordHash: "h", tier: .free, at: 1, on: c)
        }
        #expect(
            violatesConstraint {
                try db.writeSync { c in try c.run("UPDATE change_log SET actor = 'mallory'") }
            })
    }

    @Test("sessions: lookup, touch interval, revoke, revoke all", arguments: TestBackend.available)
    func sessions(_ backend: TestBackend) throws {
        let (_, db) = try database(backend)
        let user = try db.writeSync { c in
            try AccountStore.register(email: "a@example.com", displayName: "A", passwordHash: "h", tier: .free, at: 0, on: c)
        }
        let hash = [UInt8](repeating: 7, count: 32)
        try db.writeSync { c in
            try SessionStore.create(tokenHash: hash, userID: user.id, userAgent: nil, clientIP: "127.0.0.1", at: 0, on: c)
        }
        let fresh = try db.readSync { try SessionStore.lookup(tokenHash: hash, at: 1000, on: $0) }
        #expect(fresh?.user.id == user.id)
        #expect(fresh?.needsTouch == false)
        let later = try db.readSync {
            try SessionStore.lookup(tokenHash: hash, at: SessionStore.touchIntervalMilliseconds, on: $0)
        }
        #expect(later?.needsTouch == true)
        #expect(try db.readSync { try SessionStore.lookup(tokenHash: hash, at: SessionStore.idleLifetimeMilliseconds, on: $0) } == nil)
        #expect(
            try db.writeSync {
                try SessionStore.revokeAll(userID: user.id, keeping: nil, actor: .system, reason: .operatorRevoked, at: 5, on: $0)
            } == 1)
        #expect(try db.readSync { try SessionStore.lookup(tokenHash: hash, at: 6, on: $0) } == nil)
    }
}

@Suite("Server secret fingerprint (migration 0009)")
struct ServerSecretFingerprintTests {
    @Test("the first secret's fingerprint is recorded; the same secret passes, another one is refused", arguments: TestBackend.available)
    func fingerprint(_ backend: TestBackend) throws {
        let db = try backend.open(migrations: Schema.migrations(for: backend.dialect)).database
        let first = [UInt8](repeating: 1, count: ServerSecret.byteCount)
        try db.writeSync { try ServerSecret.checkFingerprint(first, at: 1, on: $0) }
        try db.writeSync { try ServerSecret.checkFingerprint(first, at: 2, on: $0) }
        let other = [UInt8](repeating: 2, count: ServerSecret.byteCount)
        #expect(throws: ServerSecret.Failure.self) {
            try db.writeSync { try ServerSecret.checkFingerprint(other, at: 3, on: $0) }
        }
        let stored = try db.readSync { try $0.query("SELECT fingerprint, created_ms FROM server_secret_fingerprint") }
        #expect(stored.count == 1 && stored[0].int("created_ms") == 1)
        #expect(stored[0].blob("fingerprint") != first, "a fingerprint, not the secret")
    }
}
