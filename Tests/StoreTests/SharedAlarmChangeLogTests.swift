import Domain
import SQLite
import Storage
import Store
import TestSupport
import Testing

/// Each shared-alarm mutation appends exactly one batch to `group:<id>`: its event name (docs/realtime-protocol.md#events) and whole
/// documents that decode to exactly what the store returned.
@Suite("Store — one change-log batch per shared-alarm mutation (migration 0003)", .serialized)
struct SharedAlarmChangeLogTests {
    struct Logged {
        var event: String
        var actor: String
        var rows: [(topic: String, kind: String, op: String, entity: String, document: [UInt8]?)]
        var summary: [String] { rows.map { "\($0.kind) \($0.op)" } }
    }

    let db: any SQLDatabase
    /// 2026-02-06T09:00:00Z.
    static let nine: Int64 = 1_770_368_400_000

    init(_ backend: TestBackend = .sqlite) throws {
        db = try backend.open(migrations: Schema.migrations(for: backend.dialect)).database
    }

    func logged<T>(_ body: (any SQLConnection) throws -> T) throws -> (T, Logged) {
        let before = try db.readSync { try ChangeLog.latestSeq(on: $0) }
        let value = try db.writeSync(body)
        let rows = try db.readSync { c in
            try c.query(
                "SELECT batch, event, actor, topic, kind, op, entity_id, document FROM change_log WHERE seq > ?1 ORDER BY seq",
                [.integer(before)])
        }
        #expect(Set(rows.compactMap { $0.int("batch") }) == [before + 1], "one batch")
        return (
            value,
            Logged(
                event: rows.first?.string("event") ?? "", actor: rows.first?.string("actor") ?? "",
                rows: rows.map {
                    (
                        $0.string("topic") ?? "", $0.string("kind") ?? "", $0.string("op") ?? "", $0.string("entity_id") ?? "",
                        $0.string("document").map { Array($0.utf8) }
                    )
                })
        )
    }

    @Test("0003_shared_alarms follows 0002_groups")
    func order() {
        #expect(Schema.migrations.map(\.name).prefix(3) == ["0001_init", "0002_groups", "0003_shared_alarms"])
    }

    @Test("create, complete, update, removal hook, sweep, delete; completions cannot be updated", arguments: TestBackend.available)
    static func everyMutation(_ backend: TestBackend) throws {
        try Self(backend).everyMutation()
    }

