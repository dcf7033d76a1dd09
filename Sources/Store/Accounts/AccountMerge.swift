import Domain
import Foundation
public import Storage

/// Merging an anonymous account into an existing one (docs/apps.md#merging-into-an-existing-account):
/// what the anonymous account holds moves to the existing account, then the anonymous account is
/// deleted — all in the caller's one write transaction, so a failure leaves both as they were.
public enum AccountMerge {
    /// What a merge moved.
    public struct Outcome: Sendable, Equatable {
        /// Personal alarms written to the existing account (created or winning by last-write-wins).
        public var alarms = 0
        /// Personal alarms the existing account's newer version kept (the anonymous one archived).
        public var alarmsLost = 0
        /// Whether the anonymous account's settings replaced the existing account's (they were newer).
        public var settings = false
        /// Push devices moved.
        public var devices = 0
        /// Groups the existing account joined (it was not an active member).
        public var groups = 0
    }

    /// Moves anonymous account `anonymousID`'s data into account `targetID` and deletes the anonymous
    /// account (`GroupStore.deleteAccount`, actor the target):
    /// - **personal alarms** (live ones), when the target's tier keeps alarms in the cloud: each written
    ///   as a device's sync `PUT` with its own `updated_at` (docs/personal-sync.md), so an id both hold
    ///   goes to the later edit and the other lands in the conflict archive; the target's alarm limit
    ///   applies (`alarmLimitReached`, nothing merged);
    /// - **settings**: the anonymous account's when they were changed later than the target's;
    /// - **push devices**: moved (a device id both have is the same phone: the anonymous row replaces
    ///   the target's), then the target keeps its `DeviceRules.maxDevicesPerUser` most recent;
    /// - **memberships**: each live, unfrozen group the anonymous account is an active member of admits
    ///   the target as a member (event `member_joined`) unless it is one already; a group it owns is
    ///   then transferred to the target (`GroupStore.transfer`) before the deletion ends the anonymous
    ///   membership (a full group it owns refuses the merge: `groupMemberLimit`).
    /// Not moved: completions (shared ones stay in their group's history under "Deleted User", as for
    /// a deleted account; personal ones are deleted with the anonymous account's alarms), sessions,
    /// uploads. Throws `notFound("user")` when either account is missing, `permissionDenied` when the
    /// first is not anonymous or both are the same.
    public static func merge(
        anonymous anonymousID: String, into targetID: String, at now: Int64, on db: any SQLConnection
    ) throws -> Outcome {
        guard let anonymous = try AccountStore.user(id: anonymousID, on: db), let target = try AccountStore.user(id: targetID, on: db)
        else { throw DomainError.notFound("user") }
        guard anonymous.anonymous, anonymousID != targetID else {
            throw DomainError.permissionDenied("only an anonymous account can be merged into another")
        }
        var outcome = Outcome()

        if PersonalAlarmRules.syncs(target.tier) {
            for alarm in try PersonalAlarmStore.live(userID: anonymousID, on: db) {
                let edit = PersonalAlarmStore.Edit(
                    settings: alarm.settings, isEnabled: alarm.isEnabled, vibrationEnabled: alarm.vibrationEnabled,
                    sortOrder: alarm.sortOrder, editedAt: alarm.updatedAt)
                switch try PersonalAlarmStore.put(userID: targetID, alarmID: alarm.id, edit: edit, expectedVersion: nil, at: now, on: db) {
                case .created, .replaced: outcome.alarms += 1
                case .lost: outcome.alarmsLost += 1
                }
            }
        }

        if try db.queryOne("SELECT 1 AS one FROM user_settings WHERE user_id = ?1", [.text(anonymousID)]) != nil {
            let theirs = try UserSettingsStore.settings(userID: anonymousID, on: db)
            let ours = try UserSettingsStore.settings(userID: targetID, on: db)
            if let theirsAt = theirs.updatedAt, theirsAt > ours.updatedAt ?? Timestamp(milliseconds: .min) {
                _ = try UserSettingsStore.update(userID: targetID, expectedVersion: nil, at: now, on: db) { settings in
                    let (version, updatedAt) = (settings.version, settings.updatedAt)
                    settings = theirs
                    settings.version = version
                    settings.updatedAt = updatedAt
                }
                outcome.settings = true
            }
        }

        // Deliveries still owed to the anonymous account's devices go with it (they name its id).
        try db.run("DELETE FROM notification_deliveries WHERE user_id = ?1", [.text(anonymousID)])
        try db.run(
            "DELETE FROM devices WHERE user_id = ?2 AND device_id IN (SELECT device_id FROM devices WHERE user_id = ?1)",
            [.text(anonymousID), .text(targetID)])
        outcome.devices = try db.query("SELECT device_id FROM devices WHERE user_id = ?1", [.text(anonymousID)]).count
        try db.run("UPDATE devices SET user_id = ?2, session_hash = NULL WHERE user_id = ?1", [.text(anonymousID), .text(targetID)])
        let surplus = try db.query(
            "SELECT device_id FROM devices WHERE user_id = ?1 ORDER BY last_seen_ms DESC, device_id DESC", [.text(targetID)]
        ).dropFirst(DeviceRules.maxDevicesPerUser)
        for row in surplus {
            try db.run("DELETE FROM devices WHERE user_id = ?1 AND device_id = ?2", [.text(targetID), row["device_id"]])
        }

        let memberships = try db.query(
            "SELECT group_id, role FROM group_members WHERE user_id = ?1 AND status = 'active' ORDER BY group_id",
            [.text(anonymousID)])
        // A group the anonymous account owns passes to the existing account (joined first if need be),
        // so the deletion below does not hand it to another member or delete it.
        var handled: Set<String> = []
        for row in memberships where row.string("role") == GroupRole.owner.rawValue {
            guard let groupID = row.string("group_id"), let joined = try join(target, groupID, at: now, on: db) else { continue }
            if joined { outcome.groups += 1 }
            handled.insert(groupID)
            _ = try GroupStore.transfer(groupID: groupID, actorID: anonymousID, targetID: targetID, at: now, on: db)
        }
        try GroupStore.deleteAccount(userID: anonymousID, at: now, on: db, actor: .user(targetID), reason: "merged")
        for row in memberships {
            guard let groupID = row.string("group_id"), !handled.contains(groupID) else { continue }
            if try join(target, groupID, at: now, on: db) == true { outcome.groups += 1 }
        }
        return outcome
    }

    /// Admits `user` to live, unfrozen group `groupID` as a member (event `member_joined`) unless it is
    /// an active member already. Returns true when it joined, false when it already was a member, nil
    /// when the group is gone or frozen. The member limit applies (`groupMemberLimit`).
    private static func join(_ user: User, _ groupID: String, at now: Int64, on db: any SQLConnection) throws -> Bool? {
        guard var group = try GroupStore.group(id: groupID, on: db), group.frozenAt == nil else { return nil }
        let previous = try GroupStore.member(groupID: groupID, userID: user.id, on: db)
        if previous?.status == .active { return false }
        let (_, changes) = try GroupStore.admit(user, to: &group, role: .member, previous: previous, at: now, on: db)
        try ChangeLog.append(changes, event: .memberJoined, actor: .user(user.id), at: now, on: db)
        return true
    }
}
