public import Domain
public import Storage
import Wire

/// A group's invite code and the join flow (docs/design.md#invite-codes). The code is
/// stored only as its keyed hash; the caller hashes (`InviteCode.hash(secret:)`) before calling.
public enum InviteCodeStore {
    /// Subject of the per-code failure count.
    static func codeSubject(_ groupID: String) -> String { "code:\(groupID)" }
    /// Subject of the per-user failure budget.
    public static func userSubject(_ userID: String) -> String { "user:\(userID)" }
    /// Subject of the per-client-IP failure budget (an IPv6 client counts as its /64).
    public static func ipSubject(_ ip: String) -> String { "ip:\(ClientNetwork.rateLimitKey(ip))" }

    /// Creates the group's code or rotates it (owner/admin): the old hash stops matching at once, the
    /// lock and failure count start over. Returns the new code — the only time it exists outside the
    /// caller's memory. Events `invite_code_created` / `invite_code_rotated`.
    public static func rotate(
        groupID: String, actorID: String, secret: [UInt8], at now: Int64, on db: any SQLConnection
    ) throws -> (code: InviteCode, record: InviteCodeRecord) {
        _ = try GroupStore.managerAccess(groupID: groupID, userID: actorID, on: db)
        return try install(groupID: groupID, createdBy: actorID, actor: .user(actorID), reason: nil, secret: secret, at: now, on: db)
    }

    /// Draws a fresh code for the group, replacing any previous one, and logs it. Shared by the API's
    /// rotate and the operator's.
    static func install(
        groupID: String, createdBy: String, actor: Actor, reason: String?, secret: [UInt8], at now: Int64,
        on db: any SQLConnection
    ) throws -> (code: InviteCode, record: InviteCodeRecord) {
        let existed = try db.queryOne("SELECT 1 FROM invite_codes WHERE group_id = ?1", [.text(groupID)]) != nil
        let expires = now + InviteCode.lifetimeMilliseconds
        var code = InviteCode.generate()
        var attempt = 0
        while true {
            do {
                // In a savepoint: on PostgreSQL a failed statement aborts the whole transaction
                // unless rolled back to a savepoint (SQLite would carry on either way).
                try db.transaction(.immediate) { db in
                    try upsert(
                        groupID: groupID, codeHash: code.hash(secret: secret), actorID: createdBy, at: now,
                        expires: expires, on: db)
                }
                break
            } catch let error where error.storageFailure?.isUniqueViolation == true && attempt < 8 {
                // Another group holds this code (1 in ~887 million per live code): draw again.
                attempt += 1
                code = InviteCode.generate()
            }
        }
        try db.run("DELETE FROM invite_attempts WHERE subject = ?1", [.text(codeSubject(groupID))])
        let record = InviteCodeRecord(
            groupID: groupID, createdBy: createdBy, createdAt: Timestamp(milliseconds: now),
            expiresAt: Timestamp(milliseconds: expires), disabledAt: nil)
        try ChangeLog.append(
            [change(record).with(reason: reason)], event: existed ? .inviteCodeRotated : .inviteCodeCreated, actor: actor, at: now, on: db)
        return (code, record)
    }

    static func upsert(
        groupID: String, codeHash: [UInt8], actorID: String, at now: Int64, expires: Int64, on db: any SQLConnection
    ) throws {
        try db.run(
            """
            INSERT INTO invite_codes (group_id, code_hash, created_by, created_ms, expires_ms)
            VALUES (?1, ?2, ?3, ?4, ?5)
            ON CONFLICT (group_id) DO UPDATE SET code_hash = excluded.code_hash, created_by = excluded.created_by,
                created_ms = excluded.created_ms, expires_ms = excluded.expires_ms, disabled_ms = NULL,
                locked_until_ms = NULL
            """,
            [.text(groupID), .blob(codeHash), .text(actorID), .integer(now), .integer(expires)])
    }

    /// Disables the group's code (owner/admin). Idempotent: no code, or one already disabled, is a
    /// no-op. Event `invite_code_disabled`.
    public static func disable(groupID: String, actorID: String, at now: Int64, on db: any SQLConnection) throws {
        _ = try GroupStore.managerAccess(groupID: groupID, userID: actorID, on: db)
        try markDisabled(groupID: groupID, actor: .user(actorID), reason: nil, at: now, on: db)
    }

    /// Disables the code if it is live and logs it; shared by the API and the operator.
    static func markDisabled(groupID: String, actor: Actor, reason: String?, at now: Int64, on db: any SQLConnection) throws {
        guard var record = try record(groupID: groupID, on: db), record.disabledAt == nil else { return }
        try db.run("UPDATE invite_codes SET disabled_ms = ?2 WHERE group_id = ?1", [.text(groupID), .integer(now)])
        record.disabledAt = Timestamp(milliseconds: now)
        try ChangeLog.append([change(record).with(reason: reason)], event: .inviteCodeDisabled, actor: actor, at: now, on: db)
    }

    /// The code's public facts.
    public static func record(groupID: String, on db: any SQLConnection) throws -> InviteCodeRecord? {
        guard
            let row = try db.queryOne(
                "SELECT group_id, created_by, created_ms, expires_ms, disabled_ms FROM invite_codes WHERE group_id = ?1",
                [.text(groupID)])
        else { return nil }
        return try recordFromRow(row)
    }

    /// What `POST /v1/join` comes to. Failures are recorded in the same transaction, so the answer
    /// is returned (a thrown error would roll them back).
    public enum JoinOutcome: Sendable {
        /// Admitted now.
        case joined(GroupStore.Detail)
        /// Already an active member (idempotent retry).
        case alreadyMember(GroupStore.Detail)
        /// One generic answer for every unusable code; `lockedCode` when this failure was the one
        /// that locked the code (for the lockout metric; the caller's answer stays the same).
        case invalid(lockedCode: Bool)
        /// The user's or the client IP's failure budget is spent.
        case rateLimited(retryAfterSeconds: Int)
    }

