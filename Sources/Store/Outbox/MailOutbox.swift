public import Domain
public import Storage

/// The mail outbox (migration 0015, docs/mail.md#pipeline): producers `enqueue` inside the write
/// transaction of the change that causes the mail; the mail dispatcher `claim`s due rows with a
/// lease and settles each (`sent`, `retry`, `fail`). A row's body (it holds a link that is a
/// credential) is cleared as soon as the row leaves `pending`.
public enum MailOutbox {
    /// A row's state.
    public enum State: String, Sendable, CaseIterable, Encodable {
        case pending, sent, failed, unsendable
    }

    /// A claimed mail, with what the sender needs.
    public struct Mail: Sendable, Equatable {
        public var id: Int64
        public var kind: MailKind
        public var recipient: String
        public var subject: String
        public var body: String
        public var createdAt: Int64
        public var attempts: Int
        public var expiresAt: Int64
    }

    /// One row as `chronir-admin mail list` shows it (never the body).
    public struct Entry: Sendable, Equatable, Encodable {
        public var id: Int64
        public var kind: MailKind
        public var recipient: String
        public var state: State
        public var attempts: Int
        public var createdAt: Int64
        public var nextAttemptAt: Int64
        public var lastError: String?
        enum CodingKeys: String, CodingKey {
            case id, kind, recipient, state, attempts
            case createdAt = "created_ms"
            case nextAttemptAt = "next_attempt_ms"
            case lastError = "last_error"
        }
    }

    /// Queues `mail` in the caller's transaction: `pending` when `sendable` (SMTP is configured),
    /// else recorded `unsendable` without its body (nothing could ever send it; the admin CLI stands
    /// in for the link). Returns the row id.
    @discardableResult
    public static func enqueue(_ mail: MailContent, sendable: Bool, at now: Int64, on db: any SQLConnection) throws -> Int64 {
        let row = try db.queryOne(
            """
            INSERT INTO mail_outbox (kind, recipient, subject, body, user_id, created_ms, next_attempt_ms, expires_ms,
                state, done_ms, last_error)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8, ?9, ?10)
            RETURNING id
            """,
            [
                .text(mail.kind.rawValue), .text(mail.recipient), .text(mail.subject), sendable ? .text(mail.body) : .null,
                SQLValue(mail.userID), .integer(now), .integer(mail.expiresAt),
                .text(sendable ? State.pending.rawValue : State.unsendable.rawValue), sendable ? .null : .integer(now),
                sendable ? .null : .text("no SMTP server configured"),
            ])
        guard let id = row?.int("id") else { throw StoreError.corruptRow(table: "mail_outbox") }
        return id
    }

    /// Queues a mail whose text is made only when it is sent: `body` and `user_id` stay
    /// NULL until `MailDispatcher` prepares the row (`unprepared`, `prepare`) or settles it `failed`.
    /// The request's writes are then the same whatever the recipient turns out to be — a password
    /// reset for a known address and for an unknown one insert the same row. `sendable` as in `enqueue`.
    @discardableResult
    public static func enqueueRequest(
        kind: MailKind, recipient: String, subject: String, expiresAt: Int64, sendable: Bool, at now: Int64, on db: any SQLConnection
    ) throws -> Int64 {
        let row = try db.queryOne(
            """
            INSERT INTO mail_outbox (kind, recipient, subject, body, user_id, created_ms, next_attempt_ms, expires_ms,
                state, done_ms, last_error)
            VALUES (?1, ?2, ?3, NULL, NULL, ?4, ?4, ?5, ?6, ?7, ?8)
            RETURNING id
            """,
            [
                .text(kind.rawValue), .text(recipient), .text(subject), .integer(now), .integer(expiresAt),
                .text(sendable ? State.pending.rawValue : State.unsendable.rawValue), sendable ? .null : .integer(now),
                sendable ? .null : .text("no SMTP server configured"),
            ])
        guard let id = row?.int("id") else { throw StoreError.corruptRow(table: "mail_outbox") }
        return id
    }

    /// A queued request (`enqueueRequest`) not yet prepared.
    public struct Request: Sendable, Equatable {
        public var id: Int64
        public var kind: MailKind
        public var recipient: String
        public var createdAt: Int64
        public var expiresAt: Int64
    }

    /// Up to `limit` due, unleased pending rows without a body (requests to prepare), oldest first;
    /// on PostgreSQL locked until COMMIT and skipping rows another transaction holds, so dispatchers
    /// preparing at once (`.concurrent` writes) never prepare one request twice.
    public static func unprepared(at now: Int64, limit: Int, on db: any SQLConnection) throws -> [Request] {
        try db.query(
            """
            SELECT id, kind, recipient, created_ms, expires_ms FROM mail_outbox m
            WHERE state = 'pending' AND body IS NULL AND next_attempt_ms <= ?1 AND expires_ms > ?1
                AND (lease_until_ms IS NULL OR lease_until_ms <= ?1)
            ORDER BY id LIMIT ?2\(db.forUpdateSkipLocked(of: "m"))
            """, [.integer(now), .integer(Int64(limit))]
        ).map { row in
            guard let id = row.int("id"), let kind = row.string("kind"), let recipient = row.string("recipient"),
                let created = row.int("created_ms"), let expires = row.int("expires_ms")
            else { throw StoreError.corruptRow(table: "mail_outbox") }
            return Request(id: id, kind: MailKind(rawValue: kind), recipient: recipient, createdAt: created, expiresAt: expires)
        }
    }

