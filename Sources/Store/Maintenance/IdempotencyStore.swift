public import Storage

/// SQL for `idempotency_keys` (migration 0027; docs/apps.md#retries-idempotency-key): one row per
/// (account, key) a signed-in POST claimed in its first write transaction, with the answer stored once
/// the request finished.
public enum IdempotencyStore {
    /// How long a key holds its answer: the 24 hours a phone's offline queue may replay within. After it
    /// the key is free again (a claim overwrites an expired row) and the retention sweep deletes the row.
    public static let lifetimeMilliseconds: Int64 = lifetimeHours * 3600 * 1000
    /// `lifetimeMilliseconds` in hours, as `GET /v1/config` tells clients.
    public static let lifetimeHours: Int64 = 24

    /// A stored key: the request it was first used for, and its answer once stored.
    public struct Record: Sendable, Equatable {
        /// SHA-256 of the first request's method, path and body.
        public var fingerprint: [UInt8]
        public var createdMilliseconds: Int64
        /// The first answer; nil while the first request is still running (or if its process stopped
        /// between its commit and storing the answer).
        public var answer: Answer?
    }

    /// A stored answer: what is sent again.
    public struct Answer: Sendable, Equatable {
        public var status: Int
        public var contentType: String?
        public var body: [UInt8]

        public init(status: Int, contentType: String?, body: [UInt8]) {
            self.status = status
            self.contentType = contentType
            self.body = body
        }
    }

    /// The live (younger than `lifetimeMilliseconds` at `now`) record of `key` for `userID`, if any.
    public static func record(userID: String, key: String, at now: Int64, on db: any SQLConnection) throws -> Record? {
        guard
            let row = try db.query(
                """
                SELECT fingerprint, created_ms, status, content_type, body FROM idempotency_keys
                WHERE user_id = ?1 AND idem_key = ?2 AND created_ms > ?3
                """, [.text(userID), .text(key), .integer(now - lifetimeMilliseconds)]
            ).first
        else { return nil }
        let answer = row.int("status").map { status in
            Answer(status: Int(status), contentType: row.string("content_type"), body: row.blob("body") ?? [])
        }
        return Record(fingerprint: row.blob("fingerprint") ?? [], createdMilliseconds: row.int("created_ms") ?? 0, answer: answer)
    }

    /// Claims `key` for `userID` inside the caller's write transaction: true when this transaction now
    /// holds it (a new row, or one replacing an expired row), false when a live claim exists — another
    /// request with the same key committed first, and the caller must roll its write back.
    public static func claim(
        userID: String, key: String, fingerprint: [UInt8], at now: Int64, on db: any SQLConnection
    ) throws -> Bool {
        try db.run(
            """
            INSERT INTO idempotency_keys (user_id, idem_key, fingerprint, created_ms) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (user_id, idem_key) DO UPDATE SET fingerprint = excluded.fingerprint,
                created_ms = excluded.created_ms, status = NULL, content_type = NULL, body = NULL
            WHERE idempotency_keys.created_ms <= ?5
            """,
            [.text(userID), .text(key), .blob(fingerprint), .integer(now), .integer(now - lifetimeMilliseconds)]) == 1
    }

    /// Stores the answer of the request that claimed `key` at `claimedAt` (a later claim of an expired
    /// key is left alone).
    public static func store(
        _ answer: Answer, userID: String, key: String, claimedAt: Int64, on db: any SQLConnection
    ) throws {
        try db.run(
            """
            UPDATE idempotency_keys SET status = ?4, content_type = ?5, body = ?6
            WHERE user_id = ?1 AND idem_key = ?2 AND created_ms = ?3
            """,
            [
                .text(userID), .text(key), .integer(claimedAt), .integer(Int64(answer.status)),
                answer.contentType.map(SQLValue.text) ?? .null, answer.body.isEmpty ? .null : .blob(answer.body),
            ])
    }

    /// Deletes keys claimed before `before` (the retention sweep); returns how many.
    public static func purge(before: Int64, on db: any SQLConnection) throws -> Int {
        try db.run("DELETE FROM idempotency_keys WHERE created_ms < ?1", [.integer(before)])
    }

    /// Deletes every key of `userID` (account deletion: stored answers may hold its data).
    public static func deleteAll(userID: String, on db: any SQLConnection) throws {
        try db.run("DELETE FROM idempotency_keys WHERE user_id = ?1", [.text(userID)])
    }
}
