import Storage
import Store
import TestSupport
import Testing

/// Migration 0016 gives every existing session a public id; sessions made afterwards get one from
/// `SessionStore.create`; the ids are unique and say nothing about the token hash.
@Suite("Sessions — public ids (migration 0016)")
struct SessionIDMigrationTests {
    @Test("sessions that existed before 0016 get distinct 32-hex ids, and still authenticate", arguments: TestBackend.available)
    func backfill(_ backend: TestBackend) async throws {
        // On a Dispatch thread: opening may start the shared PostgreSQL cluster (initdb), which must
        // not hold a cooperative thread that other suites' tasks need meanwhile.
        try await blocking { try Self.backfill(backend) }
    }

    static func backfill(_ backend: TestBackend) throws {
        let migrations = Schema.migrations(for: backend.dialect)
        let storage = try backend.open(migrations: migrations.filter { $0.name < "0016" })
        let database = storage.database
        let hashes = [bytes(32, 0x01), bytes(32, 0x02), bytes(32, 0x03)]
        try database.writeSync { db in
            try db.run(
                """
                INSERT INTO users (id, email, display_name, password_hash, created_ms, updated_ms)
                VALUES ('u1', 'ana@example.com', 'Ana', 'h', 1, 1)
                """)
            for hash in hashes {
                try db.run(
                    "INSERT INTO sessions (token_hash, user_id, created_ms, last_used_ms, expires_ms) VALUES (?1, 'u1', 1, 1, ?2)",
                    [.blob(hash), .integer(1_000_000)])
            }
        }
        let applied = try MigrationRunner.migrate(database, migrations: migrations, nowMilliseconds: 2)
        #expect(applied.contains { $0.hasPrefix("0016") })
        let ids = try database.readSync { db in
            try hashes.map { hash in try SessionStore.lookup(tokenHash: hash, at: 10, on: db)?.sessionID }
        }
        #expect(ids.allSatisfy { id in id.map { $0.count == 32 && $0.allSatisfy { $0.isHexDigit && !$0.isUppercase } } == true })
        #expect(Set(ids.compactMap { $0 }).count == 3)
        let live = try database.readSync { db in try SessionStore.live(userID: "u1", at: 10, on: db) }
        #expect(Set(live.map(\.id)) == Set(ids.compactMap { $0 }))
        // A new session gets its own id, unique against the backfilled ones.
        let created = try database.writeSync { db in
            try SessionStore.create(tokenHash: bytes(32, 0x04), userID: "u1", userAgent: nil, clientIP: nil, at: 10, on: db)
        }
        #expect(!ids.contains(created))
        withExtendedLifetime(storage) {}
    }

    /// Bytes of `count` copies of `byte`.
    static func bytes(_ count: Int, _ byte: UInt8) -> [UInt8] { [UInt8](repeating: byte, count: count) }
}
