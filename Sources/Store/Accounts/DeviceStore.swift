public import Domain
public import Storage

/// SQL for devices (migration 0013; docs/notifications.md#devices). Every function runs inside the
/// caller's transaction. Devices are delivery addresses, not documents: nothing here touches the
/// change log.
public enum DeviceStore {
    /// What `register` did.
    public enum Outcome: Sendable, Equatable {
        /// A new device for the account.
        case created
        /// The account's device of that id, replaced and seen again.
        case updated
    }

    /// Registers (or re-registers) `deviceID` for `userID` (`PUT /v1/me/devices/{device_id}`):
    /// - the same provider address registered anywhere else (another account signed in on the same
    ///   phone, or the same account under a new id) moves here: one address reaches one device;
    /// - `created_ms` survives re-registration, `last_seen_ms` becomes `now`, `sessionHash` is the
    ///   session whose logout drops the device;
    /// - past `DeviceRules.maxDevicesPerUser`, the least recently seen devices are dropped.
    public static func register(
        userID: String, deviceID: String, platform: Device.Platform, provider: Device.Provider,
        address: Device.Address, appVersion: String?, locale: String?, sessionHash: [UInt8]?, at now: Int64,
        on db: any SQLConnection
    ) throws -> (Device, Outcome) {
        try db.run(
            "DELETE FROM devices WHERE provider = ?1 AND address = ?2 AND NOT (user_id = ?3 AND device_id = ?4)",
            [.text(provider.rawValue), .text(address.key), .text(userID), .text(deviceID)])
        let existing = try db.queryOne(
            "SELECT created_ms FROM devices WHERE user_id = ?1 AND device_id = ?2", [.text(userID), .text(deviceID)])
        var keys: (p256dh: String?, auth: String?) = (nil, nil)
        if case .webPush(let subscription) = address { keys = (subscription.p256dh, subscription.auth) }
        try db.run(
            """
            INSERT INTO devices (user_id, device_id, platform, provider, address, p256dh, auth, app_version, locale,
                session_hash, created_ms, last_seen_ms)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11)
            ON CONFLICT (user_id, device_id) DO UPDATE SET platform = ?3, provider = ?4, address = ?5, p256dh = ?6,
                auth = ?7, app_version = ?8, locale = ?9, session_hash = ?10, last_seen_ms = ?11
            """,
            [
                .text(userID), .text(deviceID), .text(platform.rawValue), .text(provider.rawValue), .text(address.key),
                SQLValue(keys.p256dh), SQLValue(keys.auth), SQLValue(appVersion), SQLValue(locale),
                SQLValue(sessionHash), .integer(now),
            ])
        let surplus = try db.query(
            "SELECT device_id FROM devices WHERE user_id = ?1 ORDER BY last_seen_ms DESC, device_id DESC", [.text(userID)]
        ).dropFirst(DeviceRules.maxDevicesPerUser)
        for row in surplus {
            try db.run("DELETE FROM devices WHERE user_id = ?1 AND device_id = ?2", [.text(userID), row["device_id"]])
        }
        let device = Device(
            deviceID: deviceID, platform: platform, provider: provider, address: address, appVersion: appVersion,
            locale: locale, createdAt: Timestamp(milliseconds: existing?.int("created_ms") ?? now),
            lastSeenAt: Timestamp(milliseconds: now))
        return (device, existing == nil ? .created : .updated)
    }

    /// The account's devices, most recently seen first.
    public static func devices(userID: String, on db: any SQLConnection) throws -> [Device] {
        try db.query(
            "SELECT \(columns()) FROM devices WHERE user_id = ?1 ORDER BY last_seen_ms DESC, device_id", [.text(userID)]
        ).map(deviceFromRow)
    }

    /// The devices of several accounts in one query, as (account, device) pairs: each account's
    /// in `devices(userID:)` order, the accounts in `userIDs` order.
    public static func devices(userIDs: [String], on db: any SQLConnection) throws -> [(userID: String, device: Device)] {
        guard !userIDs.isEmpty else { return [] }
        let placeholders = SQLText.parameters(count: userIDs.count, from: 1)
        let rows = try db.query(
            "SELECT user_id, \(columns()) FROM devices WHERE user_id IN (\(placeholders)) ORDER BY last_seen_ms DESC, device_id",
            userIDs.map { .text($0) })
        var byUser: [String: [Device]] = [:]
        for row in rows {
            guard let userID = row.string("user_id") else { throw StoreError.corruptRow(table: "devices") }
            byUser[userID, default: []].append(try deviceFromRow(row))
        }
        return userIDs.flatMap { userID in (byUser[userID] ?? []).map { (userID, $0) } }
    }

    /// Deletes one device of the account; false when it has none of that id.
    @discardableResult
    public static func delete(userID: String, deviceID: String, on db: any SQLConnection) throws -> Bool {
        try db.run("DELETE FROM devices WHERE user_id = ?1 AND device_id = ?2", [.text(userID), .text(deviceID)]) > 0
    }

    /// Drops the devices a session registered (its logout: the phone signed out gets no more pushes).
    @discardableResult
    public static func deleteRegistered(bySession tokenHash: [UInt8], on db: any SQLConnection) throws -> Int {
        try db.run("DELETE FROM devices WHERE session_hash = ?1", [.blob(tokenHash)])
    }

    /// Drops every device of the account (account deletion).
    @discardableResult
    public static func deleteAll(userID: String, on db: any SQLConnection) throws -> Int {
        try db.run("DELETE FROM devices WHERE user_id = ?1", [.text(userID)])
    }

    /// Purges devices not seen since `before` (Retention; `DeviceRules.unseenLifetimeMilliseconds`).
    public static func purgeUnseen(before: Int64, on db: any SQLConnection) throws -> Int {
        try db.run("DELETE FROM devices WHERE last_seen_ms < ?1", [.integer(before)])
    }

    /// Columns `deviceFromRow` reads, optionally qualified by a table alias.
    static func columns(_ alias: String = "") -> String {
        let prefix = alias.isEmpty ? "" : alias + "."
        return ["device_id", "platform", "provider", "address", "p256dh", "auth", "app_version", "locale", "created_ms", "last_seen_ms"]
            .map { prefix + $0 }.joined(separator: ", ")
    }

    static func deviceFromRow(_ row: Row) throws -> Device {
        guard let id = row.string("device_id"),
            let platform = row.string("platform").flatMap(Device.Platform.init(rawValue:)),
            let provider = row.string("provider").flatMap(Device.Provider.init(rawValue:)),
            let key = row.string("address"), let created = row.int("created_ms"), let seen = row.int("last_seen_ms")
        else { throw StoreError.corruptRow(table: "devices") }
        let address: Device.Address
        if provider == .webpush {
            guard let p256dh = row.string("p256dh"), let auth = row.string("auth") else {
                throw StoreError.corruptRow(table: "devices")
            }
            address = .webPush(Device.WebPushSubscription(endpoint: key, p256dh: p256dh, auth: auth))
        } else {
            address = .token(key)
        }
        return Device(
            deviceID: id, platform: platform, provider: provider, address: address, appVersion: row.string("app_version"),
            locale: row.string("locale"), createdAt: Timestamp(milliseconds: created), lastSeenAt: Timestamp(milliseconds: seen))
    }
}
