import Domain
import SQLite
import Store
import TestSupport
import Testing

@Suite("Change log hash chain — audit verify")
struct ChangeLogChainTests {
    /// A database with `count` registrations (one change-log row each).
    func database(rows count: Int) throws -> (TemporaryDirectory, Database) {
        let dir = TemporaryDirectory()
        let db = try Database(path: dir.path + "/t.sqlite")
        _ = try MigrationRunner.migrate(db, migrations: Schema.migrations, nowMilliseconds: 1)
        for i in 0..<count {
            _ = try db.writeSync { c in
                try AccountStore.register(
                    email: "u\(i)@example.com", displayName: "U\(i)", passwordHash: "h", tier: .free, at: Int64(i), on: c)
            }
        }
        return (dir, db)
    }

    /// Edits the file behind the store's back, as someone with the file would (trigger dropped).
    func tamper(_ db: Database, _ sql: String) throws {
        try db.withWriter { c in
            try c.execute("DROP TRIGGER IF EXISTS change_log_no_update")
            try c.execute(sql)
        }
    }

    @Test("an untouched log verifies completely, including multi-row batches")
    func intact() throws {
        let (dir, db) = try database(rows: 5)
        defer { withExtendedLifetime(dir) {} }
        let change = Change(topic: "group:g", kind: "group", op: .modified, entityID: "g", document: Array("{}".utf8))
        try db.writeSync { try ChangeLog.append([change, change], event: "e", actor: .admin, at: 9, on: $0) }
        let report = try db.readSync { try ChangeLogChain.verify(on: $0) }
        #expect(report.verified == 7)
        #expect(report.unchained == 0)
        #expect(report.firstBroken == nil)
    }

    @Test("an edited document is caught at its row")
    func editedContent() throws {
        let (dir, db) = try database(rows: 5)
        defer { withExtendedLifetime(dir) {} }
        try tamper(db, "UPDATE change_log SET document = replace(document, 'U2', 'Mallory') WHERE seq = 3")
        let report = try db.readSync { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == 3)
        #expect(report.verified == 2)
    }

    @Test("an edited actor or reason is caught; so is a recomputed-looking fake hash")
    func editedFields() throws {
        let (dir, db) = try database(rows: 4)
        defer { withExtendedLifetime(dir) {} }
        try tamper(db, "UPDATE change_log SET actor = 'system' WHERE seq = 4")
        #expect(try db.readSync { try ChangeLogChain.verify(on: $0) }.firstBroken == 4)
        let (dir2, db2) = try database(rows: 4)
        defer { withExtendedLifetime(dir2) {} }
        try tamper(db2, "UPDATE change_log SET hash = zeroblob(32) WHERE seq = 2")
        #expect(try db2.readSync { try ChangeLogChain.verify(on: $0) }.firstBroken == 2)
    }

    @Test("a deleted row in the middle breaks the chain at the next row")
    func deletedRow() throws {
        let (dir, db) = try database(rows: 5)
        defer { withExtendedLifetime(dir) {} }
        try tamper(db, "DELETE FROM change_log WHERE seq = 3")
        let report = try db.readSync { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == 4)
        #expect(report.problem?.contains("missing") == true)
    }

    @Test("purging the oldest rows (retention) keeps the rest verifiable from the first remaining row")
    func purgedPrefix() throws {
        let (dir, db) = try database(rows: 6)
        defer { withExtendedLifetime(dir) {} }
        try db.writeSync { try $0.run("DELETE FROM change_log WHERE seq <= 2") }
        let report = try db.readSync { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == nil)
        #expect(report.verified == 4)
    }
}