    /// Gives a request its text and the account it concerns; it is then claimed like any mail.
    public static func prepare(_ id: Int64, body: String, userID: String, on db: any SQLConnection) throws {
        try db.run(
            "UPDATE mail_outbox SET body = ?2, user_id = ?3 WHERE id = ?1 AND state = 'pending' AND body IS NULL",
            [.integer(id), .text(body), .text(userID)])
    }

    /// How often one address may be told "someone tried to use your address" (registration or an
    /// address change naming it): once an hour, so neither endpoint can flood a stranger's mailbox.
    public static let accountExistsNoticeIntervalMilliseconds: Int64 = 3_600_000

    /// Queues an `account_exists` notice unless one went to the same address within the interval;
    /// returns whether it queued one. Mail must be configured (the caller only answers without
    /// enumeration then).
    @discardableResult
    public static func enqueueAccountExistsNotice(_ mail: MailContent, at now: Int64, on db: any SQLConnection) throws -> Bool {
        let recent = try db.scalar(
            "SELECT COUNT(*) FROM mail_outbox WHERE kind = ?1 AND recipient = ?2 AND created_ms > ?3",
            [.text(MailKind.accountExists.rawValue), .text(mail.recipient), .integer(now - accountExistsNoticeIntervalMilliseconds)])
        guard recent == .integer(0) else { return false }
        try enqueue(mail, sendable: true, at: now, on: db)
        return true
    }

    /// When mails of `kind` to `recipient` were queued since `since` (any state: a sent or failed mail
    /// still counts toward a per-recipient cap), oldest first. Index `mail_outbox_recipient`.
    public static func createdTimes(kind: MailKind, recipient: String, since: Int64, on db: any SQLConnection) throws -> [Int64] {
        try db.query(
            """
            SELECT created_ms FROM mail_outbox WHERE recipient = ?1 AND kind = ?2 AND created_ms > ?3 ORDER BY created_ms
            """, [.text(recipient), .text(kind.rawValue), .integer(since)]
        ).compactMap { $0.int("created_ms") }
    }

    /// Leases up to `limit` due pending mails to `owner` until `leaseUntil`; mails past their expiry
    /// are settled `failed` ("expired") instead and not returned, and requests not yet prepared
    /// (`enqueueRequest`) are skipped.
    ///
    /// Safe as a `.concurrent` write: the rows it expires and the rows it leases are taken with
    /// `forUpdateSkipLocked`, so claimers on other instances never wait for each other (nor deadlock
    /// expiring the same rows in another order) and never lease one mail twice.
    public static func claim(owner: String, at now: Int64, leaseUntil: Int64, limit: Int, on db: any SQLConnection) throws -> [Mail] {
        try db.run(
            """
            UPDATE mail_outbox SET state = 'failed', body = NULL, done_ms = ?1, last_error = 'expired before it could be sent',
                lease_owner = NULL, lease_until_ms = NULL
            WHERE id IN (
                SELECT id FROM mail_outbox m
                WHERE state = 'pending' AND expires_ms <= ?1 AND (lease_until_ms IS NULL OR lease_until_ms <= ?1)
                \(db.forUpdateSkipLocked(of: "m")))
            """, [.integer(now)])
        let rows = try db.query(
            """
            SELECT id, kind, recipient, subject, body, created_ms, attempts, expires_ms FROM mail_outbox m
            WHERE state = 'pending' AND body IS NOT NULL AND next_attempt_ms <= ?1 AND (lease_until_ms IS NULL OR lease_until_ms <= ?1)
            ORDER BY next_attempt_ms, id LIMIT ?2\(db.forUpdateSkipLocked(of: "m"))
            """, [.integer(now), .integer(Int64(limit))])
        guard !rows.isEmpty else { return [] }
        let mails = try rows.map { row in
            guard let id = row.int("id"), let kind = row.string("kind"), let recipient = row.string("recipient"),
                let subject = row.string("subject"), let body = row.string("body"), let created = row.int("created_ms"),
                let attempts = row.int("attempts"), let expires = row.int("expires_ms")
            else { throw StoreError.corruptRow(table: "mail_outbox") }
            return Mail(
                id: id, kind: MailKind(rawValue: kind), recipient: recipient, subject: subject, body: body, createdAt: created,
                attempts: Int(attempts), expiresAt: expires)
        }
        let placeholders = SQLText.parameters(count: mails.count, from: 3)
        try db.run(
            "UPDATE mail_outbox SET lease_owner = ?1, lease_until_ms = ?2 WHERE id IN (\(placeholders))",
            [.text(owner), .integer(leaseUntil)] + mails.map { SQLValue.integer($0.id) })
        return mails
    }

