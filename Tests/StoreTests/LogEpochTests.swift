import SQLite
import Storage
import Store
import TestSupport
import Testing

@Suite("Change log epoch")
struct LogEpochTests {
    @Test("each database gets its own random epoch; rotate replaces it; a pre-0006 schema has none", arguments: TestBackend.available)
    func rotation(_ backend: TestBackend) throws {
        let migrations = Schema.migrations(for: backend.dialect)
        let a = try backend.open(migrations: migrations).database
        let b = try backend.open(migrations: migrations).database
        let epochA = try a.readSync { try LogEpoch.current(on: $0) }
        let epochB = try b.readSync { try LogEpoch.current(on: $0) }
        #expect(epochA.count == 32 && epochA.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(epochA != epochB)
        let rotated = try a.writeSync { try LogEpoch.rotate(on: $0) }
        #expect(rotated != nil && rotated != epochA)
        #expect(rotated?.count == 32 && rotated?.allSatisfy { $0.isHexDigit && !$0.isUppercase } == true)
        #expect(try a.readSync { try LogEpoch.current(on: $0) } == rotated)
        let old = try backend.open(migrations: migrations.filter { $0.name < "0006" }).database
        #expect(try old.writeSync { try LogEpoch.rotate(on: $0) } == nil)
    }

    @Test("a backup copy of the SQLite file is the same history until rotated; the original keeps its epoch")
    func epochs() throws {
        let dir = TemporaryDirectory()
        defer { withExtendedLifetime(dir) {} }
        func fresh(_ name: String) throws -> SQLiteDatabase {
            let db = try SQLiteDatabase(path: dir.path + "/\(name).sqlite")
            _ = try MigrationRunner.migrate(db, migrations: Schema.migrations, nowMilliseconds: 1)
            return db
        }
        let a = try fresh("a")
        let b = try fresh("b")
        let epochA = try a.readSync { try LogEpoch.current(on: $0) }
        let epochB = try b.readSync { try LogEpoch.current(on: $0) }
        #expect(epochA.count == 32 && epochA.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(epochA != epochB)

        try a.backup(to: dir.path + "/copy.sqlite")
        let copy = try SQLiteDatabase(path: dir.path + "/copy.sqlite")
        #expect(try copy.readSync { try LogEpoch.current(on: $0) } == epochA, "the raw copy is the same history")
        let rotated = try copy.writeSync { try LogEpoch.rotate(on: $0) }
        #expect(rotated != nil && rotated != epochA)
        #expect(try copy.readSync { try LogEpoch.current(on: $0) } == rotated)
        #expect(try a.readSync { try LogEpoch.current(on: $0) } == epochA, "the original keeps its epoch")

        let old = try SQLiteDatabase(path: dir.path + "/old.sqlite")
        _ = try MigrationRunner.migrate(
            old, migrations: Schema.migrations.filter { $0.name < "0006" }, nowMilliseconds: 1)
        #expect(try old.writeSync { try LogEpoch.rotate(on: $0) } == nil)
    }
}
