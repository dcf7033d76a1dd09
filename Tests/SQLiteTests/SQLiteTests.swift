import Dispatch
import Foundation
import Hashing
import SQLite
import Storage
import TestSupport
import Testing

/// A fresh database file in its own temporary directory; the directory lives as long as the value.
private struct TestDatabase {
    let directory = TemporaryDirectory(prefix: "sqlite")
    let database: SQLiteDatabase

    init(_ options: SQLiteConfiguration = SQLiteConfiguration()) throws {
        database = try SQLiteDatabase(path: directory.file(named: "test.sqlite"), options: options)
    }
}

/// `LoopbackClient.hangBound` as a Dispatch interval.
private let hangBoundInterval = DispatchTimeInterval.seconds(Int(LoopbackClient.hangBound.components.seconds))

/// Waits for `semaphore` on a thread of its own (`blockingQueue`), so an async test never blocks its own thread.
/// The bound is `LoopbackClient.hangBound`: a hang fails, a starved cooperative pool does not.
private func wait(for semaphore: DispatchSemaphore) async -> Bool {
    await withCheckedContinuation { continuation in
        blockingQueue().async {
            continuation.resume(returning: semaphore.wait(timeout: .now() + hangBoundInterval) == .success)
        }
    }
}

@Suite("SQLiteConnection: values, statements, transactions")
struct ConnectionTests {
    let directory = TemporaryDirectory(prefix: "connection")

    func open() throws -> SQLiteConnection {
        try SQLiteConnection(path: directory.file(named: "c.sqlite"))
    }

    @Test func valuesRoundTrip() throws {
        let connection = try open()
        try connection.execute("CREATE TABLE v (id INTEGER PRIMARY KEY, value ANY) STRICT")
        let values: [SQLValue] = [
            .null, 0, 42, .integer(.min), .integer(.max), -1.5, .real(.pi), .real(-0.0), "", "plain",
            "Grüße, 日本語, emoji 👩‍👩‍👧, \u{0} embedded NUL", .blob([]), .blob([0, 0xFF, 0x00, 0x7F]),
            .blob((0...255).map { UInt8($0) }),
        ]
        for (index, value) in values.enumerated() {
            try connection.run("INSERT INTO v (id, value) VALUES (?1, ?2)", [SQLValue(index), value])
            #expect(connection.lastInsertRowID == Int64(index))
        }
        let rows = try connection.query("SELECT id, value FROM v ORDER BY id")
        #expect(rows.map { $0["value"] } == values)
        #expect(rows.map { $0[1] } == values)
        #expect(try connection.scalar("SELECT typeof(value) FROM v WHERE id = 8") == "text")
        #expect(try connection.scalar("SELECT typeof(value) FROM v WHERE id = 11") == "blob")
        #expect(try connection.scalar("SELECT length(value) FROM v WHERE id = 11") == 0)
    }

    @Test func conveniencesAndAccessors() throws {
        let connection = try open()
        #expect(SQLValue(nil as Int64?) == .null && SQLValue(7 as Int?) == .integer(7))
        #expect(SQLValue(nil as String?) == .null && SQLValue("x" as String?) == .text("x"))
        #expect(SQLValue(nil as [UInt8]?) == .null && SQLValue([1] as [UInt8]?) == .blob([1]))
        #expect(SQLValue(true) == 1)
        let row = try #require(try connection.queryOne("SELECT 1 AS i, 'a' AS s, x'0102' AS b, 2.5 AS d, NULL AS n"))
        #expect(row.columnNames == ["i", "s", "b", "d", "n"])
        #expect(row.int("i") == 1 && row.string("s") == "a" && row.blob("b") == [1, 2] && row.double("d") == 2.5)
        #expect(row.double("i") == 1 && row.int("s") == nil && row.string("n") == nil && row.hasColumn("n"))
        #expect(!row.hasColumn("missing"))
        #expect(try connection.queryOne("SELECT 1 WHERE 0") == nil)
        #expect(try connection.scalar("SELECT 1 WHERE 0") == .null)
        #expect(try connection.query("SELECT 1 WHERE 0").isEmpty)
    }