    func everyMutation() throws {
        let (o, a, b) = try db.writeSync { c in
            (
                try AccountStore.register(email: "o@example.com", displayName: "O", passwordHash: "h", tier: .premium, at: 1, on: c),
                try AccountStore.register(email: "a@example.com", displayName: "A", passwordHash: "h", tier: .free, at: 1, on: c),
                try AccountStore.register(email: "b@example.com", displayName: "B", passwordHash: "h", tier: .free, at: 1, on: c)
            )
        }
        let secret = Array(repeating: UInt8(3), count: 32)
        let g = try db.writeSync { c in
            let g = try GroupStore.create(
                name: "G", description: nil, iconName: nil, colorTag: nil, maxMembers: 10, owner: o, at: 10, on: c
            ).group.id
            let (code, _) = try InviteCodeStore.rotate(groupID: g, actorID: o.id, secret: secret, at: 11, on: c)
            _ = try InviteCodeStore.join(codeHash: code.hash(secret: secret), user: a, clientIP: "ip", at: 12, on: c)
            _ = try InviteCodeStore.join(codeHash: code.hash(secret: secret), user: b, clientIP: "ip", at: 13, on: c)
            return g
        }
        let timing = AlarmTiming(
            schedule: Schedule(.customDays(intervalDays: 1), startDate: try #require(LocalDate(year: 2026, month: 2, day: 1))),
            timesOfDay: [try #require(TimeOfDay(hour: 10, minute: 0))], timezone: "UTC")
        let settings = AlarmSettings(title: "Bins", timing: timing, assignedTo: [a.id, b.id], completionRule: .all)

        let (alarm, created) = try logged { c in
            try SharedAlarmStore.create(groupID: g, actorID: o.id, settings: settings, at: Self.nine, on: c)
        }
        #expect(created.event == "shared_alarm_created")
        #expect(created.actor == "user:\(o.id)")
        #expect(created.summary == ["shared_alarm added"])
        #expect(created.rows.allSatisfy { $0.topic == "group:\(g)" })
        #expect(try DocumentCoding.decode(SharedAlarm.self, from: created.rows[0].document ?? []) == alarm)

        let answer = CompletionStore.Answer(status: .completed, method: .onTime, snoozeCount: 0, note: "done", scheduledAt: nil)
        let (recorded, completed) = try logged { c in
            try CompletionStore.record(groupID: g, alarmID: alarm.id, userID: a.id, answer: answer, at: Self.nine + 1, on: c)
        }
        #expect(completed.event == "shared_completion")
        #expect(completed.summary == ["shared_completion added", "shared_alarm modified"])
        #expect(try DocumentCoding.decode(SharedCompletion.self, from: completed.rows[0].document ?? []) == recorded.completion)
        #expect(try DocumentCoding.decode(SharedAlarm.self, from: completed.rows[1].document ?? []) == recorded.alarm)

        let (updated, update) = try logged { c in
            try SharedAlarmStore.update(
                groupID: g, alarmID: alarm.id, actorID: o.id, expectedVersion: 2, at: Self.nine + 2, on: c
            ) { $0.title = "Recycling" }
        }
        #expect(update.event == "shared_alarm_updated")
        #expect(try DocumentCoding.decode(SharedAlarm.self, from: update.rows[0].document ?? []) == updated.alarm)

        // Removing b (the last pending member) closes and advances the occurrence inside member_removed.
        let (_, removal) = try logged { c in
            try GroupStore.removeMember(groupID: g, actorID: o.id, targetID: b.id, at: Self.nine + 3, on: c)
        }
        #expect(removal.event == "member_removed")
        #expect(removal.summary.last == "shared_alarm modified")
        let advanced = try DocumentCoding.decode(SharedAlarm.self, from: removal.rows.last?.document ?? [])
        #expect(advanced.nextFireAt?.milliseconds == Self.nine + 25 * 3_600_000)
        #expect(advanced.settings.assignedTo == [a.id])
        #expect(advanced.lastCompletedAt?.milliseconds == Self.nine + 3)

        let (swept, sweep) = try logged { c in
            try SharedAlarmStore.sweepOverdue(at: Self.nine + 49 * 3_600_000, on: c)
        }
        #expect(swept == 1)
        #expect(sweep.event == "missed_alarm_followup")
        #expect(sweep.actor == "system")
        #expect(sweep.summary == ["missed_occurrence added", "shared_alarm modified"])

        let (_, deleted) = try logged { c in
            try SharedAlarmStore.delete(groupID: g, alarmID: alarm.id, actorID: o.id, at: Self.nine + 4, on: c)
        }
        #expect(deleted.event == "shared_alarm_deleted")
        #expect(deleted.summary == ["shared_alarm removed"])

        #expect(try db.writeSync { try SharedAlarmStore.purgeDeleted(deletedBefore: Self.nine + 4, on: $0) } == 0)
        #expect(try db.writeSync { try SharedAlarmStore.purgeDeleted(deletedBefore: Self.nine + 5, on: $0) } == 1)
        #expect(try db.readSync { try $0.scalar("SELECT COUNT(*) FROM shared_completions") } == .integer(0))
        let (_, again) = try logged { c in
            var onlyA = settings
            onlyA.assignedTo = [a.id]
            return try SharedAlarmStore.create(groupID: g, actorID: o.id, settings: onlyA, at: Self.nine + 6, on: c)
        }
        #expect(again.event == "shared_alarm_created")
        _ = try logged { c in
            try CompletionStore.record(groupID: g, alarmID: again.rows[0].entity, userID: a.id, answer: answer, at: Self.nine + 7, on: c)
        }
        #expect(
            violatesConstraint {
                try db.writeSync { c in try c.run("UPDATE shared_completions SET status = 'skipped'") }
            })
        #expect(
            violatesConstraint {
                try db.writeSync { c in try c.run("UPDATE shared_completions SET completed_ms = 0") }
            })
        #expect(try db.writeSync { try CompletionStore.purge(completedBefore: Self.nine + 7, on: $0) } == 0)
        #expect(try db.writeSync { try CompletionStore.purge(completedBefore: Self.nine + 8, on: $0) } == 1)
    }
}