    /// Joins `user` to the group whose live code hashes to `codeHash` (nil: input that cannot be a
    /// code). Order: user and IP budgets (429), lookup, lock, expiry/disabled, rejoin rule, then the
    /// member limit (throws `groupMemberLimit`). Every failure counts against the user and the IP;
    /// a disabled or expired code's failures also against that code, and its fifth within an hour
    /// locks it for an hour. A wrong code names no code (only keyed hashes are stored), and a
    /// rejoin-rule refusal comes from the caller's own past, so neither counts against a code: no
    /// caller can lock a live code for others (issue 15 #7). Event `member_joined`.
    public static func join(
        codeHash: [UInt8]?, user: User, clientIP: String, at now: Int64, on db: any SQLConnection
    ) throws -> JoinOutcome {
        let budgets = [(userSubject(user.id), InviteCode.userWindow), (ipSubject(clientIP), InviteCode.ipWindow)]
        var worst = 0
        for (subject, window) in budgets {
            if case .refused(let seconds) = window.evaluate(
                failureTimes: try failureTimes(subject: subject, window: window, at: now, on: db), now: now)
            {
                worst = max(worst, seconds)
            }
        }
        if worst > 0 { return .rateLimited(retryAfterSeconds: worst) }
        let budgetSubjects = budgets.map(\.0)

        guard let codeHash,
            let row = try db.queryOne(
                """
                SELECT group_id, created_ms, expires_ms, disabled_ms, locked_until_ms FROM invite_codes
                WHERE code_hash = ?1
                """, [.blob(codeHash)]),
            let groupID = row.string("group_id"), let created = row.int("created_ms"),
            let expires = row.int("expires_ms")
        else {
            try record(subjects: budgetSubjects, at: now, on: db)
            return .invalid(lockedCode: false)
        }
        if let lockedUntil = row.int("locked_until_ms"), lockedUntil > now {
            try record(subjects: budgetSubjects, at: now, on: db)
            return .invalid(lockedCode: false)
        }
        let previous = try GroupStore.member(groupID: groupID, userID: user.id, on: db)
        guard var group = try GroupStore.group(id: groupID, on: db), row.int("disabled_ms") == nil, expires > now
        else {
            try record(subjects: budgetSubjects + [codeSubject(groupID)], at: now, on: db)
            let codeFailures = try failureTimes(subject: codeSubject(groupID), window: InviteCode.codeWindow, at: now, on: db)
            guard case .refused = InviteCode.codeWindow.evaluate(failureTimes: codeFailures, now: now) else {
                return .invalid(lockedCode: false)
            }
            try db.run(
                "UPDATE invite_codes SET locked_until_ms = ?2 WHERE group_id = ?1",
                [.text(groupID), .integer(now + InviteCode.lockMilliseconds)])
            return .invalid(lockedCode: true)
        }
        // The rejoin rule is about the caller, not the code: it spends the caller's budgets only, so a
        // removed member holding the live code cannot lock it for newcomers (issue 15 #7).
        guard
            previous?.status == .active
                || GroupRules.mayRejoin(endedMs: previous?.removedAt?.milliseconds, inviteCreatedMs: created)
        else {
            try record(subjects: budgetSubjects, at: now, on: db)
            return .invalid(lockedCode: false)
        }
        if previous?.status == .active { return .alreadyMember(try GroupStore.detail(group, on: db)) }
        let (_, changes) = try GroupStore.admit(user, to: &group, role: .member, previous: previous, at: now, on: db)
        try ChangeLog.append(changes, event: .memberJoined, actor: .user(user.id), at: now, on: db)
        return .joined(try GroupStore.detail(group, on: db))
    }

    // MARK: - Attempt records

    /// Failure times of `subject` inside the window ending at `now`.
    static func failureTimes(subject: String, window: AttemptWindow, at now: Int64, on db: any SQLConnection) throws -> [Int64] {
        try db.query(
            "SELECT at_ms FROM invite_attempts WHERE subject = ?1 AND at_ms > ?2 ORDER BY at_ms",
            [.text(subject), .integer(window.windowStart(now: now))]
        ).compactMap { $0.int("at_ms") }
    }

    static func record(subjects: [String], at now: Int64, on db: any SQLConnection) throws {
        for subject in subjects {
            try db.run("INSERT INTO invite_attempts (subject, at_ms) VALUES (?1, ?2)", [.text(subject), .integer(now)])
        }
    }

    /// Deletes attempt records older than `cutoff` (retention sweeper: 24 hours).
    @discardableResult
    public static func purgeAttempts(olderThan cutoff: Int64, on db: any SQLConnection) throws -> Int {
        try db.run("DELETE FROM invite_attempts WHERE at_ms < ?1", [.integer(cutoff)])
    }

    static func change(_ record: InviteCodeRecord) -> Change {
        Change(
            topic: ChangeLog.groupTopic(record.groupID), kind: .inviteCode, op: .modified,
            entityID: record.groupID, document: DocumentCoding.encode(record))
    }

    static func recordFromRow(_ row: Row) throws -> InviteCodeRecord {
        guard let groupID = row.string("group_id"), let by = row.string("created_by"),
            let created = row.int("created_ms"), let expires = row.int("expires_ms")
        else { throw StoreError.corruptRow(table: "invite_codes") }
        return InviteCodeRecord(
            groupID: groupID, createdBy: by, createdAt: Timestamp(milliseconds: created),
            expiresAt: Timestamp(milliseconds: expires),
            disabledAt: row.int("disabled_ms").map(Timestamp.init(milliseconds:)))
    }
}