    @Test func runReturnsChanges() throws {
        let connection = try open()
        try connection.execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3);")
        #expect(try connection.run("UPDATE t SET x = x + 1 WHERE x >= ?1", [2]) == 2)
        #expect(try connection.run("DELETE FROM t") == 3)
    }

    @Test func transactionCommits() throws {
        let connection = try open()
        try connection.execute("CREATE TABLE t (x INTEGER)")
        let result = try connection.transaction { _ in
            #expect(connection.isInTransaction)
            try connection.run("INSERT INTO t VALUES (1)")
            return "done"
        }
        #expect(result == "done" && !connection.isInTransaction)
        #expect(try connection.scalar("SELECT count(*) FROM t") == 1)
    }

    struct Boom: Error {}

    @Test func rollbackOnThrowLeavesNothing() throws {
        let connection = try open()
        try connection.execute("CREATE TABLE t (x INTEGER)")
        #expect(throws: Boom.self) {
            try connection.transaction { connection in
                try connection.run("INSERT INTO t VALUES (1)")
                throw Boom()
            }
        }
        #expect(!connection.isInTransaction)
        #expect(try connection.scalar("SELECT count(*) FROM t") == 0)
    }

    @Test func nestedSavepointRollsBackOnlyItself() throws {
        let connection = try open()
        try connection.execute("CREATE TABLE t (x INTEGER)")
        try connection.transaction { connection in
            try connection.run("INSERT INTO t VALUES (1)")
            #expect(throws: Boom.self) {
                try connection.transaction { connection in
                    try connection.run("INSERT INTO t VALUES (2)")
                    try connection.transaction { connection in try connection.run("INSERT INTO t VALUES (3)") }
                    throw Boom()
                }
            }
            try connection.transaction { connection in try connection.run("INSERT INTO t VALUES (4)") }
        }
        #expect(try connection.query("SELECT x FROM t ORDER BY x").map { $0.int("x") } == [1, 4])
    }

    @Test func constraintErrorsAreClassified() throws {
        let connection = try open()
        try connection.execute(
            """
            CREATE TABLE parent (id INTEGER PRIMARY KEY, email TEXT UNIQUE, age INTEGER CHECK (age >= 0));
            CREATE TABLE child (parent_id INTEGER NOT NULL REFERENCES parent(id));
            INSERT INTO parent (id, email, age) VALUES (1, 'a@x', 1);
            """)
        let insert = "INSERT INTO parent (id, email, age) VALUES (?1, ?2, ?3)"
        let unique = #expect(throws: SQLiteError.self) { try connection.run(insert, [2, "a@x", 1]) }
        #expect(unique?.isUniqueViolation == true && unique?.isConstraintViolation == true)
        #expect(unique?.code == 2067 && unique?.sql == insert)
        #expect(unique?.message.contains("parent.email") == true)
        let primaryKey = #expect(throws: SQLiteError.self) { try connection.run(insert, [1, "b@x", 1]) }
        #expect(primaryKey?.isUniqueViolation == true)
        let check = #expect(throws: SQLiteError.self) { try connection.run(insert, [3, "c@x", -1]) }
        #expect(check?.isConstraintViolation == true && check?.isUniqueViolation == false)
        let foreignKey = #expect(throws: SQLiteError.self) { try connection.run("INSERT INTO child VALUES (99)") }
        #expect(foreignKey?.isForeignKeyViolation == true && foreignKey?.isUniqueViolation == false)
        #expect(foreignKey.map { "\($0)" }?.contains("FOREIGN KEY constraint failed") == true)
    }

    @Test func statementCacheIsReusableAfterErrors() throws {
        let connection = try open()
        try connection.execute("CREATE TABLE t (x INTEGER UNIQUE)")
        let insert = "INSERT INTO t (x) VALUES (?1)"
        try connection.run(insert, [1])
        #expect(throws: SQLiteError.self) { try connection.run(insert, [1]) }
        try connection.run(insert, [2])
        // A failed transaction leaves the cached BEGIN/COMMIT usable too.
        #expect(throws: SQLiteError.self) { try connection.transaction { try $0.run(insert, [2]) } }
        try connection.transaction { try $0.run(insert, [3]) }
        let select = "SELECT x FROM t WHERE x > ?1 ORDER BY x"
        let misuse = #expect(throws: SQLiteError.self) { try connection.query(select, [0, 1]) }
        #expect(misuse?.code == 21)
        #expect(try connection.query(select, [1]).map { $0.int("x") } == [2, 3])
        // A statement stopped after its first row is reset for the next use.
        #expect(try connection.queryOne(select, [0])?.int("x") == 1)
        #expect(try connection.query(select, [0]).count == 3)
    }

    @Test func misuseIsReported() throws {
        let connection = try open()
        let twoStatements = #expect(throws: SQLiteError.self) { try connection.run("SELECT 1; SELECT 2") }
        #expect(twoStatements?.code == 21)
        try connection.run("SELECT 1;  \n")
        #expect(throws: SQLiteError.self) { try connection.run("") }
        let syntax = #expect(throws: SQLiteError.self) { try connection.run("SELEC 1") }
        #expect(syntax?.code == 1 && syntax?.sql == "SELEC 1")
        connection.close()
        connection.close()
        let closed = #expect(throws: SQLiteError.self) { try connection.scalar("SELECT 1") }
        #expect(closed?.code == 21 && connection.isClosed)
    }

    @Test func readOnlyConnectionCannotWrite() throws {
        let writer = try open()
        try writer.execute("CREATE TABLE t (x INTEGER)")
        let reader = try SQLiteConnection(path: writer.path, mode: .readOnly)
        let error = #expect(throws: SQLiteError.self) { try reader.run("INSERT INTO t VALUES (1)") }
        #expect(error?.isReadOnly == true)
        let missing = #expect(throws: SQLiteError.self) {
            try SQLiteConnection(path: directory.file(named: "missing.sqlite"), mode: .readOnly)
        }
        #expect(missing?.code == 14)  // SQLITE_CANTOPEN
    }
}

