import Domain
import Foundation
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// Personal alarms: backup and sync across one user's devices (docs/personal-sync.md).
/// "Devices" are two sessions of one account; the clock is the harness's manual clock.
@Suite("Personal alarms — create or replace by client id, versions, last-write-wins, tombstones, sync")
struct PersonalAlarmTests {
    static let alarmA = "0b5c3f6e-8d2a-4c1b-9e7f-1a2b3c4d5e6f"
    static let alarmB = "1c6d4a7f-9e3b-4d2c-8f80-2b3c4d5e6f70"

    static func body(_ title: String, updatedAt: String? = nil, version: Int64? = nil, extra: String = "") -> String {
        var json = #"{"title":"\#(title)",\#(SharedAlarmFixture.dailyTen)"#
        if let updatedAt { json += #","updated_at":"\#(updatedAt)""# }
        if let version { json += #","version":\#(version)"# }
        return json + extra + "}"
    }

    static func stamp(_ ms: Int64) -> String { Timestamp(milliseconds: ms).description }

    /// A plus account with two sessions (two devices), clock at 2026-02-06T09:00:00Z.
    static func twoDevices(tier: Tier = .plus) async throws -> (AppHarness, phone: String, tablet: String) {
        let h = try AppHarness(defaultTier: tier)
        h.clock.set(Timestamp.parse("2026-02-06T09:00:00.000Z")!)
        let (phone, _) = try await h.register("ana@example.com")
        let tablet = try #require(await h.login("ana@example.com").json["token"] as? String)
        return (h, phone, tablet)
    }

    @Test("PUT creates (201) then replaces (200) with the version bumped; GET one and the full list; next_fire_at is computed")
    func createReplace() async throws {
        let (h, phone, tablet) = try await Self.twoDevices()
        let created = try await h.expect(201, .put, "/v1/me/alarms/\(Self.alarmA)", json: Self.body("Rent"), token: phone)
        #expect(created.json["version"] as? Int == 1)
        #expect(created.json["next_fire_at"] as? String == SharedAlarmFixture.firstFire)
        #expect(created.json["is_enabled"] as? Bool == true)
        #expect(created.json["assigned_to_uids"] == nil, "shared-only fields are not part of a personal alarm")
        // Same id again, upper case: the same alarm (ids are lowercased), replaced.
        let replaced = try await h.expect(
            200, .put, "/v1/me/alarms/\(Self.alarmA.uppercased())", json: Self.body("Rent due", version: 1), token: tablet)
        #expect(replaced.json["version"] as? Int == 2)
        #expect(replaced.json["title"] as? String == "Rent due")
        let one = try await h.expect(200, .get, "/v1/me/alarms/\(Self.alarmA)", token: phone)
        #expect(one.json["title"] as? String == "Rent due")
        let list = try await h.expect(200, .get, "/v1/me/alarms", token: phone)
        #expect((list.json["alarms"] as? [[String: Any]])?.count == 1)
        #expect((list.json["seq"] as? Int ?? 0) > 0)
        // Disabled: no next fire.
        let off = try await h.expect(
            200, .patch, "/v1/me/alarms/\(Self.alarmA)", json: #"{"is_enabled":false,"sort_order":3}"#, token: phone)
        #expect(off.json["next_fire_at"] is NSNull)
        #expect(off.json["sort_order"] as? Int == 3)
        #expect(off.json["version"] as? Int == 3)
    }

    @Test("a stale version gets 409 CA010 with the current document; nothing changes")
    func staleVersion() async throws {
        let (h, phone, tablet) = try await Self.twoDevices()
        try await h.expect(201, .put, "/v1/me/alarms/\(Self.alarmA)", json: Self.body("Rent"), token: phone)
        try await h.expect(200, .patch, "/v1/me/alarms/\(Self.alarmA)", json: #"{"title":"Rent (phone)","version":1}"#, token: phone)
        let stale = try await h.expect(
            409, .patch, "/v1/me/alarms/\(Self.alarmA)", json: #"{"title":"Rent (tablet)","version":1}"#, token: tablet)
        #expect(stale.errorCode == "CA010")
        #expect(stale.text.contains("Rent (phone)"))
        let put = try await h.expect(409, .put, "/v1/me/alarms/\(Self.alarmA)", json: Self.body("x", version: 1), token: tablet)
        #expect(put.errorCode == "CA010")
        try await h.expect(409, .delete, "/v1/me/alarms/\(Self.alarmA)?version=1", token: tablet)
        let now = try await h.expect(200, .get, "/v1/me/alarms/\(Self.alarmA)", token: tablet)
        #expect(now.json["title"] as? String == "Rent (phone)")
        #expect(now.json["version"] as? Int == 2)
    }

    @Test("without a version, the later updated_at wins; the loser (either way round) is in the conflict archive")
    func lastWriteWins() async throws {
        let (h, phone, tablet) = try await Self.twoDevices()
        let t0 = h.clock.nowMilliseconds()
        try await h.expect(201, .put, "/v1/me/alarms/\(Self.alarmA)", json: Self.body("Rent", updatedAt: Self.stamp(t0)), token: phone)
        h.clock.advance(by: 60_000)
        // Both edited offline: the tablet at t0+10 s, the phone at t0+20 s. The tablet syncs last.
        let phoneEdit = try await h.expect(
            200, .put, "/v1/me/alarms/\(Self.alarmA)", json: Self.body("Rent (phone)", updatedAt: Self.stamp(t0 + 20_000)),
            token: phone)
        #expect(phoneEdit.json["title"] as? String == "Rent (phone)")
        let tabletEdit = try await h.expect(
            200, .put, "/v1/me/alarms/\(Self.alarmA)", json: Self.body("Rent (tablet)", updatedAt: Self.stamp(t0 + 10_000)),
            token: tablet)
        #expect(tabletEdit.json["title"] as? String == "Rent (phone)", "the older edit lost: the answer is the stored one")
        #expect(tabletEdit.json["version"] as? Int == 2, "a lost write changes nothing")
        let conflicts = try await h.expect(200, .get, "/v1/me/alarms/\(Self.alarmA)/conflicts", token: phone)
        let titles = (conflicts.json["conflicts"] as? [[String: Any]] ?? []).compactMap {
            ($0["alarm"] as? [String: Any])?["title"] as? String
        }
        #expect(titles == ["Rent (tablet)", "Rent"], "newest first: the losing tablet edit, then the version the phone replaced")
        // A client clock far ahead is refused rather than winning every comparison for a year.
        let ahead = try await h.expect(
            422, .put, "/v1/me/alarms/\(Self.alarmA)", json: Self.body("x", updatedAt: Self.stamp(h.clock.nowMilliseconds() + 3_600_000)),
            token: tablet)
        #expect(ahead.errorField == "updated_at")
    }

    @Test("delete leaves a tombstone: 404 to GET, removed in the sync read, the id can be written again; purged after 30 days")
    func tombstones() async throws {
        let (h, phone, tablet) = try await Self.twoDevices()
        let start = try await h.expect(200, .get, "/v1/me/alarms", token: tablet).json["seq"] as? Int ?? -1
        try await h.expect(201, .put, "/v1/me/alarms/\(Self.alarmA)", json: Self.body("Rent"), token: phone)
        try await h.expect(201, .put, "/v1/me/alarms/\(Self.alarmB)", json: Self.body("Filter"), token: phone)
        try await h.expect(204, .delete, "/v1/me/alarms/\(Self.alarmA)", token: phone)
        try await h.expect(204, .delete, "/v1/me/alarms/\(Self.alarmA)", token: phone)  // again: nothing changes
        try await h.expect(404, .get, "/v1/me/alarms/\(Self.alarmA)", token: phone)
        try await h.expect(404, .delete, "/v1/me/alarms/2d7e5b80-af4c-4e3d-9a91-3c4d5e6f7081", token: phone)

        let sync = try await h.expect(200, .get, "/v1/me/alarms?since=\(start)", token: tablet)
        let changes = sync.json["changes"] as? [[String: Any]] ?? []
        #expect(changes.map { $0["op"] as? String } == ["added", "added", "removed"])
        #expect(changes.last?["id"] as? String == Self.alarmA)
        #expect(changes.last?["alarm"] == nil)
        #expect(sync.json["reset"] as? Bool == false)
        #expect(sync.json["more"] as? Bool == false)
        let next = sync.json["next_since"] as? Int ?? -1
        let empty = try await h.expect(200, .get, "/v1/me/alarms?since=\(next)", token: tablet)
        #expect((empty.json["changes"] as? [Any])?.isEmpty == true)
        // Paged: one change per read, continuing from next_since.
        let first = try await h.expect(200, .get, "/v1/me/alarms?since=\(start)&limit=1", token: tablet)
        #expect(first.json["more"] as? Bool == true)
        #expect((first.json["changes"] as? [Any])?.count == 1)

        // A write to a tombstone's id brings it back (op added on the sync read).
        let back = try await h.expect(200, .put, "/v1/me/alarms/\(Self.alarmA)", json: Self.body("Rent again"), token: tablet)
        #expect(back.json["deleted_at"] is NSNull)
        try await h.expect(204, .delete, "/v1/me/alarms/\(Self.alarmA)", token: phone)

        h.clock.advance(by: PersonalAlarmRules.tombstoneLifetimeMilliseconds + 1)
        let report = try h.database.writeSync { db in try Retention.sweep(at: h.clock.nowMilliseconds(), on: db) }
        #expect(report.personalAlarmTombstones >= 1)
        let rows = try h.database.readSync { db in try PersonalAlarmStore.find(userID: Self.userID(h, db), alarmID: Self.alarmA, on: db) }
        #expect(rows == nil, "the tombstone is gone")
    }

    static func userID(_ h: AppHarness, _ db: any SQLConnection) throws -> String {
        guard case .text(let id) = try db.scalar("SELECT id FROM users WHERE email = 'ana@example.com'") else { return "" }
        return id
    }

    @Test("free: writes 403 TIER_REQUIRED (CA002), reads allowed; one code path validates with shared alarms; foreign fields refused")
    func tiersAndValidation() async throws {
        let (free, token, _) = try await Self.twoDevices(tier: .free)
        let refused = try await free.expect(403, .put, "/v1/me/alarms/\(Self.alarmA)", json: Self.body("Rent"), token: token)
        #expect(refused.errorCode == "CA002")
        try await free.expect(200, .get, "/v1/me/alarms", token: token)
        try await free.expect(401, .get, "/v1/me/alarms")

        let (h, phone, _) = try await Self.twoDevices()
        let badZone = try await h.expect(
            422, .put, "/v1/me/alarms/\(Self.alarmA)",
            json: #"{"title":"x","schedule":{"type":"weekly","days_of_week":[1]},"#
                + #""times_of_day":[{"hour":9,"minute":0}],"timezone":"Mars/Base"}"#,
            token: phone)
        #expect(badZone.errorName == "SCHEDULE_INVALID")
        let shared = try await h.expect(
            422, .put, "/v1/me/alarms/\(Self.alarmA)", json: Self.body("x", extra: #","assigned_to_uids":[]"#), token: phone)
        #expect(shared.errorField == "assigned_to_uids")
        let badID = try await h.expect(422, .put, "/v1/me/alarms/not-a-uuid", json: Self.body("x"), token: phone)
        #expect(badID.errorField == "alarm_id")
        let order = try await h.expect(
            422, .put, "/v1/me/alarms/\(Self.alarmA)", json: Self.body("x", extra: #","sort_order":-1"#), token: phone)
        #expect(order.errorField == "sort_order")
        try await h.expect(404, .patch, "/v1/me/alarms/\(Self.alarmA)", json: #"{"title":"y"}"#, token: phone)
        // Another account cannot see or touch it.
        try await h.expect(201, .put, "/v1/me/alarms/\(Self.alarmA)", json: Self.body("Rent"), token: phone)
        let (other, _) = try await h.register("bo@example.com")
        try await h.expect(404, .get, "/v1/me/alarms/\(Self.alarmA)", token: other)
        let own = try await h.expect(201, .put, "/v1/me/alarms/\(Self.alarmA)", json: Self.body("Bo's"), token: other)
        #expect(own.json["title"] as? String == "Bo's", "ids are per account")
        let mine = try await h.expect(200, .get, "/v1/me/alarms/\(Self.alarmA)", token: phone)
        #expect(mine.json["title"] as? String == "Rent")
    }

    /// A device's local copy in the model test.
    struct Local {
        var title: String
        var updatedAt: Int64
        var deleted: Bool
        var dirty: Bool
    }

    @Test(
        "randomized: three devices edit and delete offline, sync in random order; no pushed edit is lost and all converge",
        arguments: [UInt64(1), 2, 3])
    func model(seed: UInt64) async throws {
        let (h, phone, tablet) = try await Self.twoDevices()
        let laptop = try #require(await h.login("ana@example.com").json["token"] as? String)
        let tokens = [phone, tablet, laptop]
        var random = SplitMix64(seed: seed)
        let ids = (1...4).map { "0000000\($0)-0000-4000-8000-00000000000\(seed)" }
        var devices = Array(repeating: [String: Local](), count: tokens.count)
        var cursors = Array(repeating: Int64(0), count: tokens.count)
        var pushed: [String: Set<String>] = [:]
        var edits = 0

        func sync(_ d: Int) async throws {
            for (id, local) in devices[d] where local.dirty {
                if local.deleted {
                    let reply = await h.send(.delete, "/v1/me/alarms/\(id)", token: tokens[d])
                    #expect(reply.status == 204 || reply.status == 404, "\(reply.text)")
                } else {
                    let reply = await h.send(
                        .put, "/v1/me/alarms/\(id)", json: Self.body(local.title, updatedAt: Self.stamp(local.updatedAt)), token: tokens[d])
                    #expect(reply.status == 200 || reply.status == 201, "\(reply.text)")
                    pushed[id, default: []].insert(local.title)
                }
                devices[d][id]?.dirty = false
            }
            var more = true
            while more {
                let reply = try await h.expect(200, .get, "/v1/me/alarms?since=\(cursors[d])&limit=5", token: tokens[d])
                for change in reply.json["changes"] as? [[String: Any]] ?? [] {
                    let id = change["id"] as? String ?? ""
                    if let alarm = change["alarm"] as? [String: Any] {
                        let at = Timestamp.parse(alarm["updated_at"] as? String ?? "") ?? 0
                        devices[d][id] = Local(title: alarm["title"] as? String ?? "", updatedAt: at, deleted: false, dirty: false)
                    } else {
                        devices[d][id]?.deleted = true
                    }
                }
                cursors[d] = Int64(reply.json["next_since"] as? Int ?? 0)
                more = reply.json["more"] as? Bool ?? false
            }
        }

        for _ in 0..<60 {
            h.clock.advance(by: Int64(Int.random(in: 0..<5_000, using: &random)) + 1)
            let d = Int.random(in: 0..<tokens.count, using: &random)
            let id = ids[Int.random(in: 0..<ids.count, using: &random)]
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<6:
                edits += 1
                devices[d][id] = Local(title: "t\(edits)", updatedAt: h.clock.nowMilliseconds(), deleted: false, dirty: true)
            case 6:
                if devices[d][id]?.deleted == false {
                    devices[d][id]?.deleted = true
                    devices[d][id]?.dirty = true
                }
            default:
                try await sync(d)
            }
        }
        for d in tokens.indices { try await sync(d) }
        for d in tokens.indices { try await sync(d) }  // the first round's pushes reach every device

        let server = try await h.expect(200, .get, "/v1/me/alarms", token: phone).json["alarms"] as? [[String: Any]] ?? []
        let serverTitles = Dictionary(uniqueKeysWithValues: server.map { ($0["id"] as? String ?? "", $0["title"] as? String ?? "") })
        for d in tokens.indices {
            let live = devices[d].filter { !$0.value.deleted }.mapValues(\.title)
            #expect(live == serverTitles, "device \(d) differs from the server")
        }
        #expect(pushed.values.map(\.count).reduce(0, +) >= 10, "the run pushed edits")
        #expect(!serverTitles.isEmpty)
        // No lost write: every pushed edit is the alarm's current document (live or tombstone) or archived.
        let userID = try h.database.readSync { db in try Self.userID(h, db) }
        var archivedTotal = 0
        for (id, titles) in pushed {
            let (current, archivedAlarms) = try h.database.readSync { db in
                (
                    try PersonalAlarmStore.find(userID: userID, alarmID: id, on: db),
                    try PersonalAlarmStore.conflicts(userID: userID, alarmID: id, on: db).map(\.alarm)
                )
            }
            let archived = archivedAlarms.map(\.settings.title)
            // Last write wins: what is kept is never older than a version it displaced.
            for loser in archivedAlarms {
                #expect(loser.updatedAt <= current?.updatedAt ?? Timestamp(milliseconds: 0), "an older edit of \(id) won")
            }
            archivedTotal += try h.database.readSync { db in try PersonalAlarmStore.conflicts(userID: userID, alarmID: id, on: db).count }
            for title in titles {
                #expect(title == current?.settings.title || archived.contains(title), "edit \(title) of \(id) was lost")
            }
        }
        #expect(archivedTotal > 0, "devices raced: some versions were archived")
    }
}
