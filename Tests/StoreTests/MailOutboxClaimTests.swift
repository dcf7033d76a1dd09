import Domain
import Storage
import Store
import TestSupport
import Testing

/// The mail outbox taken by several dispatchers at once (`MailDispatcher.runOnce`'s `.concurrent`
/// writes): on PostgreSQL a claimer or preparer holding rows uncommitted never makes another wait,
/// and no mail or request is taken twice.
@Suite("Mail outbox: concurrent claims and preparations take disjoint rows")
struct MailOutboxClaimTests {
    static let now: Int64 = 1_000_000

    static func mail(_ n: Int, expiresAt: Int64) -> MailContent {
        MailContent(
            kind: .verifyEmail, recipient: "user\(n)@example.com", subject: "Verify", body: "link \(n)", userID: nil,
            expiresAt: expiresAt)
    }

    @Test(
        """
        PostgreSQL: a claimer holding two mails and the expired ones uncommitted; another claims the other four \
        without waiting, expires nothing twice; requests are prepared by one preparer each
        """,
        .enabled(if: TestBackend.available.contains(.postgres)), .timeLimit(.minutes(5)))
    func concurrentClaimsTakeDisjointRows() async throws {
        let storage = try TestBackend.postgres.open(migrations: Schema.migrations(for: .postgres))
        let database = storage.database
        try await database.write { db in
            for n in 0..<6 { try MailOutbox.enqueue(Self.mail(n, expiresAt: Self.now + 60_000), sendable: true, at: Self.now, on: db) }
            for n in 6..<8 { try MailOutbox.enqueue(Self.mail(n, expiresAt: Self.now - 1), sendable: true, at: Self.now - 10, on: db) }
            for n in 8..<12 {
                try MailOutbox.enqueueRequest(
                    kind: .passwordReset, recipient: "user\(n)@example.com", subject: MailKind.passwordResetSubject,
                    expiresAt: Self.now + 60_000, sendable: true, at: Self.now, on: db)
            }
        }

        // Another instance claims two mails (expiring the two past their expiry) and takes two requests
        // to prepare, and holds its transaction open.
        let other = try openAnotherHandle(database)
        defer { other.close() }
        let held = try await HeldWrite(on: other) { db in
            let mails = try MailOutbox.claim(owner: "held", at: Self.now, leaseUntil: Self.now + 60_000, limit: 2, on: db)
            let requests = try MailOutbox.unprepared(at: Self.now, limit: 2, on: db)
            return (Set(mails.map(\.id)), Set(requests.map(\.id)))
        }
        // Meanwhile this instance takes everything else, without waiting for the held rows (a lock wait
        // would be a hang: `lock_timeout` turns it into an error).
        let (restMails, restRequests) = try await blocking {
            try database.writeSync(.concurrent) { db in  // alone in its transaction: it sets a transaction-wide limit
                _ = try db.run("SET LOCAL lock_timeout = '30s'")
                let mails = try MailOutbox.claim(owner: "rest", at: Self.now, leaseUntil: Self.now + 60_000, limit: 100, on: db)
                let requests = try MailOutbox.unprepared(at: Self.now, limit: 100, on: db)
                return (Set(mails.map(\.id)), Set(requests.map(\.id)))
            }
        }
        let (heldMails, heldRequests) = try await held.commit()
        #expect(heldMails.count == 2)
        #expect(restMails.count == 4, "every due mail the held claim did not lock")
        #expect(heldMails.isDisjoint(with: restMails))
        #expect(heldRequests.count == 2)
        #expect(restRequests.count == 2, "every request the held preparer did not lock")
        #expect(heldRequests.isDisjoint(with: restRequests))

        // Both claims committed their leases; the expired mails were failed once.
        let later = try await database.write(.concurrent) { db in
            try MailOutbox.claim(owner: "late", at: Self.now + 1, leaseUntil: Self.now + 60_000, limit: 100, on: db)
        }
        #expect(later.isEmpty)
        let counts = try database.readSync { try MailOutbox.counts(on: $0) }
        #expect(counts[.failed] == 2)
        #expect(counts[.pending] == 10)
    }
}