@Suite("SQLiteDatabase: writer queue and reader pool")
struct DatabaseTests {
    @Test(arguments: [Durability.normal, Durability.full])
    func pragmasAreInForceOnWriterAndReaders(durability: Durability) throws {
        let test = try TestDatabase(SQLiteConfiguration(durability: durability, busyTimeoutMilliseconds: 1234, readerCount: 2))
        func check(_ connection: any SQLConnection) throws {
            #expect(try connection.scalar("PRAGMA foreign_keys") == 1)
            #expect(try connection.scalar("PRAGMA journal_mode") == "wal")
            #expect(try connection.scalar("PRAGMA synchronous") == .integer(durability.pragmaValue))
            #expect(try connection.scalar("PRAGMA busy_timeout") == 1234)
        }
        try test.database.withWriter(check)
        try test.database.writeSync(check)
        for _ in 0..<4 { try test.database.readSync(check) }
        #expect(SQLiteDatabase.sqliteVersion.hasPrefix("3."))
    }

    @Test func writeSyncCommitsAndRollsBack() throws {
        let test = try TestDatabase()
        try test.database.writeSync { try $0.execute("CREATE TABLE t (x INTEGER)") }
        try test.database.writeSync { try $0.run("INSERT INTO t VALUES (1)") }
        #expect(throws: SQLiteError.self) {
            try test.database.writeSync { connection in
                try connection.run("INSERT INTO t VALUES (2)")
                try connection.run("INSERT INTO nowhere VALUES (3)")
            }
        }
        #expect(try test.database.readSync { try $0.scalar("SELECT group_concat(x) FROM t") } == "1")
        let readOnly = #expect(throws: SQLiteError.self) {
            try test.database.readSync { try $0.run("INSERT INTO t VALUES (4)") }
        }
        #expect(readOnly?.isReadOnly == true)
    }

    @Test func concurrentAsyncWritesAreSerialisedAndAllLand() async throws {
        let test = try TestDatabase()
        let database = test.database
        try database.writeSync { connection in
            try connection.execute("CREATE TABLE counter (value INTEGER NOT NULL); INSERT INTO counter VALUES (0);")
            try connection.execute("CREATE TABLE log (task INTEGER PRIMARY KEY)")
        }
        let tasks = 200
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    try await database.write { connection in
                        dispatchPrecondition(condition: .notOnQueue(.main))
                        // Read-modify-write: only correct if writes never interleave.
                        let value = try connection.scalar("SELECT value FROM counter")
                        guard case .integer(let current) = value else { throw SQLiteError(code: 1, message: "no counter") }
                        try connection.run("UPDATE counter SET value = ?1", [.integer(current + 1)])
                        try connection.run("INSERT INTO log (task) VALUES (?1)", [SQLValue(task)])
                    }
                }
            }
            try await group.waitForAll()
        }
        let (value, logged) = try await database.read { connection in
            (try connection.scalar("SELECT value FROM counter"), try connection.scalar("SELECT count(*) FROM log"))
        }
        #expect(value == .integer(Int64(tasks)) && logged == .integer(Int64(tasks)))
    }

    @Test func asyncWriteReturnsValueAndRollsBackOnThrow() async throws {
        let test = try TestDatabase()
        let database = test.database
        try await database.write { try $0.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, x TEXT)") }
        let id = try await database.write { connection in
            try connection.scalar("INSERT INTO t (x) VALUES (?1) RETURNING id", ["a"])
        }
        #expect(id == 1)
        await #expect(throws: SQLiteError.self) {
            try await database.write { connection in
                try connection.run("INSERT INTO t (x) VALUES (?1)", ["b"])
                try connection.run("INSERT INTO t (id, x) VALUES (1, 'dup')")
            }
        }
        #expect(try await database.read { try $0.scalar("SELECT count(*) FROM t") } == 1)
    }

    @Test func readsSeeCommittedDataAndRunDuringAWrite() async throws {
        let test = try TestDatabase()
        let database = test.database
        try database.writeSync { try $0.execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);") }
        let inWrite = DispatchSemaphore(value: 0)
        let readDone = DispatchSemaphore(value: 0)
        let writeFinished = DispatchSemaphore(value: 0)
        // The writer runs on a thread of its own, not a task: under a loaded parallel test run the
        // two cooperative threads may be busy with CPU-heavy tests for many seconds.
        blockingQueue().async {
            _ = try? database.writeSync { connection in
                try connection.run("INSERT INTO t VALUES (2)")
                inWrite.signal()
                // Hold the write transaction open until the reads below have finished.
                _ = readDone.wait(timeout: .now() + hangBoundInterval)
            }
            writeFinished.signal()
        }
        #expect(await wait(for: inWrite))
        // Both pool readers and the blocking variant read the last committed snapshot, not the open write.
        async let first = database.read { try $0.scalar("SELECT count(*) FROM t") }
        async let second = database.read { try $0.scalar("SELECT count(*) FROM t") }
        let during = try await [first, second]
        let duringSync = try database.readSync { try $0.scalar("SELECT count(*) FROM t") }
        readDone.signal()
        #expect(await wait(for: writeFinished))
        #expect(during == [1, 1] && duringSync == 1)
        #expect(try await database.read { try $0.scalar("SELECT count(*) FROM t") } == 2)
    }

    @Test func readTransactionIsOneSnapshot() throws {
        let test = try TestDatabase()
        let database = test.database
        try database.writeSync { try $0.execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);") }
        let (before, after) = try database.readSync { connection in
            let before = try connection.scalar("SELECT count(*) FROM t")
            // A commit from another thread while this read transaction is open is not visible in it.
            let done = DispatchSemaphore(value: 0)
            blockingQueue().async {
                _ = try? database.writeSync { try $0.run("INSERT INTO t VALUES (2)") }
                done.signal()
            }
            _ = done.wait(timeout: .now() + .seconds(10))
            return (before, try connection.scalar("SELECT count(*) FROM t"))
        }
        #expect(before == 1 && after == 1)
        #expect(try database.readSync { try $0.scalar("SELECT count(*) FROM t") } == 2)
    }

    @Test func manyReadsShareASmallPool() async throws {
        let test = try TestDatabase(SQLiteConfiguration(readerCount: 1))
        let database = test.database
        try database.writeSync { try $0.execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (7);") }
        let total = try await withThrowingTaskGroup(of: Int64.self) { group in
            for _ in 0..<100 {
                group.addTask { try await database.read { try $0.scalar("SELECT x FROM t") == 7 ? 1 : 0 } }
            }
            return try await group.reduce(0, +)
        }
        #expect(total == 100)
    }

    @Test func closedDatabaseRefusesWork() async throws {
        let test = try TestDatabase()
        test.database.close()
        test.database.close()
        #expect(throws: StorageError.closed) { try test.database.writeSync { _ in } }
        #expect(throws: StorageError.closed) { try test.database.readSync { _ in } }
        await #expect(throws: StorageError.closed) { try await test.database.write { _ in } }
        await #expect(throws: StorageError.closed) { try await test.database.read { _ in } }
    }

    @Test func checkpointTruncatesTheWAL() throws {
        let test = try TestDatabase()
        try test.database.writeSync { connection in
            try connection.execute("CREATE TABLE t (x BLOB)")
            for _ in 0..<50 { try connection.run("INSERT INTO t VALUES (randomblob(1000))") }
        }
        let wal = test.database.path + "-wal"
        #expect(try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int ?? 0 > 0)
        try test.database.checkpoint()
        #expect(try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int == 0)
    }

    @Test func inMemoryPathIsRejected() {
        #expect(throws: SQLiteError.self) { try SQLiteDatabase(path: ":memory:") }
    }
}