    /// The server accepted the mail: `sent`, body cleared.
    public static func markSent(_ id: Int64, at now: Int64, on db: any SQLConnection) throws {
        try db.run(
            """
            UPDATE mail_outbox SET state = 'sent', body = NULL, done_ms = ?2, attempts = attempts + 1, lease_owner = NULL,
                lease_until_ms = NULL, last_error = NULL
            WHERE id = ?1 AND state = 'pending'
            """, [.integer(id), .integer(now)])
    }

    /// A permanent refusal: `failed` with `error`, body cleared.
    public static func fail(_ id: Int64, error: String, at now: Int64, on db: any SQLConnection) throws {
        try db.run(
            """
            UPDATE mail_outbox SET state = 'failed', body = NULL, done_ms = ?2, attempts = attempts + 1, lease_owner = NULL,
                lease_until_ms = NULL, last_error = ?3
            WHERE id = ?1 AND state = 'pending'
            """, [.integer(id), .integer(now), .text(String(error.prefix(500)))])
    }

    /// A transient failure: due again at `nextAttempt`; false (and `failed`) when that is past the
    /// mail's expiry.
    public static func retry(_ id: Int64, at nextAttempt: Int64, error: String, now: Int64, on db: any SQLConnection) throws -> Bool {
        guard let row = try db.queryOne("SELECT expires_ms FROM mail_outbox WHERE id = ?1", [.integer(id)]),
            let expires = row.int("expires_ms"), nextAttempt < expires
        else {
            try fail(id, error: "expired: " + error, at: now, on: db)
            return false
        }
        try db.run(
            """
            UPDATE mail_outbox SET attempts = attempts + 1, next_attempt_ms = ?2, lease_owner = NULL, lease_until_ms = NULL,
                last_error = ?3
            WHERE id = ?1 AND state = 'pending'
            """, [.integer(id), .integer(nextAttempt), .text(String(error.prefix(500)))])
        return true
    }

    /// Pending mails (the queue depth gauge). One statement.
    public static func depth(on db: any SQLConnection) throws -> Int {
        Int(try db.queryOne("SELECT COUNT(*) AS n FROM mail_outbox WHERE state = 'pending'", [])?.int("n") ?? 0)
    }

    /// Rows per state (`chronir-admin mail stats`).
    public static func counts(on db: any SQLConnection) throws -> [State: Int] {
        var counts: [State: Int] = [:]
        for row in try db.query("SELECT state, COUNT(*) AS n FROM mail_outbox GROUP BY state", []) {
            if let state = row.string("state").flatMap(State.init(rawValue:)) { counts[state] = Int(row.int("n") ?? 0) }
        }
        return counts
    }

    /// The newest `limit` rows, optionally of one state (`chronir-admin mail list`).
    public static func list(state: State?, limit: Int, on db: any SQLConnection) throws -> [Entry] {
        try db.query(
            """
            SELECT id, kind, recipient, state, attempts, created_ms, next_attempt_ms, last_error FROM mail_outbox
            WHERE CAST(?1 AS TEXT) IS NULL OR state = ?1
            ORDER BY id DESC LIMIT ?2
            """, [SQLValue(state?.rawValue), .integer(Int64(limit))]
        ).map { row in
            guard let id = row.int("id"), let kind = row.string("kind"), let recipient = row.string("recipient"),
                let state = row.string("state").flatMap(State.init(rawValue:)), let attempts = row.int("attempts"),
                let created = row.int("created_ms"), let next = row.int("next_attempt_ms")
            else { throw StoreError.corruptRow(table: "mail_outbox") }
            return Entry(
                id: id, kind: MailKind(rawValue: kind), recipient: recipient, state: state, attempts: Int(attempts),
                createdAt: created, nextAttemptAt: next, lastError: row.string("last_error"))
        }
    }

    /// Makes a pending mail due at once (`chronir-admin mail retry ID`): clears its lease and back-off.
    /// A mail that left `pending` has no body any more and cannot be sent again (issue a new link
    /// instead); returns whether a pending row was found.
    public static func retryNow(_ id: Int64, at now: Int64, on db: any SQLConnection) throws -> Bool {
        try db.run(
            """
            UPDATE mail_outbox SET next_attempt_ms = ?2, lease_owner = NULL, lease_until_ms = NULL
            WHERE id = ?1 AND state = 'pending'
            """, [.integer(id), .integer(now)]) == 1
    }

    /// Deletes rows that left `pending` before `cutoff` (retention).
    @discardableResult
    public static func purgeDone(before cutoff: Int64, on db: any SQLConnection) throws -> Int {
        try db.run("DELETE FROM mail_outbox WHERE done_ms IS NOT NULL AND done_ms < ?1", [.integer(cutoff)])
    }
}
