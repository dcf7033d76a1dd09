import SQLite
import Storage
import Synchronization
import TestSupport
import Testing

/// the commit observer was a closure stored as a generic `Mutex` value; every
/// `withLock { $0 }` wrapped it in one more reabstraction thunk, so the N-th commit walked N nested
/// thunks (writes/s fell 2,825 → 727 over four runs; a stack overflow after ~400,000 commits).
/// The stack depth inside the observer is the count of work: it must not grow with history.
@Suite("SQLiteDatabase.onCommit: per-commit cost does not grow")
struct CommitObserverTests {
    @Test("the observer runs at the same stack depth on the 1st and the 100,000th commit")
    func observerDepthStaysFlat() throws {
        let directory = TemporaryDirectory(prefix: "commit-observer")
        defer { withExtendedLifetime(directory) {} }
        let db = try SQLiteDatabase(path: directory.file(named: "t.sqlite"))
        defer { db.close() }
        let depths = Mutex<(calls: Int, first: Int?, last: Int?)>((0, nil, nil))
        let commits = 100_000
        db.onCommit {
            let call = depths.withLock { state in
                state.calls += 1
                return state.calls
            }
            guard call == 1 || call == commits else { return }
            let depth = StackDepth.current()
            depths.withLock { state in
                if call == 1 { state.first = depth } else { state.last = depth }
            }
        }
        for _ in 0..<commits {
            try db.writeSync { _ in }
        }
        let (calls, first, last) = depths.withLock { $0 }
        #expect(calls == commits)
        let firstDepth = try #require(first)
        let lastDepth = try #require(last)
        #expect(lastDepth == firstDepth, "the observer's call path grew from \(firstDepth) to \(lastDepth) frames")
    }

    @Test("async writes call the observer at the same depth on the 1st and the 2,000th commit")
    func asyncWritesStayFlat() async throws {
        let directory = TemporaryDirectory(prefix: "commit-observer-async")
        defer { withExtendedLifetime(directory) {} }
        let db = try SQLiteDatabase(path: directory.file(named: "t.sqlite"))
        defer { db.close() }
        let commits = 2_000
        let depths = Mutex<(calls: Int, first: Int?, last: Int?)>((0, nil, nil))
        db.onCommit {
            depths.withLock { state in
                state.calls += 1
                if state.calls == 1 { state.first = StackDepth.current() }
                if state.calls == commits { state.last = StackDepth.current() }
            }
        }
        for _ in 0..<commits {
            try await db.write { _ in }
        }
        let (calls, first, last) = depths.withLock { $0 }
        #expect(calls == commits)
        #expect(try #require(last) == (try #require(first)))
    }
}