@Suite("Migration runner")
struct MigrationTests {
    let first = Migration(name: "0001_a", sql: "CREATE TABLE a (x INTEGER);")
    let second = Migration(name: "0002_b", sql: "CREATE TABLE b (y INTEGER); INSERT INTO b VALUES (1);")

    func tables(_ database: SQLiteDatabase) throws -> [String] {
        try database.readSync { connection in
            try connection.query("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").compactMap { $0.string("name") }
        }
    }

    func recorded(_ database: SQLiteDatabase) throws -> [Row] {
        try database.readSync { try $0.query("SELECT name, checksum, applied_ms FROM schema_migrations ORDER BY name") }
    }

    @Test func checksumIsSHA256HexOfTheSQL() {
        #expect(first.checksum == Hex.encode(SHA256.hash("CREATE TABLE a (x INTEGER);".utf8)))
        #expect(first.checksum.count == 64 && first.checksum == first.checksum.lowercased())
    }

    @Test func appliesInOrderRecordsChecksumsAndIsIdempotent() throws {
        let test = try TestDatabase()
        let database = test.database
        #expect(try MigrationRunner.pending(database, migrations: [second, first]) == ["0001_a", "0002_b"])
        // Given out of order, applied in name order (0002 inserts into b, which only it creates).
        #expect(try MigrationRunner.migrate(database, migrations: [second, first], nowMilliseconds: 1_000) == ["0001_a", "0002_b"])
        let rows = try recorded(database)
        #expect(rows.map { $0.string("name") } == ["0001_a", "0002_b"])
        #expect(rows.map { $0.string("checksum") } == [first.checksum, second.checksum])
        #expect(rows.map { $0.int("applied_ms") } == [1_000, 1_000])
        #expect(try MigrationRunner.pending(database, migrations: [first, second]).isEmpty)
        #expect(try MigrationRunner.migrate(database, migrations: [first, second], nowMilliseconds: 2_000).isEmpty)
        #expect(try recorded(database).map { $0.int("applied_ms") } == [1_000, 1_000])
        #expect(try database.readSync { try $0.scalar("SELECT count(*) FROM b") } == 1)
    }

