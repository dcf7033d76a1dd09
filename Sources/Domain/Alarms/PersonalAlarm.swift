/// A user's own alarm, mirrored for backup and sync across their devices (docs/personal-sync.md;
/// data-schema §4.2). The client chooses the id (a UUID) so an alarm made offline can be sent again
/// without making two. One flat JSON object: the alarm fields (`AlarmSettings.FieldKeys`), the
/// record's (`AlarmSettings.RecordKeys`) and `CodingKeys` below.
///
/// Versions (docs/personal-sync.md#conflicts): `version` is the server's counter, bumped on every
/// write; `updated_at` is the client's time of the edit, what last-write-wins compares when a write
/// names no version. `next_fire_at` is the server's reading of the schedule at the last write (null
/// when disabled or when nothing fires again); the device remains the source of truth for ringing.
public struct PersonalAlarm: Sendable, Codable, Equatable, AlarmRecord {
    public var id: String
    public var userID: String
    /// The alarm fields; the shared-only ones (`assignedTo`, `completionRule`, `graceMinutes`) keep
    /// their defaults and are not part of the document.
    public var settings: AlarmSettings
    /// The master switch (data-schema §3.1 `is_enabled`).
    public var isEnabled: Bool
    public var vibrationEnabled: Bool
    /// Manual position in the client's list.
    public var sortOrder: Int
    public var nextFireAt: Timestamp?
    public var version: Int64
    public var createdAt: Timestamp
    /// The client's time of the last edit (last-write-wins).
    public var updatedAt: Timestamp
    /// Set on delete: the tombstone syncs to the user's other devices, then is purged (30 days).
    public var deletedAt: Timestamp?

    public init(
        id: String, userID: String, settings: AlarmSettings, isEnabled: Bool = true, vibrationEnabled: Bool = true,
        sortOrder: Int = 0, nextFireAt: Timestamp? = nil, version: Int64 = 1, createdAt: Timestamp, updatedAt: Timestamp,
        deletedAt: Timestamp? = nil
    ) {
        self.id = id
        self.userID = userID
        self.settings = settings
        self.isEnabled = isEnabled
        self.vibrationEnabled = vibrationEnabled
        self.sortOrder = sortOrder
        self.nextFireAt = nextFireAt
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.deletedAt = deletedAt
    }

    /// `next_fire_at` as of `now`: the first fire strictly after it, nil when disabled or done.
    public mutating func reschedule(at now: Int64) {
        nextFireAt = isEnabled ? NextFire.after(now, timing: settings.timing).map { Timestamp(milliseconds: $0) } : nil
    }

    /// The personal alarm's own keys; the rest of the same flat object are `AlarmSettings.FieldKeys`
    /// (the alarm fields) and `AlarmSettings.RecordKeys` (what both alarm documents have).
    enum CodingKeys: String, CodingKey, CaseIterable {
        case userID = "user_id"
        case vibrationEnabled = "vibration_enabled"
        case sortOrder = "sort_order"
    }

    public init(from decoder: any Decoder) throws {
        let r = try decoder.container(keyedBy: AlarmSettings.RecordKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try r.decode(String.self, forKey: .id)
        userID = try c.decode(String.self, forKey: .userID)
        settings = try AlarmSettings(
            from: decoder, assignedTo: [], completionRule: .any, graceMinutes: SharedAlarmRules.defaultGraceMinutes)
        isEnabled = try r.decode(Bool.self, forKey: .isEnabled)
        vibrationEnabled = try c.decode(Bool.self, forKey: .vibrationEnabled)
        sortOrder = try c.decode(Int.self, forKey: .sortOrder)
        nextFireAt = try r.decodeIfPresent(Timestamp.self, forKey: .nextFireAt)
        version = try r.decode(Int64.self, forKey: .version)
        createdAt = try r.decode(Timestamp.self, forKey: .createdAt)
        updatedAt = try r.decode(Timestamp.self, forKey: .updatedAt)
        deletedAt = try r.decodeIfPresent(Timestamp.self, forKey: .deletedAt)
    }

    public func encode(to encoder: any Encoder) throws {
        try settings.encodeFields(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(userID, forKey: .userID)
        try c.encode(vibrationEnabled, forKey: .vibrationEnabled)
        try c.encode(sortOrder, forKey: .sortOrder)
        try encodeRecord(to: encoder)
    }
}

/// Personal-alarm rules beyond the alarm fields (which `SharedAlarmRules.validate` checks for both
/// kinds): limits, the client clock, and who may sync (docs/personal-sync.md).
public enum PersonalAlarmRules {
    /// Live (not deleted) personal alarms per account. The seeds say "unlimited" for Plus; a server
    /// still bounds what one account stores.
    public static let maxAlarmsPerUser = 1_000
    /// `sort_order`: 0…1,000,000.
    public static let sortOrderRange = 0...1_000_000
    /// A client's `updated_at` may run at most this far ahead of the server's clock: a device whose
    /// clock is a year fast must not win every last-write-wins comparison for a year.
    public static let maxClockAheadMilliseconds: Int64 = 5 * 60_000
    /// Tombstones and archived conflict losers are kept 30 days (data-schema §7.2–7.3).
    public static let tombstoneLifetimeMilliseconds: Int64 = 30 * 24 * 3600 * 1000

    /// Whether `tier` keeps alarms in the cloud (data-schema §6: Plus and Premium do, Free does not).
    public static func syncs(_ tier: Tier) -> Bool { tier != .free }

    /// Why a free account's sync write is refused.
    public static let syncTierMessage = "syncing personal alarms needs the plus or premium tier"

    /// The write is allowed for `tier`; 403 TIER_REQUIRED (CA002) for Free.
    public static func checkWrite(tier: Tier) throws(DomainError) {
        guard syncs(tier) else { throw .tierRequired(syncTierMessage) }
    }

    /// A client-chosen id: a UUID in its 8-4-4-4-12 hex form, returned lowercased (so one alarm is one
    /// id whatever case the device used); 422 naming `alarm_id` otherwise.
    public static func alarmID(_ text: String) throws(DomainError) -> String {
        let bytes = Array(text.lowercased().utf8)
        let dashes: Set<Int> = [8, 13, 18, 23]
        guard bytes.count == 36,
            bytes.indices.allSatisfy({ dashes.contains($0) ? bytes[$0] == UInt8(ascii: "-") : isHexDigit(bytes[$0]) })
        else { throw .invalidField(field: "alarm_id", message: "an alarm id is a UUID (8-4-4-4-12 hexadecimal digits)") }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func isHexDigit(_ b: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(b)
    }

    /// `sort_order` in range.
    public static func checkSortOrder(_ order: Int) throws(DomainError) {
        guard sortOrderRange.contains(order) else {
            throw .invalidField(
                field: "sort_order", message: "sort_order must be \(sortOrderRange.lowerBound)–\(sortOrderRange.upperBound)")
        }
    }

    /// The client's `updated_at`, or `now` when absent; later than `now + maxClockAheadMilliseconds`
    /// is refused (422 naming the field).
    public static func editTime(_ clientTime: Timestamp?, now: Int64) throws(DomainError) -> Timestamp {
        guard let clientTime else { return Timestamp(milliseconds: now) }
        guard clientTime.milliseconds <= now + maxClockAheadMilliseconds else {
            throw .invalidField(field: "updated_at", message: "updated_at is ahead of the server's clock by more than 5 minutes")
        }
        return clientTime
    }
}
