import Domain
public import Storage

/// Registrations admitted per client network and in total within a sliding window, kept as rows so
/// the limits hold across restarts and across every instance on one database (nothing may
/// assume one process exists). An admission is recorded before the password is hashed, so
/// registrations running in parallel all count; a refused one records nothing (waiting is enough).
/// Admitting runs in a write transaction: writers are serialised, so two instances cannot both take
/// the last place.
public enum RegistrationAdmissions {
    /// The outcome of `admit`.
    public enum Admission: Sendable, Equatable {
        /// Recorded; `refund(id:)` gives the place back.
        case admitted(id: Int64)
        /// Over a limit: retry after this many seconds (the larger wait when both limits refuse).
        case refused(retryAfterSeconds: Int)
    }

    /// Admits and records a registration from `network` (`ClientNetwork.rateLimitKey`) at `now`,
    /// or refuses it: at most `perNetwork` from one network and `total` from all within
    /// `windowMilliseconds`. Deletes the rows the window has left behind.
    public static func admit(
        network: String, perNetwork: Int, total: Int, windowMilliseconds: Int64, at now: Int64,
        on db: any SQLConnection
    ) throws -> Admission {
        let start = now - windowMilliseconds
        try db.run("DELETE FROM registration_admissions WHERE at_ms <= ?1", [.integer(start)])
        let mine = try times("SELECT at_ms FROM registration_admissions WHERE network = ?1 ORDER BY at_ms", [.text(network)], db)
        let all = try times("SELECT at_ms FROM registration_admissions ORDER BY at_ms", [], db)
        var wait = 0
        for (limit, counted) in [(perNetwork, mine), (total, all)] {
            let window = AttemptWindow(maxAttempts: limit, windowMilliseconds: windowMilliseconds)
            if case .refused(let seconds) = window.evaluate(failureTimes: counted, now: now) { wait = max(wait, seconds) }
        }
        guard wait == 0 else { return .refused(retryAfterSeconds: wait) }
        let id = try db.scalar(
            "INSERT INTO registration_admissions (network, at_ms) VALUES (?1, ?2) RETURNING id",
            [.text(network), .integer(now)])
        guard case .integer(let id) = id else { throw StoreError.corruptRow(table: "registration_admissions") }
        return .admitted(id: id)
    }

    /// Gives back an admission whose registration was never attempted (the hashing queue was full),
    /// so a client retrying after `503` keeps its place.
    public static func refund(id: Int64, on db: any SQLConnection) throws {
        try db.run("DELETE FROM registration_admissions WHERE id = ?1", [.integer(id)])
    }

    private static func times(_ sql: String, _ bindings: [SQLValue], _ db: any SQLConnection) throws -> [Int64] {
        try db.query(sql, bindings).map { row in
            guard let at = row.int("at_ms") else { throw StoreError.corruptRow(table: "registration_admissions") }
            return at
        }
    }
}
