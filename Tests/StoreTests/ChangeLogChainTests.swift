import Domain
import SQLite
import Storage
import Store
import TestSupport
import Testing

@Suite("Change log hash chain — audit verify")
struct ChangeLogChainTests {
    /// A database with `count` registrations (one change-log row each).
    func database(_ backend: TestBackend, rows count: Int) throws -> (TemporaryDirectory, any SQLDatabase) {
        let storage = try backend.open(migrations: Schema.migrations(for: backend.dialect))
        let (dir, db) = (storage.directory, storage.database)
        for i in 0..<count {
            _ = try db.writeSync { c in
                try AccountStore.register(
                    email: "u\(i)@example.com", displayName: "U\(i)", passwordHash: "h", tier: .free, at: Int64(i), on: c)
            }
        }
        return (dir, db)
    }

    /// Edits the file behind the store's back, as someone with the file would (trigger dropped).
    func tamper(_ db: any SQLDatabase, _ sql: String) throws {
        try db.withWriter { c in
            switch c.dialect {
            case .sqlite:
                try c.execute("DROP TRIGGER IF EXISTS change_log_no_update")
                try c.execute("DROP TRIGGER IF EXISTS change_log_redact_only")
            case .postgres:
                try c.execute("ALTER TABLE change_log DISABLE TRIGGER USER")
            }
            try c.execute(sql)
        }
    }

    @Test("an untouched log verifies completely, including multi-row batches", arguments: TestBackend.available)
    func intact(_ backend: TestBackend) throws {
        let (dir, db) = try database(backend, rows: 5)
        defer { withExtendedLifetime(dir) {} }
        let change = Change(topic: "group:g", kind: .group, op: .modified, entityID: "g", document: Array("{}".utf8))
        try db.writeSync { try ChangeLog.append([change, change], event: ChangeEvent(rawValue: "e"), actor: .admin, at: 9, on: $0) }
        let report = try db.readSync { try ChangeLogChain.verify(on: $0) }
        #expect(report.verified == 7)
        #expect(report.unchained == 0)
        #expect(report.firstBroken == nil)
    }

    @Test("an edited document is caught at its row", arguments: TestBackend.available)
    func editedContent(_ backend: TestBackend) throws {
        let (dir, db) = try database(backend, rows: 5)
        defer { withExtendedLifetime(dir) {} }
        try tamper(db, "UPDATE change_log SET document = replace(document, 'U2', 'Mallory') WHERE seq = 3")
        let report = try db.readSync { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == 3)
        #expect(report.verified == 2)
    }

    @Test("an edited actor or reason is caught; so is a recomputed-looking fake hash", arguments: TestBackend.available)
    func editedFields(_ backend: TestBackend) throws {
        let (dir, db) = try database(backend, rows: 4)
        defer { withExtendedLifetime(dir) {} }
        try tamper(db, "UPDATE change_log SET actor = 'system' WHERE seq = 4")
        #expect(try db.readSync { try ChangeLogChain.verify(on: $0) }.firstBroken == 4)
        let (dir2, db2) = try database(backend, rows: 4)
        defer { withExtendedLifetime(dir2) {} }
        try tamper(db2, "UPDATE change_log SET hash = (SELECT hash FROM change_log WHERE seq = 1) WHERE seq = 2")
        #expect(try db2.readSync { try ChangeLogChain.verify(on: $0) }.firstBroken == 2)
    }

    @Test("a deleted row in the middle breaks the chain at the next row", arguments: TestBackend.available)
    func deletedRow(_ backend: TestBackend) throws {
        let (dir, db) = try database(backend, rows: 5)
        defer { withExtendedLifetime(dir) {} }
        try tamper(db, "DELETE FROM change_log WHERE seq = 3")
        let report = try db.readSync { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == 4)
        #expect(report.problem?.contains("missing") == true)
    }

    @Test("a prefix removed behind the server's back (no checkpoint) is reported as missing rows", arguments: TestBackend.available)
    func purgedPrefixWithoutCheckpoint(_ backend: TestBackend) throws {
        let (dir, db) = try database(backend, rows: 6)
        defer { withExtendedLifetime(dir) {} }
        try db.writeSync { try $0.run("DELETE FROM change_log WHERE seq <= 2") }
        let report = try db.readSync { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == 3)
        #expect(report.problem?.contains("no checkpoint") == true)
    }

