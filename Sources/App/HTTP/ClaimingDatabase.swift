import Storage
import Store

/// The database as route handlers see it (`Services.database`): the engine's, plus one duty — the first
/// async `write` of a request served with an `Idempotency-Key` (`IdempotencyKey.current`) also claims
/// the key, after its body succeeded and in its savepoint, so the claim commits with the write or not
/// at all. A claim another request committed first throws `IdempotencyKey.Taken` from inside the body,
/// which rolls the write back. Every other call passes straight through.
struct ClaimingDatabase: SQLDatabase {
    /// The engine's database.
    let base: any SQLDatabase

    var dialect: SQLDialect { base.dialect }

    @discardableResult
    func write<T: Sendable>(_ kind: TransactionKind, _ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        guard let claim = IdempotencyKey.current, !claim.isCommitted else { return try await base.write(kind, body) }
        let value = try await base.write(kind) { db in
            let value = try body(db)
            guard
                try IdempotencyStore.claim(
                    userID: claim.userID, key: claim.key, fingerprint: claim.fingerprint, at: claim.now, on: db)
            else { throw IdempotencyKey.Taken() }
            return value
        }
        claim.markCommitted()
        return value
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await base.read(body)
    }

    func readStatement<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws -> T {
        try await base.readStatement(body)
    }

    @discardableResult
    func writeSync<T>(_ kind: TransactionKind, _ body: (any SQLConnection) throws -> T) throws -> T {
        try base.writeSync(kind, body)
    }

    func readSync<T>(_ body: (any SQLConnection) throws -> T) throws -> T { try base.readSync(body) }

    @discardableResult
    func withWriter<T>(_ body: (any SQLConnection) throws -> T) throws -> T { try base.withWriter(body) }

    func onCommit(_ observer: @escaping @Sendable () -> Void) { base.onCommit(observer) }

    func watchCommits(
        channels: CommitChannels, events: @escaping @Sendable (CommitWatcherEvent) -> Void
    ) throws -> any CommitWatcher {
        try base.watchCommits(channels: channels, events: events)
    }

    var queuedWrites: Int { base.queuedWrites }

    func close() { base.close() }
}
