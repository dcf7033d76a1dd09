import Domain
import Foundation
import Realtime
import SQLite
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

@Suite("Realtime snapshots — shared encoding per (group, seq)")
struct SnapshotCacheTests {
    @Test("members share one encoding per seq; a new seq re-reads; access is still checked for each reader")
    func cachedButChecked() async throws {
        let f = try await GroupFixture.make()
        let cache = SnapshotCache()
        let now = f.h.clock.nowMilliseconds()
        func read(_ userID: String) throws -> (seq: Int64, data: [UInt8]) {
            try f.h.database.readSync { db in
                try RealtimeSnapshots.read(.group(f.groupID), userID: userID, at: now, cache: cache, on: db)
            }
        }
        let first = try read(f.owner.id)
        #expect(cache.data(groupID: f.groupID, seq: first.seq) == first.data)
        #expect(try read(f.member.id).data == first.data)
        #expect(throws: DomainError.self) { try read(f.outsider.id) }
        #expect(throws: DomainError.self) { try read(f.removed.id) }

        try await f.h.expect(200, .patch, "/v1/groups/\(f.groupID)", json: #"{"name":"Renamed"}"#, token: f.owner.token)
        let second = try read(f.member.id)
        #expect(second.seq > first.seq)
        let group = try #require(try JSONSerialization.jsonObject(with: Data(second.data)) as? [String: Any])
        #expect((group["group"] as? [String: Any])?["name"] as? String == "Renamed")
        #expect(cache.data(groupID: f.groupID, seq: first.seq) == nil, "the older seq is replaced")
    }

    @Test("bounded: past maxEntries groups the cache starts over; an older seq never replaces a newer one")
    func bounded() {
        let cache = SnapshotCache()
        for i in 0..<SnapshotCache.maxEntries { cache.store(groupID: "g\(i)", seq: 1, data: [UInt8(i % 256)]) }
        #expect(cache.data(groupID: "g0", seq: 1) == [0])
        cache.store(groupID: "new", seq: 1, data: [9])
        #expect(cache.data(groupID: "g0", seq: 1) == nil)
        #expect(cache.data(groupID: "new", seq: 1) == [9])
        cache.store(groupID: "new", seq: 5, data: [5])
        cache.store(groupID: "new", seq: 3, data: [3])
        #expect(cache.data(groupID: "new", seq: 5) == [5])
    }
}
