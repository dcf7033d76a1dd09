import Dispatch
import Domain
import Foundation
import Storage
import Store
import Synchronization
import TestSupport
import Testing

/// a reader must never see seq N+1 before seq N has committed — a resume past a hole would
/// skip N forever. Writers on several handles (other processes on SQLite, other instances on
/// PostgreSQL, each with its own connections) append at once while a reader follows the log.
@Suite("Change log: concurrent writers on several handles, a following reader never sees a hole")
struct ChangeLogOrderingTests {
    static let writers = 4
    static let writesPerWriter = 150

    @Test("every read after the reader's position starts exactly at position + 1, and all writes arrive", arguments: TestBackend.available)
    func noHoles(_ backend: TestBackend) async throws {
        let storage = try backend.open(migrations: Schema.migrations(for: backend.dialect))
        let reader = storage.database
        let handles = try (0..<Self.writers).map { _ in try openAnotherHandle(storage.database) }
        let writing = DispatchGroup()
        let failures = Mutex<[String]>([])
        for (w, handle) in handles.enumerated() {
            blockingQueue().async(group: writing) {
                for i in 0..<Self.writesPerWriter {
                    do {
                        _ = try handle.writeSync { c in
                            try AccountStore.register(
                                email: "w\(w)-\(i)@example.com", displayName: "W", passwordHash: "h", tier: .free,
                                at: Int64(i), on: c)
                        }
                    } catch {
                        failures.withLock { $0.append("writer \(w) write \(i): \(error)") }
                    }
                }
            }
        }
        let finished = Mutex(false)
        writing.notify(queue: .global()) { finished.withLock { $0 = true } }

        // The reader follows on a Dispatch thread (`blocking`): it must not hold a cooperative thread
        // that other suites' server tasks need while it waits for the writers.
        let (position, holes, reads) = try await blocking { () throws -> (Int64, [String], Int) in
            var position: Int64 = 0
            var holes: [String] = []
            var reads = 0
            while true {
                let done = finished.withLock { $0 }  // read after the writers finished → sees everything
                let batches = try reader.readSync { try ChangeFeed.batches(after: position, on: $0) }
                reads += 1
                for batch in batches {
                    if batch.rows[0].seq != position + 1 { holes.append("after \(position) came \(batch.rows[0].seq)") }
                    position = batch.lastSeq
                }
                if done && batches.isEmpty { break }
                if batches.isEmpty { usleep(1_000) }  // nothing new yet: yield the core to the writers
            }
            return (position, holes, reads)
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 }.prefix(3))")
        #expect(holes.isEmpty, "\(holes.prefix(5))")
        #expect(position == Int64(Self.writers * Self.writesPerWriter), "after \(reads) reads")
        #expect(try reader.readSync { try ChangeLogChain.verify(on: $0) }.firstBroken == nil)
    }
}