    @Test func appliesOnlyWhatIsPending() throws {
        let test = try TestDatabase()
        let database = test.database
        #expect(try MigrationRunner.migrate(database, migrations: [first], nowMilliseconds: 1) == ["0001_a"])
        #expect(try MigrationRunner.pending(database, migrations: [first, second]) == ["0002_b"])
        #expect(try MigrationRunner.migrate(database, migrations: [first, second], nowMilliseconds: 2) == ["0002_b"])
        #expect(try recorded(database).map { $0.int("applied_ms") } == [1, 2])
    }

    @Test func changedAppliedMigrationThrowsAndTouchesNothing() throws {
        let test = try TestDatabase()
        let database = test.database
        _ = try MigrationRunner.migrate(database, migrations: [first], nowMilliseconds: 1)
        let edited = Migration(name: "0001_a", sql: "CREATE TABLE a (x INTEGER, z TEXT);")
        let error = #expect(throws: MigrationError.self) {
            try MigrationRunner.migrate(database, migrations: [edited, second], nowMilliseconds: 2)
        }
        #expect(error?.kind == .checksumMismatch(name: "0001_a", recorded: first.checksum, actual: edited.checksum))
        #expect(error.map { "\($0)" }?.contains("0001_a") == true)
        #expect(try tables(database) == ["a", "schema_migrations"])
        #expect(try recorded(database).map { $0.string("name") } == ["0001_a"])
    }

    @Test func failingMigrationRollsBackEntirely() throws {
        let test = try TestDatabase()
        let database = test.database
        let broken = Migration(name: "0003_c", sql: "CREATE TABLE c (z INTEGER); INSERT INTO c VALUES (1); INSERT INTO nowhere VALUES (1);")
        let error = #expect(throws: MigrationError.self) {
            try MigrationRunner.migrate(database, migrations: [first, second, broken], nowMilliseconds: 1)
        }
        guard case .failed(let name, let cause)? = error?.kind else {
            Issue.record("expected .failed, got \(String(describing: error))")
            return
        }
        #expect(name == "0003_c" && cause.message.contains("nowhere"))
        // Earlier migrations committed in their own transactions; the broken one left no trace.
        #expect(try tables(database) == ["a", "b", "schema_migrations"])
        #expect(try recorded(database).map { $0.string("name") } == ["0001_a", "0002_b"])
        #expect(try MigrationRunner.pending(database, migrations: [first, second, broken]) == ["0003_c"])
    }

    @Test func unknownAppliedAndOutOfOrderAreRefused() throws {
        let test = try TestDatabase()
        let database = test.database
        _ = try MigrationRunner.migrate(database, migrations: [first, second], nowMilliseconds: 1)
        let unknown = #expect(throws: MigrationError.self) {
            try MigrationRunner.migrate(database, migrations: [first], nowMilliseconds: 2)
        }
        #expect(unknown?.kind == .unknownApplied(name: "0002_b"))
        let late = Migration(name: "0001_b_late", sql: "CREATE TABLE late (x INTEGER);")
        let outOfOrder = #expect(throws: MigrationError.self) {
            try MigrationRunner.migrate(database, migrations: [first, late, second], nowMilliseconds: 2)
        }
        #expect(outOfOrder?.kind == .outOfOrder(name: "0001_b_late", appliedAfter: "0002_b"))
        let duplicate = #expect(throws: MigrationError.self) {
            try MigrationRunner.migrate(database, migrations: [first, first], nowMilliseconds: 2)
        }
        #expect(duplicate?.kind == .duplicateName("0001_a"))
        #expect(try tables(database) == ["a", "b", "schema_migrations"])
    }

    @Test func initialSchemaFromDiskApplies() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let sql = try String(contentsOf: root.appendingPathComponent("Migrations/sqlite/0001_init.sql"), encoding: .utf8)
        let test = try TestDatabase()
        let database = test.database
        let initial = Migration(name: "0001_init", sql: sql)
        #expect(try MigrationRunner.migrate(database, migrations: [initial], nowMilliseconds: 1) == ["0001_init"])
        #expect(try MigrationRunner.pending(database, migrations: [initial]).isEmpty)
        let names = try tables(database)
        for table in ["users", "sessions", "change_log", "schema_migrations"] { #expect(names.contains(table)) }
        // foreign_keys is on: a session for a missing user is refused.
        let error = #expect(throws: SQLiteError.self) {
            try database.writeSync { connection in
                try connection.run(
                    "INSERT INTO sessions (token_hash, user_id, created_ms, last_used_ms, expires_ms) VALUES (?1, ?2, 1, 1, 2)",
                    [.blob([1]), "nobody"])
            }
        }
        #expect(error?.isForeignKeyViolation == true)
    }
}
