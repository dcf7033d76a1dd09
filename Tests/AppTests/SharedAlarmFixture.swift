import Domain
import Foundation
import Storage
import TestSupport
import Wire

@testable import App

/// A premium harness with a group of an owner and `count` plain members (joined by code), and helpers
/// for shared alarms. The clock starts at 2026-02-06T09:00:00Z; `dailyTen` fires daily at 10:00 UTC.
struct SharedAlarmFixture {
    let h: AppHarness
    let owner: GroupFixture.Account
    let members: [GroupFixture.Account]
    let groupID: String
    var g: String { "/v1/groups/\(groupID)" }

    /// 2026-02-06T10:00:00Z, the first fire of `dailyTen`.
    static let firstFire = "2026-02-06T10:00:00.000Z"
    static let secondFire = "2026-02-07T10:00:00.000Z"
    static let thirdFire = "2026-02-08T10:00:00.000Z"
    /// Every day at 10:00 UTC from 2026-02-01.
    static let dailyTen =
        #"""
        "schedule":{"type":"custom_days","interval_days":1,"start_date":"2026-02-01"},"times_of_day":[{"hour":10,"minute":0}],\#
        "timezone":"UTC"
        """#

    static func make(members count: Int = 5, configure: (inout AppConfiguration) -> Void = { _ in }) async throws -> SharedAlarmFixture {
        let h = try AppHarness(defaultTier: .premium, configure: configure)
        func account(_ name: String) async throws -> GroupFixture.Account {
            let email = "\(name)@example.com"
            let (token, id) = try await h.register(email, name: name.capitalized)
            return GroupFixture.Account(token: token, id: id, email: email)
        }
        let owner = try await account("owner")
        let groupID = try await h.createGroup(token: owner.token)
        let code = try await h.inviteCode(groupID, token: owner.token)
        var members: [GroupFixture.Account] = []
        for i in 0..<count {
            let m = try await account("m\(i)")
            h.clock.advance(by: 1)
            let reply = await h.join(code, token: m.token)
            guard reply.status == 200 else { throw AppHarness.HarnessError.unexpected(reply.text) }
            members.append(m)
        }
        return SharedAlarmFixture(h: h, owner: owner, members: members, groupID: groupID)
    }

    /// Creates a daily-10:00 alarm as the owner and returns its JSON.
    func createAlarm(
        rule: String = "any", assignees: [GroupFixture.Account] = [], extra: String = "", token: String? = nil
    ) async throws -> [String: Any] {
        let uids = assignees.map { "\"\($0.id)\"" }.joined(separator: ",")
        let json =
            #"{"title":"Feed the cat",\#(Self.dailyTen),"completion_rule":"\#(rule)","assigned_to_uids":[\#(uids)]\#(extra)}"#
        let reply = try await h.expect(201, .post, "\(g)/alarms", json: json, token: token ?? owner.token)
        return reply.json
    }

    /// `POST …/completions`.
    func answer(
        _ alarmID: String, by account: GroupFixture.Account, status: String = "completed", scheduledAt: String? = nil
    ) async -> Reply {
        var json = #"{"status":"\#(status)""#
        if let scheduledAt { json += #","scheduled_at":"\#(scheduledAt)""# }
        return await h.send(.post, "\(g)/alarms/\(alarmID)/completions", json: json + "}", token: account.token)
    }

    /// `GET` of the alarm.
    func alarm(_ id: String) async throws -> [String: Any] {
        try await h.expect(200, .get, "\(g)/alarms/\(id)", token: owner.token).json
    }
}

extension [String: Any] {
    /// `occurrence` of an alarm document.
    var occurrence: [String: Any] { self["occurrence"] as? [String: Any] ?? [:] }
}
