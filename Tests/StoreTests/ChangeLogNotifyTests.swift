import Domain
import Storage
import Store
import TestSupport
import Testing

@Suite("Change-log notification on PostgreSQL: one per transaction, after its last append")
struct ChangeLogNotifyTests {
    @Test(
        """
        a transaction of three appends (three writes of a group commit, one rolled back in its savepoint) notifies \
        chronir_changes once, with its last seq; the next transaction notifies its own
        """
    )
    func oncePerTransaction() throws {
        guard TestBackend.available.contains(.postgres) else { return }
        let db = try TestBackend.postgres.open(migrations: Schema.postgresMigrations).database
        let listener = try ChannelListener(db, channel: ChangeLog.notifyChannel)
        let change = Change(topic: "group:g", kind: .group, op: .modified, entityID: "g", document: Array("{}".utf8))
        struct Refused: Error {}
        try db.writeSync { c in
            try ChangeLog.append([change], event: ChangeEvent(rawValue: "a"), actor: .system, at: 1, on: c)
            try c.transaction(.immediate) {
                try ChangeLog.append([change, change], event: ChangeEvent(rawValue: "b"), actor: .system, at: 1, on: $0)
            }
            #expect(throws: Refused.self) {
                try c.transaction(.immediate) { inner in
                    try ChangeLog.append([change], event: ChangeEvent(rawValue: "undone"), actor: .system, at: 1, on: inner)
                    throw Refused()
                }
            }
        }
        try db.writeSync { try ChangeLog.append([change], event: ChangeEvent(rawValue: "c"), actor: .system, at: 2, on: $0) }
        // Seqs 1–3 in the first transaction (the rolled-back append left none), 4 in the second.
        #expect(listener.payloads(atLeast: 2) == ["3", "4"])
        #expect(try db.readSync { try $0.scalar("SELECT MAX(seq) FROM change_log") } == .integer(4))
    }
}
