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
                        groupID: groupID, codeHash: code.hash(secret: secret),
                        sealed: code.sealed(groupID: groupID, secret: secret), actorID: createdBy, at: now,
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
        groupID: String, codeHash: [UInt8], sealed: [UInt8], actorID: String, at now: Int64, expires: Int64,
        on db: any SQLConnection
    ) throws {
        try db.run(
            """
            INSERT INTO invite_codes (group_id, code_hash, created_by, created_ms, expires_ms, code_sealed)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6)
            ON CONFLICT (group_id) DO UPDATE SET code_hash = excluded.code_hash, created_by = excluded.created_by,
                created_ms = excluded.created_ms, expires_ms = excluded.expires_ms, disabled_ms = NULL,
                locked_until_ms = NULL, code_sealed = excluded.code_sealed
            """,
            [.text(groupID), .blob(codeHash), .text(actorID), .integer(now), .integer(expires), .blob(sealed)])
    }

    /// The group's current code for an owner or admin, read back from its sealed copy: the
    /// code while it is live (not disabled, not expired at `now`), nil otherwise or for a code made
    /// before migration 0025 (no copy: rotate once). `notFound("invite code")` when the group never had
    /// one. Writes nothing: showing a code changes nothing.
    public static func current(
        groupID: String, actorID: String, secret: [UInt8], at now: Int64, on db: any SQLConnection
    ) throws -> (code: InviteCode?, record: InviteCodeRecord) {
        _ = try GroupStore.managerAccess(groupID: groupID, userID: actorID, on: db)
        guard let record = try record(groupID: groupID, on: db) else { throw DomainError.notFound("invite code") }
        guard record.disabledAt == nil, record.expiresAt.milliseconds > now,
            let row = try db.queryOne("SELECT code_sealed FROM invite_codes WHERE group_id = ?1", [.text(groupID)]),
            let sealed = row.blob("code_sealed")
        else { return (nil, record) }
        return (InviteCode(unsealing: sealed, groupID: groupID, secret: secret), record)
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
        /// The code is live, but the caller was removed (or `left`) after it was made: they need a newer
        /// code or an invitation. Counts against the caller and the IP like an invalid code.
        case needsNewInvite(left: Bool)
        /// One generic answer for every unusable code; `lockedCode` when this failure was the one
        /// that locked the code (for the lockout metric; the caller's answer stays the same).
        case invalid(lockedCode: Bool)
        /// The user's or the client IP's failure budget is spent.
        case rateLimited(retryAfterSeconds: Int)
    }

    /// Joins `user` to the group whose live code hashes to `codeHash` (nil: input that cannot be a
    /// code). Order: user and IP budgets (429), lookup, lock, expiry/disabled (`usableCode`), rejoin
    /// rule, then the member limit (throws `groupMemberLimit`). A rejoin-rule refusal comes from the
    /// caller's own past, so it counts against the caller and the IP only: no caller can lock a live
    /// code for others. Event `member_joined`.
    public static func join(
        codeHash: [UInt8]?, user: User, clientIP: String, at now: Int64, on db: any SQLConnection
    ) throws -> JoinOutcome {
        let code: UsableCode
        switch try usableCode(codeHash: codeHash, userID: user.id, clientIP: clientIP, at: now, on: db) {
        case .usable(let found): code = found
        case .invalid(let lockedCode): return .invalid(lockedCode: lockedCode)
        case .rateLimited(let seconds): return .rateLimited(retryAfterSeconds: seconds)
        }
        var group = code.group
        let previous = try GroupStore.member(groupID: group.id, userID: user.id, on: db)
        guard
            previous?.status == .active
                || GroupRules.mayRejoin(endedMs: previous?.removedAt?.milliseconds, inviteCreatedMs: code.createdMs)
        else {
            try record(subjects: budgetSubjects(userID: user.id, clientIP: clientIP), at: now, on: db)
            return .needsNewInvite(left: previous?.status == .left)
        }
        if previous?.status == .active { return .alreadyMember(try GroupStore.detail(group, on: db)) }
        let (_, changes) = try GroupStore.admit(user, to: &group, role: .member, previous: previous, at: now, on: db)
        try ChangeLog.append(changes, event: .memberJoined, actor: .user(user.id), at: now, on: db)
        return .joined(try GroupStore.detail(group, on: db))
    }

    /// What `GET /v1/join/{code}` comes to: the landing page's preview, or the join's own refusals.
    public enum PreviewOutcome: Sendable, Equatable {
        /// The code is live: its group's preview.
        case preview(InvitePreview)
        /// The same generic answer as a join's; `lockedCode` as in `JoinOutcome.invalid`.
        case invalid(lockedCode: Bool)
        /// The caller's (when signed in) or the client IP's failure budget is spent.
        case rateLimited(retryAfterSeconds: Int)
    }

    /// The preview of the group whose live code hashes to `codeHash`, for the `/join/<CODE>` landing
    /// page. It is a join attempt to the attempt limiter (docs/security.md#invite-code-previews): the
    /// same budgets checked first (the caller's when `userID` is given, the IP's always), the same
    /// failures recorded against the same subjects (and a disabled or expired code's against that
    /// code, locking it at the fifth), and one answer for every unusable code — so a preview guesses
    /// no faster than a join and spends the same budget. A usable code records nothing (a reload of
    /// the landing page costs nothing) and the rejoin rule is not applied: it is the caller's past,
    /// which the join itself answers. Writes only attempt records; no change-log event.
    public static func preview(
        codeHash: [UInt8]?, userID: String?, clientIP: String, at now: Int64, on db: any SQLConnection
    ) throws -> PreviewOutcome {
        switch try usableCode(codeHash: codeHash, userID: userID, clientIP: clientIP, at: now, on: db) {
        case .usable(let code):
            var preview = InvitePreview(code.group, invitedByName: code.creatorName)
            if let userID, let member = try GroupStore.member(groupID: code.group.id, userID: userID, on: db) {
                preview.yourMembership =
                    member.status == .active
                    ? .active
                    : GroupRules.mayRejoin(endedMs: member.removedAt?.milliseconds, inviteCreatedMs: code.createdMs)
                        ? .mayRejoin : .needsNewInvite
            }
            return .preview(preview)
        case .invalid(let lockedCode): return .invalid(lockedCode: lockedCode)
        case .rateLimited(let seconds): return .rateLimited(retryAfterSeconds: seconds)
        }
    }

    /// A live code's group, when it was made, and its maker's display name (nil: an operator's code).
    struct UsableCode {
        var group: Group
        var createdMs: Int64
        var creatorName: String?
    }

    /// `usableCode`'s answer.
    enum Lookup {
        case usable(UsableCode)
        case invalid(lockedCode: Bool)
        case rateLimited(Int)
    }

    /// The per-user (when signed in) and per-IP budget subjects with their windows.
    static func budgets(userID: String?, clientIP: String) -> [(String, AttemptWindow)] {
        (userID.map { [(userSubject($0), InviteCode.userWindow)] } ?? []) + [(ipSubject(clientIP), InviteCode.ipWindow)]
    }

    static func budgetSubjects(userID: String?, clientIP: String) -> [String] {
        budgets(userID: userID, clientIP: clientIP).map(\.0)
    }

    /// The shared first half of a join and a preview. Order: user and IP budgets (429), lookup, lock,
    /// group deleted, expiry/disabled. Every failure counts against the user and the IP; a disabled
    /// or expired code's failures also against that code, and its fifth within an hour locks it for
    /// an hour. A wrong code names no code (only keyed hashes are stored), so it counts against no code.
    static func usableCode(
        codeHash: [UInt8]?, userID: String?, clientIP: String, at now: Int64, on db: any SQLConnection
    ) throws -> Lookup {
        let budgets = budgets(userID: userID, clientIP: clientIP)
        var worst = 0
        for (subject, window) in budgets {
            if case .refused(let seconds) = window.evaluate(
                failureTimes: try failureTimes(subject: subject, window: window, at: now, on: db), now: now)
            {
                worst = max(worst, seconds)
            }
        }
        if worst > 0 { return .rateLimited(worst) }
        let budgetSubjects = budgets.map(\.0)

        guard let codeHash,
            let row = try db.queryOne(
                """
                SELECT c.group_id AS group_id, c.created_ms AS created_ms, c.expires_ms AS expires_ms,
                       c.disabled_ms AS disabled_ms, c.locked_until_ms AS locked_until_ms, u.display_name AS creator_name
                FROM invite_codes c LEFT JOIN users u ON u.id = c.created_by
                WHERE c.code_hash = ?1
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
        guard let group = try GroupStore.group(id: groupID, on: db), row.int("disabled_ms") == nil, expires > now
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
        // An operator's code (`created_by` "admin") has no user behind it: no name. A user's code is
        // disabled with their account (`revokeGrants`), so a usable one has its maker's name.
        return .usable(UsableCode(group: group, createdMs: created, creatorName: row.string("creator_name")))
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
