import Dispatch
import Storage
import Synchronization
import TestSupport
import Testing

/// Group commit (`ConnectionQueues.write`): async writes that queue behind a busy writer share one
/// transaction and one COMMIT, each in its own savepoint; a write that throws fails alone; a COMMIT
/// that fails fails every write it carried and stores none of them.
@Suite("Group commit: queued writes share a COMMIT, fail alone, and are acknowledged only once committed")
struct GroupCommitTests {
    static let migrations = [
        Migration(
            name: "0001_group_commit",
            sql: """
                CREATE TABLE parent (id BIGINT PRIMARY KEY, name TEXT NOT NULL UNIQUE);
                CREATE TABLE child (
                    id BIGINT PRIMARY KEY,
                    parent_id BIGINT NOT NULL REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED
                );
                """)
    ]

    /// Holds the writer busy (a `withWriter` body waiting on a semaphore) while `count` writes queue
    /// behind it, then lets them all run; returns how many COMMITs carried them and each result.
    private static func queuedBehindBusyWriter(
        _ database: any SQLDatabase, count: Int, _ body: @escaping @Sendable (Int, any SQLConnection) throws -> Void
    ) async throws -> (commits: Int, results: [Result<Void, any Error>]) {
        let commits = Mutex(0)
        database.onCommit { commits.withLock { $0 += 1 } }
        let release = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        blockingQueue().async {
            _ = try? database.withWriter { _ in
                holding.signal()
                release.wait()
            }
        }
        holding.wait()
        let tasks = (0..<count).map { index in
            Task { () -> Result<Void, any Error> in
                do {
                    try await database.write { try body(index, $0) }
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
        }
        // All queued (in whatever order the tasks ran). The bound is the hang bound: while the PostgreSQL
        // suites set up their clusters, they hold the cooperative threads the tasks need.
        #expect(await eventually { database.queuedWrites == count })
        release.signal()
        var results: [Result<Void, any Error>] = []
        for task in tasks { results.append(await task.value) }
        return (commits.withLock { $0 }, results)
    }

    @Test("ten queued writes commit together, each seeing the ones before it", arguments: TestBackend.available)
    func queuedWritesShareOneCommit(backend: TestBackend) async throws {
        let storage = try backend.open(migrations: Self.migrations)
        let seen = Mutex<[Int64]>([])
        let (commits, results) = try await Self.queuedBehindBusyWriter(storage.database, count: 10) { index, connection in
            let before = try #require(integer(try connection.scalar("SELECT COUNT(*) FROM parent")))
            seen.withLock { $0.append(before) }
            try connection.run("INSERT INTO parent (id, name) VALUES (?1, ?2)", [.integer(Int64(index)), .text("p\(index)")])
        }
        #expect(results.allSatisfy { if case .success = $0 { true } else { false } })
        #expect(commits == 1)
        // Each body saw the rows of the writes batched before it, in one transaction.
        #expect(seen.withLock { $0 } == Array(0..<10))
        let stored = try await storage.database.read { integer(try $0.scalar("SELECT COUNT(*) FROM parent")) }
        #expect(stored == 10)
    }

    @Test("a write that throws fails alone; the writes around it commit", arguments: TestBackend.available)
    func failingWriteFailsAlone(backend: TestBackend) async throws {
        let storage = try backend.open(migrations: Self.migrations)
        let (commits, results) = try await Self.queuedBehindBusyWriter(storage.database, count: 6) { index, connection in
            try connection.run("INSERT INTO parent (id, name) VALUES (?1, ?2)", [.integer(Int64(index)), .text("p\(index)")])
            // The fourth write's second statement violates the unique name after its first succeeded.
            if index == 3 { try connection.run("INSERT INTO parent (id, name) VALUES (100, 'p0')") }
        }
        for (index, result) in results.enumerated() {
            switch result {
            case .success: #expect(index != 3)
            case .failure(let error):
                #expect(index == 3)
                #expect(error.storageFailure?.isUniqueViolation == true, "\(error)")
            }
        }
        // The writes queued after the failed one go to the next COMMIT (none when it was the last).
        #expect(commits == 1 || commits == 2)
        let ids = try await storage.database.read { connection in
            try connection.query("SELECT id FROM parent ORDER BY id").map { $0.int("id") }
        }
        #expect(ids == [0, 1, 2, 4, 5])
    }

    @Test(
        "the batch's first write (no savepoint) that throws fails alone: nothing of it is stored, the rest commit next",
        arguments: TestBackend.available)
    func failingFirstWriteFailsAlone(backend: TestBackend) async throws {
        let storage = try backend.open(migrations: Self.migrations)
        let first = Mutex<Int?>(nil)
        let (commits, results) = try await Self.queuedBehindBusyWriter(storage.database, count: 5) { index, connection in
            let isFirst = first.withLock { first in
                if first == nil { first = index }
                return first == index
            }
            try connection.run("INSERT INTO parent (id, name) VALUES (?1, ?2)", [.integer(Int64(index)), .text("p\(index)")])
            // The first write to run fails after its first statement succeeded: a unique violation.
            if isFirst { try connection.run("INSERT INTO parent (id, name) VALUES (100, ?1)", [.text("p\(index)")]) }
        }
        let failed = try #require(first.withLock { $0 })
        for (index, result) in results.enumerated() {
            switch result {
            case .success: #expect(index != failed)
            case .failure(let error):
                #expect(index == failed)
                #expect(error.storageFailure?.isUniqueViolation == true, "\(error)")
            }
        }
        // The failed write's transaction held nothing else; the other four commit in the next one.
        #expect(commits == 1)
        let ids = try await storage.database.read { connection in
            try connection.query("SELECT id FROM parent ORDER BY id").map { $0.int("id") }
        }
        #expect(ids == (0..<5).filter { $0 != failed }.map { Int64($0) })
    }

    @Test("a COMMIT that fails fails every write it carried and stores none", arguments: TestBackend.available)
    func failedCommitFailsTheBatch(backend: TestBackend) async throws {
        let storage = try backend.open(migrations: Self.migrations)
        let (commits, results) = try await Self.queuedBehindBusyWriter(storage.database, count: 3) { index, connection in
            if index == 1 {
                // A dangling reference, checked only at COMMIT (deferred constraint).
                try connection.run("INSERT INTO child (id, parent_id) VALUES (1, 999)")
            } else {
                try connection.run("INSERT INTO parent (id, name) VALUES (?1, ?2)", [.integer(Int64(index)), .text("p\(index)")])
            }
        }
        #expect(commits == 0)
        for result in results {
            guard case .failure(let error) = result else {
                Issue.record("a write acknowledged although its COMMIT failed")
                continue
            }
            #expect(error.storageFailure?.isConstraintViolation == true, "\(error)")
        }
        let stored = try await storage.database.read { connection in
            integer(try connection.scalar("SELECT (SELECT COUNT(*) FROM parent) + (SELECT COUNT(*) FROM child)"))
        }
        #expect(stored == 0)
        // The writer is usable afterwards.
        try await storage.database.write { try $0.run("INSERT INTO parent (id, name) VALUES (7, 'p7')") }
    }
}

private func integer(_ value: SQLValue) -> Int64? {
    if case .integer(let number) = value { number } else { nil }
}
