import Dispatch
import Domain
import Foundation
import Postgres
import Storage
import Store
import Synchronization
import TestSupport
import Testing

/// `.concurrent` writes (`TransactionKind`): on PostgreSQL, writes of several instances run together
/// and serialise only at the change log's append at COMMIT; resuming readers still never skip a seq, and
/// a write that finds a row locked in the middle of a group commit runs again first in the next one.
@Suite("Concurrent writes: instances write together, the change log stays gap-free and chained")
struct ConcurrentWriteTests {
    static let itemMigrations = [
        Migration(name: "0001_items", sql: "CREATE TABLE item (k TEXT PRIMARY KEY, n BIGINT NOT NULL)")
    ]

    /// Adds one to item `key`'s counter as a concurrent write would: the row locked first.
    static func increment(_ key: String, on db: any SQLConnection) throws -> Int64 {
        guard case .integer(let n) = try db.scalar("SELECT n FROM item WHERE k = ?1" + db.forUpdate, [.text(key)]) else {
            throw StorageError.closed
        }
        try db.run("UPDATE item SET n = ?2 WHERE k = ?1", [.text(key), .integer(n + 1)])
        return n + 1
    }

    @Test(
        """
        PostgreSQL: a concurrent write's row lock does not hold off another write that inserts a row pointing at \
        the locked one (its foreign-key check), and still holds off a second locker
        """,
        .enabled(if: TestBackend.available.contains(.postgres)), .timeLimit(.minutes(5)))
    func rowLockLeavesForeignKeyChecksAlone() async throws {
        let database = try PostgresDatabase(url: try PostgresServer.freshDatabaseURL(), options: PostgresConfiguration(readerCount: 1))
        defer { database.close() }
        let migrations =
            Self.itemMigrations + [Migration(name: "0002_notes", sql: "CREATE TABLE note (k TEXT NOT NULL REFERENCES item(k), text TEXT)")]
        _ = try MigrationRunner.migrate(database, migrations: migrations, nowMilliseconds: 1)
        try database.writeSync { try $0.run("INSERT INTO item (k, n) VALUES ('a', 0)") }
        let other = try openAnotherHandle(database)
        defer { other.close() }

        let held = try await HeldWrite(on: database) { db in try Self.increment("a", on: db) }
        // A lock wait would be a hang: `lock_timeout` turns it into an error (`FOR UPDATE` made one here).
        try await blocking {
            try other.writeSync(.concurrent) { db in
                try db.run("SET LOCAL lock_timeout = '30s'")
                try db.run("INSERT INTO note (k, text) VALUES ('a', 'while a is locked')")
            }
        }
        // A second locker of the row still fails at once with NOWAIT: the lock still excludes writers.
        let refused = try await blocking { () -> Bool in
            do {
                try other.writeSync(.concurrent) { db in
                    db.rowLockWait = .fail
                    _ = try Self.increment("a", on: db)
                }
                return false
            } catch let failure as any StorageFailure where failure.isRowLockUnavailable {
                return true
            }
        }
        #expect(refused, "the row stays locked against another write that locks it")
        #expect(try await held.commit() == 1)
        #expect(try database.readSync { try $0.scalar("SELECT COUNT(*) FROM note") } == .integer(1))
    }

    @Test(
        """
        PostgreSQL: in a group commit, a write whose row another instance holds leaves the batch without failing; \
        the writes before it commit at once, it waits first in the next transaction and sees the holder's commit
        """,
        .enabled(if: TestBackend.available.contains(.postgres)), .timeLimit(.minutes(5)))
    func lockedRowWaitsForTheNextTransaction() async throws {
        let database = try await Self.oneConcurrentWriter(items: ["gate", "a", "b", "held", "c"])
        defer { database.close() }
        // Another instance holds "held": it changed the row and has not committed yet.
        let held = try Holder(database, row: "held")
        try await blocking { held.holding.wait() }
        let gate = try await GatedWriter(database)
        var tasks: [Task<Int64, any Error>] = []
        for (index, key) in ["a", "b", "held", "c"].enumerated() {
            tasks.append(Task { try await database.write(.concurrent) { try Self.increment(key, on: $0) } })
            #expect(await eventually { database.queuedWrites == index + 1 })
        }
        try await gate.open()
        // "a" and "b" commit while "held" is still held: their batch did not wait for it.
        #expect(try await tasks[0].value == 1)
        #expect(try await tasks[1].value == 1)
        try await held.commit()
        // "held" waited for the holder's commit and read its value; the write behind it follows.
        #expect(try await tasks[2].value == 101)
        #expect(try await tasks[3].value == 1)
    }

