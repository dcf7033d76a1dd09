public import Domain
import Hashing
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
    ///
    /// A `.concurrent` write: the account's row (its device ids and limit) and the address
    /// (`SQLConnection.keyLock`: the next registration of it may find no row yet) are locked before
    /// anything is read. What an app start sends — the same device again, or a new one with an
    /// address nobody holds — runs beside other writes: it only inserts a row or updates its own
    /// without touching its keys, which a delivery's foreign-key check on the row never waits for.
    /// Moving an address, changing the device's address or dropping devices deletes or re-keys rows a
    /// delivery being staged may point at: that throws `StorageError.exclusiveWriteNeeded`, having
    /// changed nothing, unless the write runs alone (`SQLConnection.writesAlone`), and the writer
    /// queue runs it again as `.immediate`.
    public static func register(
        userID: String, deviceID: String, platform: Device.Platform, provider: Device.Provider,
        address: Device.Address, appVersion: String?, locale: String?, sessionHash: [UInt8]?, at now: Int64,
        on db: any SQLConnection
    ) throws -> (Device, Outcome) {
        let reads = try db.queryEach([
            AccountStore.accountLock(userID: userID, on: db),
            db.keyLock(space: addressLockSpace, key: addressLockKey(provider: provider, address: address.key)),
            (
                """
                SELECT user_id, device_id, provider, address, created_ms FROM devices
                WHERE user_id = ?1 OR (provider = ?2 AND address = ?3)
                """,
                [.text(userID), .text(provider.rawValue), .text(address.key)]
            ),
        ])
        try db.requireKeyLock(reads[1])
        let held = reads[2]
        func isThisDevice(_ row: Row) -> Bool { row.string("user_id") == userID && row.string("device_id") == deviceID }
        let existing = held.first(where: isThisDevice)
        func holdsAddress(_ row: Row) -> Bool { row.string("provider") == provider.rawValue && row.string("address") == address.key }
        let addressElsewhere = held.contains { !isThisDevice($0) && holdsAddress($0) }
        let keepsAddress = existing.map(holdsAddress) ?? true
        let accountDevices = held.filter { $0.string("user_id") == userID }.count + (existing == nil ? 1 : 0)
        let alone = addressElsewhere || !keepsAddress || accountDevices > DeviceRules.maxDevicesPerUser
        if alone, !db.writesAlone { throw StorageError.exclusiveWriteNeeded }

        var keys: (p256dh: String?, auth: String?) = (nil, nil)
        if case .webPush(let subscription) = address { keys = (subscription.p256dh, subscription.auth) }
        if existing != nil, keepsAddress {
            // Its keys (the account, the id, the provider and address) stay: a non-key update.
            try db.run(
                """
                UPDATE devices SET platform = ?3, p256dh = ?4, auth = ?5, app_version = ?6, locale = ?7, session_hash = ?8,
                    last_seen_ms = ?9
                WHERE user_id = ?1 AND device_id = ?2
                """,
                [
                    .text(userID), .text(deviceID), .text(platform.rawValue), SQLValue(keys.p256dh), SQLValue(keys.auth),
                    SQLValue(appVersion), SQLValue(locale), SQLValue(sessionHash), .integer(now),
                ])
        } else {
            if addressElsewhere {
                try db.run(
                    "DELETE FROM devices WHERE provider = ?1 AND address = ?2 AND NOT (user_id = ?3 AND device_id = ?4)",
                    [.text(provider.rawValue), .text(address.key), .text(userID), .text(deviceID)])
            }
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
        }
        if alone {
            let surplus = try db.query(
                "SELECT device_id FROM devices WHERE user_id = ?1 ORDER BY last_seen_ms DESC, device_id DESC", [.text(userID)]
            ).dropFirst(DeviceRules.maxDevicesPerUser)
            for row in surplus {
                try db.run("DELETE FROM devices WHERE user_id = ?1 AND device_id = ?2", [.text(userID), row["device_id"]])
            }
        }
        let device = Device(
            deviceID: deviceID, platform: platform, provider: provider, address: address, appVersion: appVersion,
            locale: locale, createdAt: Timestamp(milliseconds: existing?.int("created_ms") ?? now),
            lastSeenAt: Timestamp(milliseconds: now))
        return (device, existing == nil ? .created : .updated)
    }

    /// `SQLConnection.keyLock`'s space for push addresses (ASCII "dev"): two registrations of one
    /// address run one after the other.
    static let addressLockSpace: Int32 = 0x64_65_76

    /// The address's lock key within `addressLockSpace`: 32 bits of its SHA-256 (two addresses that
    /// share them only wait for each other).
    static func addressLockKey(provider: Device.Provider, address: String) -> Int32 {
        let digest = SHA256.hash(Array("\(provider.rawValue) \(address)".utf8))
        return Int32(bitPattern: UInt32(digest[0]) << 24 | UInt32(digest[1]) << 16 | UInt32(digest[2]) << 8 | UInt32(digest[3]))
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
