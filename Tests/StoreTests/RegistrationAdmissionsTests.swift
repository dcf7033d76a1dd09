import Storage
import Store
import TestSupport
import Testing

/// Registration limits as rows (migration 0012): per network and in total within the window, shared
/// by every handle on the database (another process or instance), refunds give a place back.
@Suite("Registration admissions — per network and total, shared across instances (migration 0012)")
struct RegistrationAdmissionsTests {
    static let hour: Int64 = 3_600_000

    static func admit(
        _ db: any SQLDatabase, _ network: String, at now: Int64, perNetwork: Int = 2, total: Int = 3
    ) throws -> RegistrationAdmissions.Admission {
        try db.writeSync {
            try RegistrationAdmissions.admit(
                network: network, perNetwork: perNetwork, total: total, windowMilliseconds: hour, at: now, on: $0)
        }
    }

    static func admitted(_ admission: RegistrationAdmissions.Admission) -> Int64? {
        if case .admitted(let id) = admission { id } else { nil }
    }

    @Test("per network, then the total backstop, across two handles; the window slides", arguments: TestBackend.available)
    func limitsAcrossInstances(_ backend: TestBackend) throws {
        let storage = try backend.open(migrations: Schema.migrations(for: backend.dialect))
        let a = storage.database
        let b = try openAnotherHandle(a)
        defer { b.close() }
        #expect(Self.admitted(try Self.admit(a, "198.51.100.7", at: 1_000)) != nil)
        #expect(Self.admitted(try Self.admit(b, "198.51.100.7", at: 2_000)) != nil)
        // The third from the same network, on either instance: refused until the first leaves the window.
        #expect(try Self.admit(a, "198.51.100.7", at: 3_000) == .refused(retryAfterSeconds: 3_598))
        #expect(try Self.admit(b, "198.51.100.7", at: 3_000) == .refused(retryAfterSeconds: 3_598))
        // Another network gets the last place of the total; then nobody does.
        #expect(Self.admitted(try Self.admit(b, "2001:db8::/64", at: 4_000)) != nil)
        #expect(try Self.admit(a, "203.0.113.1", at: 5_000) == .refused(retryAfterSeconds: 3_596))
        // An hour after the first admission the window has room again.
        #expect(Self.admitted(try Self.admit(a, "198.51.100.7", at: 1_000 + Self.hour + 1)) != nil)
    }

    @Test("a refund gives the place back; old rows are deleted by the next admission", arguments: TestBackend.available)
    func refundAndPrune(_ backend: TestBackend) throws {
        let storage = try backend.open(migrations: Schema.migrations(for: backend.dialect))
        let db = storage.database
        let first = try #require(Self.admitted(try Self.admit(db, "198.51.100.7", at: 1_000)))
        #expect(Self.admitted(try Self.admit(db, "198.51.100.7", at: 2_000)) != nil)
        #expect(try Self.admit(db, "198.51.100.7", at: 3_000) == .refused(retryAfterSeconds: 3_598))
        try db.writeSync { try RegistrationAdmissions.refund(id: first, on: $0) }
        #expect(Self.admitted(try Self.admit(db, "198.51.100.7", at: 3_000)) != nil)
        _ = try Self.admit(db, "203.0.113.1", at: 10 * Self.hour)
        let rows = try db.readSync { try $0.scalar("SELECT COUNT(*) FROM registration_admissions") }
        #expect(rows == .integer(1))
    }
}