    @Test(
        """
        PostgreSQL: in a group commit, a write that finds it must run alone leaves the batch having changed \
        nothing; the writes around it commit, it runs again as .immediate
        """,
        .enabled(if: TestBackend.available.contains(.postgres)), .timeLimit(.minutes(5)))
    func writeThatMustRunAloneRunsAgainAsImmediate() async throws {
        let database = try await Self.oneConcurrentWriter(items: ["gate", "a", "alone", "c"])
        defer { database.close() }
        let gate = try await GatedWriter(database)
        let runs = Runs()
        var writes: [Task<Int64, any Error>] = []
        for (index, key) in ["a", "alone", "c"].enumerated() {
            writes.append(
                Task {
                    try await database.write(.concurrent) { db in
                        let n = try Self.increment(key, on: db)
                        guard key == "alone" else { return n }
                        runs.alone.withLock { $0.append(db.writesAlone) }
                        if !db.writesAlone { throw StorageError.exclusiveWriteNeeded }
                        return n
                    }
                })
            #expect(await eventually { database.queuedWrites == index + 1 })
        }
        try await gate.open()
        for write in writes { #expect(try await write.value == 1, "each counter once: the undone run left nothing") }
        #expect(runs.alone.withLock { $0 } == [false, true])
    }

    @Test(
        "PostgreSQL: a key lock asked for without waiting while another instance holds it fails at once; free once that commits",
        .enabled(if: TestBackend.available.contains(.postgres)), .timeLimit(.minutes(5)))
    func keyLockWithoutWaiting() async throws {
        let database = try PostgresDatabase(url: try PostgresServer.freshDatabaseURL(), options: PostgresConfiguration(readerCount: 1))
        defer { database.close() }
        let other = try openAnotherHandle(database)
        defer { other.close() }
        /// Takes key 7 of space 1 (`rowLockWait` as given) and throws unless it is held.
        @Sendable func lock(_ wait: RowLockWait) throws -> Bool {
            try other.writeSync(.concurrent) { db in
                db.rowLockWait = wait
                let statement = db.keyLock(space: 1, key: 7)
                try db.requireKeyLock(try db.query(statement.sql, statement.bindings))
                return true
            }
        }
        let held = try await HeldWrite(on: database) { db in
            let statement = db.keyLock(space: 1, key: 7)
            try db.requireKeyLock(try db.query(statement.sql, statement.bindings))
        }
        let refused = try await blocking { () -> Bool in
            do { return !(try lock(.fail)) } catch let failure as any StorageFailure where failure.isRowLockUnavailable { return true }
        }
        #expect(refused)
        // Another key is free meanwhile.
        #expect(
            try await blocking {
                try other.writeSync(.concurrent) { db in
                    db.rowLockWait = .fail
                    let statement = db.keyLock(space: 1, key: 8)
                    try db.requireKeyLock(try db.query(statement.sql, statement.bindings))
                    return true
                }
            })
        try await held.commit()
        #expect(try await blocking { try lock(.fail) })
        #expect(try await blocking { try lock(.wait) })
    }

    /// Each run of a write body: whether it ran alone (`SQLConnection.writesAlone`).
    final class Runs: Sendable {
        let alone = Mutex<[Bool]>([])
    }

