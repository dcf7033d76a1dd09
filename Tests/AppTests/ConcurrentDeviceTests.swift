import Domain
import Foundation
import Storage
import Store
import Synchronization
import TestSupport
import Testing
import Wire

@testable import App

/// A device's registration is a `.concurrent` write (`DeviceStore.register`): the account's row and
/// the push address are locked before anything is read, so registrations that arrive at once on two
/// instances still keep one address on one device and an account within its device limit; the ones
/// that must move an address or drop a device run again as `.immediate`.
@Suite("Concurrent device registrations: one address, one device; the limit holds")
struct ConcurrentDeviceTests {
    static let token = String(repeating: "cd", count: 32)

    @Test("eight accounts registering one address at once on two instances: each answers, one device holds it")
    func oneAddressAtOnce() async throws {
        let h = try AppHarness()
        var accounts: [(token: String, id: String)] = []
        for i in 0..<8 { accounts.append(try await h.register("user\(i)@example.com", name: "User \(i)")) }
        let other = try h.openAnotherHandle()
        defer { other.close() }
        let now = h.clock.nowMilliseconds()
        let registrations = accounts.enumerated().map { index, account in
            Task { () -> String in
                if index % 2 == 0 {
                    let reply = await h.send(.put, "/v1/me/devices/phone", json: DeviceTests.apns(Self.token), token: account.token)
                    return reply.status == 201 ? "created" : "\(reply.status) \(reply.text)"
                }
                // Another instance: its own writer connections, the same store call the route makes.
                let (_, outcome) = try await other.write(.concurrent) { db in
                    try Self.register(account.id, "phone", Self.token, at: now, on: db)
                }
                return outcome == .created ? "created" : "updated"
            }
        }
        var outcomes: [String] = []
        for registration in registrations { outcomes.append(try await registration.value) }
        #expect(outcomes == Array(repeating: "created", count: 8), "\(outcomes)")
        let holders = try await h.database.read { db in
            try db.query("SELECT user_id FROM devices WHERE provider = 'apns' AND address = ?1", [.text(Self.token)])
        }
        #expect(holders.count == 1, "one address reaches one device")
        #expect(try await h.database.read { db in try db.scalar("SELECT COUNT(*) FROM devices") } == .integer(1))
    }

    @Test("an account one short of its limit registering four new devices at once on four instances: the limit holds")
    func limitAtOnce() async throws {
        let h = try AppHarness()
        let (token, id) = try await h.register("ana@example.com")
        for i in 0..<(DeviceRules.maxDevicesPerUser - 1) {
            h.clock.advance(by: 1_000)
            try await h.expect(201, .put, "/v1/me/devices/old\(i)", json: DeviceTests.apns(String(format: "%064x", i + 1)), token: token)
        }
        h.clock.advance(by: 1_000)
        // Each registration in a transaction of its own, as four instances would write them.
        let handles = [h.database] + (try (0..<3).map { _ in try h.openAnotherHandle() })
        defer { for handle in handles.dropFirst() { handle.close() } }
        let now = h.clock.nowMilliseconds()
        let registrations = handles.enumerated().map { index, handle in
            Task {
                let address = String(format: "%064x", 1_000 + index)
                return try await handle.write(.concurrent) { db in try Self.register(id, "new\(index)", address, at: now, on: db) }.1
            }
        }
        for registration in registrations { #expect(try await registration.value == .created) }
        let ids = try await h.database.read { db in
            try db.query("SELECT device_id FROM devices WHERE user_id = ?1", [.text(id)]).compactMap { $0.string("device_id") }
        }
        #expect(ids.count == DeviceRules.maxDevicesPerUser, "\(ids.sorted())")
        #expect((0..<4).allSatisfy { ids.contains("new\($0)") }, "the new ones are the most recently seen: \(ids.sorted())")
        #expect(!ids.contains("old0") && !ids.contains("old1") && !ids.contains("old2"), "the least recently seen went")
    }

    @Test("the same device again runs beside other writes; moving its address to another account runs alone")
    func refreshRunsConcurrently() async throws {
        let h = try AppHarness()
        let (ana, anaID) = try await h.register("ana@example.com")
        let (_, benID) = try await h.register("ben@example.com", name: "Ben")
        try await h.expect(201, .put, "/v1/me/devices/phone", json: DeviceTests.apns(Self.token), token: ana)
        let now = h.clock.nowMilliseconds() + 1_000
        let postgres = h.database.dialect == .postgres
        // Each run of the body: whether it ran alone.
        let runs = Mutex<[Bool]>([])
        let (refreshed, outcome) = try await h.database.write(.concurrent) { db in
            runs.withLock { $0.append(db.writesAlone) }
            return try Self.register(anaID, "phone", Self.token, at: now, on: db)
        }
        #expect(outcome == .updated && refreshed.lastSeenAt == Timestamp(milliseconds: now))
        #expect(runs.withLock { $0 } == [!postgres], "once, beside other writes on PostgreSQL")

        runs.withLock { $0 = [] }
        let (_, moved) = try await h.database.write(.concurrent) { db in
            runs.withLock { $0.append(db.writesAlone) }
            return try Self.register(benID, "tablet", Self.token, at: now, on: db)
        }
        #expect(moved == .created)
        #expect(runs.withLock { $0 } == (postgres ? [false, true] : [true]), "again, alone, on PostgreSQL")
        let holders = try await h.database.read { db in
            try db.query("SELECT user_id, device_id FROM devices").map { "\($0.string("user_id") ?? "")/\($0.string("device_id") ?? "")" }
        }
        #expect(holders == ["\(benID)/tablet"])
    }

    /// `DeviceStore.register` of an iPhone's APNs `token` as `deviceID`, as the route calls it.
    static func register(_ userID: String, _ deviceID: String, _ token: String, at now: Int64, on db: any SQLConnection) throws
        -> (Device, DeviceStore.Outcome)
    {
        try DeviceStore.register(
            userID: userID, deviceID: deviceID, platform: .ios, provider: .apns, address: .token(token), appVersion: "1.0",
            locale: nil, sessionHash: nil, at: now, on: db)
    }
}
