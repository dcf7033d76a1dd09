import Dispatch
import Foundation
import SQLite
import Storage
import Synchronization
import TestSupport
import Testing

@Suite("ReaderPool: blocked readers")
struct ReaderPoolStarvationTests {
    /// 1,000 blocking reads at once from Dispatch's global pool (as the realtime feed's snapshots
    /// do): every pool thread ends up blocked in `readSync`, so a reader handed back must wake its
    /// waiter without needing another Dispatch thread. Before that, the reads (and this test run) hung for good.
    @Test("1,000 concurrent readSync calls from Dispatch threads on one reader all finish")
    func manyBlockedReaders() async throws {
        let directory = TemporaryDirectory(prefix: "starve")
        defer { withExtendedLifetime(directory) {} }
        let db = try SQLiteDatabase(path: directory.file(named: "t.sqlite"), options: SQLiteConfiguration(readerCount: 1))
        defer { db.close() }
        try db.writeSync { c in try c.execute("CREATE TABLE t (x INTEGER)") }
        let calls = 1000
        let finished = Atomic<Int>(0)
        let group = DispatchGroup()
        for _ in 0..<calls {
            group.enter()
            DispatchQueue.global().async {
                _ = try? db.readSync { c in
                    usleep(200)  // hold the reader a little so the waiters pile up
                    return try c.queryOne("SELECT count(*) FROM t")
                }
                finished.add(1, ordering: .relaxed)
                group.leave()
            }
        }
        // Wait on a thread of our own: the Dispatch pool may be the thing that is stuck.
        let completed = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            Thread { continuation.resume(returning: group.wait(timeout: .now() + .seconds(60)) == .success) }.start()
        }
        #expect(completed, "\(finished.load(ordering: .relaxed)) of \(calls) reads finished")
    }
}