    /// A fresh database with the items table holding `items` at 0 and one connection for concurrent
    /// writes, so the writes queued while it waits share its next group commit.
    static func oneConcurrentWriter(items: [String]) async throws -> PostgresDatabase {
        let database = try PostgresDatabase(
            url: try PostgresServer.freshDatabaseURL(), options: PostgresConfiguration(readerCount: 1, concurrentWriterCount: 1))
        _ = try MigrationRunner.migrate(database, migrations: Self.itemMigrations, nowMilliseconds: 1)
        try await database.write { db in
            for key in items { try db.run("INSERT INTO item VALUES (?1, 0)", [.text(key)]) }
        }
        return database
    }

    /// The concurrent writer held at a gate: another instance holds item "gate", and a concurrent write
    /// incrementing it waits for that row (`init` returns once it does), so writes queued meanwhile
    /// wait behind it, in the order they were queued.
    final class GatedWriter: Sendable {
        private let holder: Holder
        private let first: Task<Int64, any Error>

        init(_ database: PostgresDatabase) async throws {
            holder = try Holder(database, row: "gate")
            try await blocking { [holder] in holder.holding.wait() }
            first = Task { try await database.write(.concurrent) { try ConcurrentWriteTests.increment("gate", on: $0) } }
            #expect(
                await eventually {
                    let waiting = try? database.readSync {
                        try $0.scalar(
                            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")
                    }
                    return database.queuedWrites == 0 && waiting == .integer(1)
                })
        }

        /// Commits the holder; the gated write goes on and reads its commit.
        func open() async throws {
            try await holder.commit()
            #expect(try await first.value == 101)
        }
    }

    /// Another instance that sets `row`'s counter to 100 and holds it (uncommitted) until `commit`.
    final class Holder: Sendable {
        let holding = DispatchSemaphore(value: 0)
        private let release = DispatchSemaphore(value: 0)
        private let done = DispatchSemaphore(value: 0)
        private let other: any SQLDatabase

        init(_ database: any SQLDatabase, row: String) throws {
            other = try openAnotherHandle(database)
            blockingQueue().async { [other, holding, release, done] in
                _ = try? other.withWriter { db in
                    try db.execute("BEGIN")
                    try db.run("UPDATE item SET n = 100 WHERE k = ?1", [.text(row)])
                    holding.signal()
                    release.wait()
                    try db.execute("COMMIT")
                }
                done.signal()
            }
        }

        /// Commits (releasing the row) and waits until it did.
        func commit() async throws {
            release.signal()
            try await blocking { [done] in done.wait() }
            other.close()
        }
    }

