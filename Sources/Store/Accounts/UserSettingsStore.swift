public import Domain
public import Storage

/// The synced settings document (docs/personal-sync.md#settings): one row per account that wrote
/// them; every write appends a change (kind `settings`, topic `user:<id>`) in the same transaction,
/// so the user's other devices get it over the realtime `user` topic.
public enum UserSettingsStore {
    /// The account's settings: the stored document, or the defaults at version 0.
    public static func settings(userID: String, on db: any SQLConnection) throws -> UserSettings {
        try db.queryOne("SELECT document FROM user_settings WHERE user_id = ?1", [.text(userID)]).map(settingsFromRow)
            ?? UserSettings()
    }

    static func settingsFromRow(_ row: Row) throws -> UserSettings {
        try DocumentCoding.decode(UserSettings.self, from: Array((row.string("document") ?? "").utf8))
    }

    /// Applies `change` to the current settings and stores the result (validated by the caller's
    /// closure). A stale `expectedVersion` → `versionConflict` with the current document. Nothing
    /// changed → nothing written.
    /// Safe as a `.concurrent` write: the account's row is locked first (`SQLConnection.forUpdate`)
    /// and the settings read by a statement of its own after the lock (sent in the same round trip),
    /// so two changes of one account's settings run one after the other, each on what the one before
    /// committed; the `.immediate` writes that change them otherwise (account deletion and merge)
    /// never run beside it.
    public static func update(
        userID: String, expectedVersion: Int64?, at now: Int64, on db: any SQLConnection,
        change: (inout UserSettings) throws -> Void
    ) throws -> UserSettings {
        let rows = try db.queryEach([
            AccountStore.accountLock(userID: userID, on: db),
            ("SELECT document FROM user_settings WHERE user_id = ?1", [.text(userID)]),
        ])
        let current = try rows[1].first.map(settingsFromRow) ?? UserSettings()
        if let expectedVersion, expectedVersion != current.version {
            throw DomainError.versionConflict(current: DocumentCoding.encode(current))
        }
        var next = current
        try change(&next)
        guard next != current else { return current }
        next.version = current.version + 1
        next.updatedAt = Timestamp(milliseconds: now)
        let document = DocumentCoding.encode(next)
        try db.run(
            """
            INSERT INTO user_settings (user_id, document, version, updated_ms) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (user_id) DO UPDATE SET document = excluded.document, version = excluded.version,
                updated_ms = excluded.updated_ms
            """, [.text(userID), .text(String(decoding: document, as: UTF8.self)), .integer(next.version), .integer(now)])
        try ChangeLog.append(
            [
                Change(
                    topic: ChangeLog.userTopic(userID), kind: .settings, op: current.version == 0 ? .added : .modified, entityID: userID,
                    document: document)
            ],
            event: .settingsUpdated, actor: .user(userID), at: now, on: db)
        return next
    }
}