    @Test(
        "compaction removes whole old batches past the window, keeps the newest rows, and the chain verifies through its checkpoint",
        arguments: TestBackend.available)
    func compaction(_ backend: TestBackend) throws {
        let (dir, db) = try database(backend, rows: 0)
        defer { withExtendedLifetime(dir) {} }
        let day: Int64 = 24 * 3600 * 1000
        let change = Change(topic: "group:g", kind: .group, op: .modified, entityID: "g", document: Array(#"{"n":1}"#.utf8))
        for i in 0..<10 {  // ten 3-row batches, one per day
            try db.writeSync {
                try ChangeLog.append(
                    [change, change, change], event: ChangeEvent(rawValue: "e"), actor: .admin, at: Int64(i) * day, on: $0)
            }
        }
        let retention = ChangeLogRetention(
            windowMilliseconds: 5 * day, minimumRows: 6, maxRowsPerTransaction: 8, minimumRowsPerCompaction: 1)
        let now = 10 * day  // days 0…4 are past the window
        // One transaction removes at most 8 rows, cut back to whole batches: 6 rows (days 0 and 1).
        let first = try db.writeSync { try ChangeLog.compact(retention, at: now, on: $0) }
        #expect(first.rowsRemoved == 6 && first.throughSeq == 6)
        var total = first.rowsRemoved
        while true {
            let next = try db.writeSync { try ChangeLog.compact(retention, at: now, on: $0) }
            if next.rowsRemoved == 0 { break }
            total += next.rowsRemoved
        }
        #expect(total == 15)  // days 0…4; day 5 onwards is inside the window
        let size = try db.readSync { try ChangeLog.size(on: $0) }
        #expect(size.oldestSeq == 16)
        let report = try db.readSync { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == nil, "\(report)")
        #expect(report.compactedThrough == 15)
        #expect(report.verified == Int(size.rows))
        // The newest rows stay however old: with a 0-day window only `minimumRows` bounds it.
        let keepAll = ChangeLogRetention(windowMilliseconds: 0, minimumRows: 1_000)
        #expect(try db.writeSync { try ChangeLog.compact(keepAll, at: 100 * day, on: $0) }.rowsRemoved == 0)
        // Even with no minimum the newest row stays, so the next append continues the numbering.
        let keepNone = ChangeLogRetention(
            windowMilliseconds: 0, minimumRows: 0, maxRowsPerTransaction: 1_000, minimumRowsPerCompaction: 1)
        let latestBefore = try db.readSync { try ChangeLog.latestSeq(on: $0) }
        _ = try db.writeSync { try ChangeLog.compact(keepNone, at: 100 * day, on: $0) }
        #expect(try db.readSync { try ChangeLog.size(on: $0) }.rows == 2)  // the newest row and the new checkpoint
        #expect(try db.readSync { try ChangeLog.latestSeq(on: $0) } == latestBefore + 1)
        #expect(try db.readSync { try ChangeLogChain.verify(on: $0) }.firstBroken == nil)
        // Tampering with the checkpoint row is caught by the chain.
        try tamper(
            db, "UPDATE change_log SET document = replace(document, '\"rows_removed\":', '\"rows_removed\":1') WHERE kind = 'checkpoint'")
        #expect(try db.readSync { try ChangeLogChain.verify(on: $0) }.firstBroken != nil)
    }

    @Test("a redacted document still chains and is reported as redacted; an edited unredacted one is not", arguments: TestBackend.available)
    func redaction(_ backend: TestBackend) throws {
        let (dir, db) = try database(backend, rows: 4)
        defer { withExtendedLifetime(dir) {} }
        let userID = try #require(try db.readSync { try $0.queryOne("SELECT id FROM users WHERE email = 'u1@example.com'")?.string("id") })
        let redacted = try db.writeSync { c in
            try ChangeLog.redactPersonalData(
                userID: userID, email: "u1@example.com", tombstoneEmail: "deleted+x@invalid", deletedName: "Deleted User",
                at: 99, on: c)
        }
        #expect(redacted == 1)
        let leftovers = try db.readSync {
            try $0.scalar("SELECT count(*) FROM change_log WHERE \($0.dialect.position(of: "'u1@example.com'", in: "document")) > 0")
        }
        #expect(leftovers == .integer(0))
        let report = try db.readSync { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == nil)
        #expect(report.redacted == 1)
        #expect(report.verified == 4)
        // Redaction is the only update the triggers allow…
        #expect(throws: (any Error).self) {
            try db.writeSync { try $0.run("UPDATE change_log SET document = '{}' WHERE seq = 3") }
        }
        // …and an edit behind the server's back to an unredacted row is still caught.
        try tamper(db, "UPDATE change_log SET document = replace(document, 'U3', 'Mallory') WHERE seq = 4")
        #expect(try db.readSync { try ChangeLogChain.verify(on: $0) }.firstBroken == 4)
    }

    @Test(
        "compacting again and again at the newest-rows bound converges: checkpoints do not buy more removals",
        arguments: TestBackend.available)
    func compactionConverges(_ backend: TestBackend) throws {
        let (dir, db) = try database(backend, rows: 50)
        defer { withExtendedLifetime(dir) {} }
        let retention = ChangeLogRetention(
            windowMilliseconds: 0, minimumRows: 10, maxRowsPerTransaction: 7, minimumRowsPerCompaction: 5)
        for _ in 0..<100 { _ = try ChangeLog.compactUntilDone(retention, at: 1_000_000, database: db) }
        let size = try db.readSync { try ChangeLog.size(on: $0) }
        // 50 registrations: at most 40 removable, in steps of 5…7 rows, each adding one checkpoint.
        #expect(size.latestSeq - 50 <= 8, "\(size)")
        #expect(size.rows >= 10 && size.rows <= 10 + 5 + 8, "\(size)")
        #expect(try db.readSync { try ChangeLogChain.verify(on: $0) }.firstBroken == nil)
    }
}
