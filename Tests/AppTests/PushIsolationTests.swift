import Domain
import Foundation
import Glibc
import Hashing
import Logging
import Outbound
import Storage
import Store
import TestSupport
import Testing
import Wire

@testable import App

/// one client's cost stays with that client. Push endpoints that accept TCP and
/// never finish TLS (`StallingListener`) must hold neither the dispatcher's rounds nor anyone else's
/// notifications, and a device whose endpoint keeps timing out is dropped. Every `now` is the injected
/// clock's; the stalled sends get deadlines far beyond the test, so nothing depends on how fast it runs.
@Suite("Push isolation — a stalled endpoint costs its own account and origin only")
struct PushIsolationTests {
    static let quiet = WebPushDeliveryTests.quiet

    /// A loopback port whose kernel completes TCP handshakes into the accept queue while nobody ever
    /// accepts, reads or writes: a TLS client's hello is never answered.
    final class StallingListener: Sendable {
        let descriptor: Int32
        let port: Int

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
            }
            let listening = bound == 0 && listen(fd, 128) == 0
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            descriptor = fd
            port = Int(UInt16(bigEndian: address.sin_port))
            try #require(listening)
        }

        deinit { close(descriptor) }
    }

    /// A group (owner, attacker A, household member B), the fake push service, a stalling listener and
    /// a client of their own for the sender under test.
    struct Setup {
        let f: SharedAlarmFixture
        let push: WebPushService
        let stall: StallingListener
        let client: OutboundClient
        let dispatcher: NotificationDispatcher
        var h: AppHarness { f.h }
        var attacker: GroupFixture.Account { f.members[0] }
        var household: GroupFixture.Account { f.members[1] }

        static func make(connectTimeout: Duration, timeout: Duration) async throws -> Setup {
            let f = try await SharedAlarmFixture.make(members: 2)
            let push = try await WebPushService.start()
            let client = OutboundClient(
                configuration: .init(
                    policy: DestinationPolicy(allowPrivateDestinations: true), caFile: push.fake.authority.certificatePath))
            let sender = try WebPushSender(
                vapidKey: P256.PrivateKey(), subject: "mailto:ops@example.com", client: client, timeout: timeout,
                connectTimeout: connectTimeout)
            let dispatcher = NotificationDispatcher(
                database: f.h.database, clock: f.h.clock, logger: PushIsolationTests.quiet, senders: [sender], unitRandom: { 0.5 })
            try await dispatcher.runOnce(at: f.h.clock.nowMilliseconds())  // the joins, before any device
            try await push.setClock(milliseconds: f.h.clock.nowMilliseconds())
            return Setup(f: f, push: push, stall: try StallingListener(), client: client, dispatcher: dispatcher)
        }

        /// B's one device at the fake push service.
        func registerHousehold() async throws {
            let subscription = try await push.subscribe("b")
            try await h.expect(
                201, .put, "/v1/me/devices/web-b",
                json: #"{"platform":"web","provider":"webpush","subscription":\#(subscription.json)}"#, token: household.token)
        }

        /// `count` devices of A whose endpoints are the stalling listener (valid keys from the fake).
        func registerStalled(_ count: Int) async throws {
            for index in 0..<count {
                let keys = try await push.subscribe("a\(index)")
                let endpoint = "https://127.0.0.1:\(stall.port)/push/a\(index)"
                let subscription = #"{"endpoint":"\#(endpoint)","keys":{"p256dh":"\#(keys.p256dh)","auth":"\#(keys.auth)"}}"#
                try await h.expect(
                    201, .put, "/v1/me/devices/web-a\(index)",
                    json: #"{"platform":"web","provider":"webpush","subscription":\#(subscription)}"#, token: attacker.token)
            }
        }

        /// A's deliveries: (attempts, leased, next attempt).
        func attackerDeliveries() throws -> [(attempts: Int64, leased: Bool, next: Int64)] {
            try h.database.readSync { db in
                try db.query(
                    "SELECT attempts, lease_owner, next_attempt_ms FROM notification_deliveries WHERE user_id = ?1 ORDER BY id",
                    [.text(attacker.id)]
                ).map { ($0.int("attempts") ?? -1, $0.string("lease_owner") != nil, $0.int("next_attempt_ms") ?? -1) }
            }
        }

        /// Polls the fake until it has received `count` pushes (bounded like every loopback wait).
        func awaitReceived(_ count: Int) async throws -> Bool {
            let push = push
            return await eventuallyAsync { ((try? await push.received())?.count ?? 0) >= count }
        }
    }

    @Test("20 stalled devices: the household's pushes arrive round after round while A's sends are still pending")
    func stalledOriginHoldsNoRound() async throws {
        // Deadlines far beyond the test: the stalled sends stay in flight until the client closes.
        let s = try await Setup.make(connectTimeout: .seconds(600), timeout: .seconds(600))
        try await s.registerHousehold()
        try await s.registerStalled(DeviceRules.maxDevicesPerUser)
        let now = s.h.clock.nowMilliseconds()
        s.dispatcher.start(tick: .milliseconds(50))

        _ = try await s.f.createAlarm()  // an edit by the owner: A's 20 devices and B's one
        s.dispatcher.wake()
        #expect(try await s.awaitReceived(1), "B's first push arrives")
        var pending = try s.attackerDeliveries()
        #expect(pending.count == 20 && pending.allSatisfy { $0.attempts == 0 }, "A's sends are pending, none settled")
        #expect(pending.filter(\.leased).count == 8, "A's account holds maxInFlightPerAccount slots")
        #expect(pending.filter { !$0.leased }.allSatisfy { $0.next == now + 1_000 }, "the rest postponed, no attempt counted")

        _ = try await s.f.createAlarm()  // the next round: A's 8 sends still stalled
        s.dispatcher.wake()
        #expect(try await s.awaitReceived(2), "B's second push is not held behind A's stalled sends")
        pending = try s.attackerDeliveries()
        #expect(pending.count == 40 && pending.allSatisfy { $0.attempts == 0 })
        #expect(pending.filter(\.leased).count == 8, "still only 8 of A's in flight")
        #expect(try await s.push.received().map(\.id) == ["b", "b"])

        s.dispatcher.stop()
        s.client.close()  // fails A's stalled sends at once: they settle as retries
        #expect(s.dispatcher.waitUntilIdle())
        #expect(try s.attackerDeliveries().filter { $0.attempts == 1 }.count == 8)
    }

    @Test("a device whose endpoint never finishes TLS is dropped after 5 timeouts spanning 10 minutes, not before")
    func timingOutDeviceDropped() async throws {
        let s = try await Setup.make(connectTimeout: .milliseconds(100), timeout: .seconds(600))
        try await s.registerStalled(1)
        let start = s.h.clock.nowMilliseconds()
        _ = try await s.f.createAlarm()
        // Rounds 3 minutes apart (each retry is due by then): timeouts 1–4 keep the device.
        for step in 0..<4 {
            let round = try await s.dispatcher.runOnce(at: start + Int64(step) * 180_000)
            #expect(round.retried == 1 && round.devicesGone == 0, "timeout \(step + 1)")
        }
        #expect(try s.attackerDeliveries().map(\.attempts) == [4])
        // The fifth, 12 minutes after the first: gone, with its deliveries.
        let fifth = try await s.dispatcher.runOnce(at: start + 720_000)
        #expect(fifth.devicesGone == 1)
        #expect(try s.attackerDeliveries().isEmpty)
        let devices = try await s.h.expect(200, .get, "/v1/me/devices", token: s.attacker.token).json["devices"] as? [Any]
        #expect(devices?.isEmpty == true)
        s.client.close()
    }
}

/// `SendBudget`, the sans-I/O core of the dispatcher's isolation: each cap at exactly its limit and
/// one over, and the timeout streak's two conditions.
@Suite("SendBudget — per-origin, per-account and total send budgets; timeout streaks")
struct SendBudgetTests {
    func limits() -> NotificationDispatcher.Limits {
        var limits = NotificationDispatcher.Limits()
        limits.maxInFlight = 10
        limits.maxInFlightPerOrigin = 4
        limits.maxInFlightPerAccount = 3
        return limits
    }

    @Test func eachCapAtItsLimitAndOneOver() {
        var budget = SendBudget(limits: limits())
        // Per account: 3 across origins, the fourth refused.
        for origin in ["https://a", "https://b", "https://c"] {
            let answer1 = budget.admit(.init(origin: origin, account: "u1"))
            #expect(answer1 == .admitted)
        }
        let answer2 = budget.admit(.init(origin: "https://d", account: "u1"))
        #expect(answer2 == .overBudget("account"))
        // Per origin: 4 across accounts (a already has 1), the fifth refused.
        for account in ["u2", "u3", "u4"] {
            let answer3 = budget.admit(.init(origin: "https://a", account: account))
            #expect(answer3 == .admitted)
        }
        let answer4 = budget.admit(.init(origin: "https://a", account: "u5"))
        #expect(answer4 == .overBudget("origin"))
        // Operator-fixed providers (no origin) and the webhook (no account) only count in total.
        let answer5 = budget.admit(.init(origin: nil, account: "u6"))
        #expect(answer5 == .admitted)
        let answer6 = budget.admit(.init(origin: nil, account: nil))
        #expect(answer6 == .admitted)
        let answer7 = budget.admit(.init(origin: nil, account: nil))
        #expect(answer7 == .admitted)
        #expect(budget.inFlight == 9 && budget.free == 1)
        let answer8 = budget.admit(.init(origin: nil, account: nil))
        #expect(answer8 == .admitted)
        let answer9 = budget.admit(.init(origin: nil, account: nil))
        #expect(answer9 == .overBudget("in flight"))
        budget.release(.init(origin: "https://a", account: "u1"))
        let answer10 = budget.admit(.init(origin: "https://a", account: "u1"))
        #expect(answer10 == .admitted, "a released slot is free again")
    }

    @Test("a round's reservation holds its room against rounds claiming at once, until it admits what it claimed")
    func reservationsShareTheTotal() {
        var budget = SendBudget(limits: limits())
        let first = budget.reserve(upTo: 6)
        let second = budget.reserve(upTo: 6)
        #expect(first == 6 && second == 4, "the second round gets what the first left")
        #expect(budget.reserve(upTo: 6) == 0 && budget.free == 0)
        // The first round claimed 2 of its 6: it ends its reservation and admits them.
        budget.endReservation(first)
        for _ in 0..<2 {
            let answer = budget.admit(.init(origin: nil, account: nil))
            #expect(answer == .admitted)
        }
        #expect(budget.free == 4, "10 − 2 in flight − the second round's 4 reserved")
        // The second round's reservation still counts against anyone admitting past it.
        for _ in 0..<4 {
            let answer = budget.admit(.init(origin: nil, account: nil))
            #expect(answer == .admitted)
        }
        let over = budget.admit(.init(origin: nil, account: nil))
        #expect(over == .overBudget("in flight"), "6 in flight + 4 reserved")
        budget.endReservation(second)
        #expect(budget.free == 4)
    }

    @Test func timeoutStreakNeedsCountAndSpan() {
        var budget = SendBudget(limits: limits())
        // Five timeouts within 10 minutes: kept; the sixth, 10 minutes after the first: dropped.
        for minute in 0..<5 {
            let dropped = budget.recordTimeout(device: "u/d", timedOut: true, now: Int64(minute) * 60_000)
            #expect(!dropped)
        }
        let sixth = budget.recordTimeout(device: "u/d", timedOut: true, now: 600_000)
        #expect(sixth)
        // Any other outcome ends the streak.
        for step in 0..<4 {
            let dropped = budget.recordTimeout(device: "u/e", timedOut: true, now: Int64(step) * 300_000)
            #expect(!dropped)
        }
        let success = budget.recordTimeout(device: "u/e", timedOut: false, now: 1_200_000)
        let afterwards = budget.recordTimeout(device: "u/e", timedOut: true, now: 1_500_000)
        #expect(!success && !afterwards, "a new streak")
    }
}