    @Test(
        """
        randomized: two instances' concurrent profile changes and exclusive writes interleave with resuming readers; \
        every reader sees every seq once, in order; no change is lost; the chain verifies
        """,
        arguments: TestBackend.available)
    func readersNeverSkipASeq(backend: TestBackend) async throws {
        let storage = try backend.open(migrations: Schema.migrations(for: backend.dialect))
        let first = storage.database
        let second = try openAnotherHandle(first)
        defer { second.close() }
        let seed = UInt64.random(in: 0...UInt64.max)
        print("ConcurrentWriteTests.readersNeverSkipASeq seed \(seed) on \(backend)")
        let users = try first.writeSync { db in
            try (0..<6).map { index in
                let user = try AccountStore.register(
                    email: "u\(index)@example.com", displayName: "U\(index)", passwordHash: "h", tier: .premium, at: 1, on: db)
                _ = try GroupStore.create(
                    name: "G\(index)", description: nil, iconName: nil, colorTag: nil, maxMembers: 10, owner: user, at: 1, on: db)
                return user.id
            }
        }
        let startSeq = try first.readSync { try ChangeLog.latestSeq(on: $0) }
        let writersPerHandle = 4
        let writesPerWriter = 20
        let done = WritersDone()
        let readers = [first, second, first].map { database in
            Task {
                try await Self.resumingReader(database, from: startSeq) { done.count.load(ordering: .acquiring) == 2 * writersPerHandle }
            }
        }
        var writers: [Task<Void, any Error>] = []
        for (handleIndex, database) in [first, second].enumerated() {
            for writer in 0..<writersPerHandle {
                var random = SeededGenerator(seed: seed &+ UInt64(handleIndex * 100 + writer))
                let plan = (0..<writesPerWriter).map { _ in (users[Int.random(in: 0..<users.count, using: &random)], random.next() % 5) }
                writers.append(
                    Task {
                        defer { done.count.add(1, ordering: .releasing) }
                        for (step, (userID, choice)) in plan.enumerated() {
                            if choice == 0 {
                                // An exclusive write between them: it runs alone, appending a row of its own.
                                try await database.write { db in
                                    try ChangeLog.append(
                                        [Change(topic: ChangeLog.systemTopic, kind: .group, op: .modified, entityID: "x", document: nil)],
                                        event: ChangeEvent(rawValue: "exclusive"), actor: .system, at: 2, on: db)
                                }
                            } else {
                                let name = "N\(handleIndex)-\(writer)-\(step)"
                                try await database.write(.concurrent) { db in
                                    _ = try AccountStore.updateProfile(
                                        userID: userID, change: AccountStore.ProfileChange(displayName: name), expectedVersion: nil,
                                        actor: .user(userID), at: 2, on: db)
                                }
                            }
                        }
                    })
            }
        }
        for writer in writers { try await writer.value }
        let latest = try first.readSync { try ChangeLog.latestSeq(on: $0) }
        for reader in readers {
            let seen = try await reader.value
            #expect(seen == Array((startSeq + 1)...latest), "a reader skipped or repeated a seq (seed \(seed))")
        }
        let report = try first.readSync { try ChangeLogChain.verify(on: $0) }
        #expect(report.firstBroken == nil, "chain broken at \(report.firstBroken ?? 0): \(report.problem ?? "")")
        // No profile change was lost: each user's version counts its changes, and the change log holds
        // that user's documents in version order (a row's state and its log agree).
        try first.readSync { db in
            for userID in users {
                let updates = try db.query(
                    "SELECT document FROM change_log WHERE topic = ?1 AND kind = 'user' AND event = 'user_updated' ORDER BY seq",
                    [.text(ChangeLog.userTopic(userID))])
                let versions = updates.compactMap { row -> Int64? in
                    guard let text = row.string("document"),
                        let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
                    else { return nil }
                    return (object["version"] as? NSNumber)?.int64Value
                }
                #expect(versions == versions.sorted() && Set(versions).count == versions.count)
                let stored = try db.scalar("SELECT version FROM users WHERE id = ?1", [.text(userID)])
                #expect(stored == .integer((versions.last ?? 1)), "user \(userID)")
            }
        }
    }
}

extension ConcurrentWriteTests {
    /// Reads the change log from `start` on, resuming where it stopped as a realtime client does,
    /// until `finished` held before a read that found nothing new; returns every seq it saw, in order.
    static func resumingReader(
        _ database: any SQLDatabase, from start: Int64, until finished: @escaping @Sendable () -> Bool
    ) async throws -> [Int64] {
        var seen: [Int64] = []
        var since = start
        while true {
            let writersDone = finished()
            let from = since
            let rows = try await database.read { db in
                try db.query("SELECT seq FROM change_log WHERE seq > ?1 ORDER BY seq LIMIT 25", [.integer(from)])
            }
            let seqs = rows.compactMap { $0.int("seq") }
            seen += seqs
            since = seqs.last ?? since
            if seqs.isEmpty, writersDone { return seen }
            if seqs.isEmpty { await Task.yield() }
        }
    }
}

/// How many writer tasks finished.
final class WritersDone: Sendable {
    let count = Atomic<Int>(0)
}

/// SplitMix64: the same sequence for a seed on every run (printed, so a failure can be replayed).
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
