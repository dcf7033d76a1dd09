/// What a mutation did: the `event` every row of its change-log batch carries (`change_log.event`,
/// the `event` of a realtime `change`). The raw value is the text stored and sent on the wire;
/// docs/realtime-protocol.md#events lists them for clients.
///
/// An open enumeration (STYLE habit 8), like `ChangeKind`: a batch written by another version of the
/// server or chronir-admin reads back with its stored text.
public struct ChangeEvent: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    // Accounts
    /// An account was created.
    public static let userRegistered = ChangeEvent(rawValue: "user_registered")
    /// The user changed their own profile.
    public static let userUpdated = ChangeEvent(rawValue: "user_updated")
    /// The account's tier changed: an operator's grant, or an entitlement that began or ended
    /// (docs/subscriptions.md).
    public static let userTierChanged = ChangeEvent(rawValue: "user_tier_changed")
    /// An operator suspended the account: its realtime sockets close (4003).
    public static let userSuspended = ChangeEvent(rawValue: "user_suspended")
    /// An operator lifted a suspension.
    public static let userUnsuspended = ChangeEvent(rawValue: "user_unsuspended")
    /// The account and its memberships are gone: one batch (ends the user's access to every group).
    public static let accountDeleted = ChangeEvent(rawValue: "account_deleted")
    /// Sessions were signed out (by their user, a password change or an operator): one
    /// `ChangeKind.session` row per session on the `system` topic, which no client sees; every server
    /// process reading the log closes those sessions' sockets (4003).
    public static let sessionsRevoked = ChangeEvent(rawValue: "sessions_revoked")

    // Groups
    /// A group was created (with its owner as first member).
    public static let groupCreated = ChangeEvent(rawValue: "group_created")
    /// The group's name or settings changed.
    public static let groupUpdated = ChangeEvent(rawValue: "group_updated")
    /// An operator froze the group (read-only).
    public static let groupFrozen = ChangeEvent(rawValue: "group_frozen")
    /// An operator unfroze the group.
    public static let groupUnfrozen = ChangeEvent(rawValue: "group_unfrozen")
    /// The group is gone, and with it every member's access.
    public static let groupDeleted = ChangeEvent(rawValue: "group_deleted")
    /// A member's role changed.
    public static let roleChanged = ChangeEvent(rawValue: "role_changed")
    /// The owner handed the group to another member.
    public static let ownershipTransferred = ChangeEvent(rawValue: "ownership_transferred")

    // Membership
    /// A user joined the group (invite code or invitation).
    public static let memberJoined = ChangeEvent(rawValue: "member_joined")
    /// The user left the group themselves.
    public static let memberLeft = ChangeEvent(rawValue: "member_left")
    /// An admin or an operator removed the user from the group.
    public static let memberRemoved = ChangeEvent(rawValue: "member_removed")
    /// A member changed their own settings for the group (`notification_enabled`).
    public static let memberSettingsChanged = ChangeEvent(rawValue: "member_settings_changed")

    // Invite codes and invitations
    /// The group's first invite code was made.
    public static let inviteCodeCreated = ChangeEvent(rawValue: "invite_code_created")
    /// The group's invite code was replaced.
    public static let inviteCodeRotated = ChangeEvent(rawValue: "invite_code_rotated")
    /// The group's invite code was switched off.
    public static let inviteCodeDisabled = ChangeEvent(rawValue: "invite_code_disabled")
    /// An operator lifted the invite code's lockout.
    public static let inviteCodeUnlocked = ChangeEvent(rawValue: "invite_code_unlocked")
    /// A member invited someone by email.
    public static let invitationCreated = ChangeEvent(rawValue: "invitation_created")
    /// The addressee accepted an invitation (and joined).
    public static let invitationAccepted = ChangeEvent(rawValue: "invitation_accepted")
    /// The addressee declined an invitation.
    public static let invitationDeclined = ChangeEvent(rawValue: "invitation_declined")
    /// An invitation was withdrawn before it was answered.
    public static let invitationRevoked = ChangeEvent(rawValue: "invitation_revoked")

    // Shared alarms
    /// A shared alarm was created.
    public static let sharedAlarmCreated = ChangeEvent(rawValue: "shared_alarm_created")
    /// A shared alarm was edited.
    public static let sharedAlarmUpdated = ChangeEvent(rawValue: "shared_alarm_updated")
    /// A shared alarm was deleted.
    public static let sharedAlarmDeleted = ChangeEvent(rawValue: "shared_alarm_deleted")
    /// A member answered a shared alarm's occurrence.
    public static let sharedCompletion = ChangeEvent(rawValue: "shared_completion")
    /// A member took their answer back within the withdrawal window (the completion is `modified`
    /// with `withdrawn_at`; the alarm's occurrence may be open again).
    public static let sharedCompletionWithdrawn = ChangeEvent(rawValue: "shared_completion_withdrawn")
    /// The sweeper recorded a missed occurrence and advanced the alarm.
    public static let missedAlarmFollowup = ChangeEvent(rawValue: "missed_alarm_followup")

    // Attachments (docs/attachments.md)
    /// A member attached a file to a shared alarm.
    public static let attachmentAdded = ChangeEvent(rawValue: "attachment_added")
    /// An attachment was deleted by its uploader, the owner or an admin.
    public static let attachmentDeleted = ChangeEvent(rawValue: "attachment_deleted")

    // Personal alarms (docs/personal-sync.md)
    /// A personal alarm was created on one of the user's devices.
    public static let personalAlarmCreated = ChangeEvent(rawValue: "personal_alarm_created")
    /// A personal alarm was replaced or edited (or a tombstone brought back).
    public static let personalAlarmUpdated = ChangeEvent(rawValue: "personal_alarm_updated")
    /// A personal alarm was deleted (its tombstone syncs, then is purged).
    public static let personalAlarmDeleted = ChangeEvent(rawValue: "personal_alarm_deleted")
    /// The user answered an occurrence of a personal alarm (the completion syncs to their other devices).
    public static let personalCompletion = ChangeEvent(rawValue: "personal_completion")

    // Subscriptions (docs/subscriptions.md)
    /// The account's entitlement changed (a purchase, a store notification, an expiry, an operator
    /// grant): one `entitlement` row on the user's topic, and the `user` row when the tier changed.
    public static let entitlementChanged = ChangeEvent(rawValue: "entitlement_changed")
    /// The owner's premium lapsed or came back: one `group_owner_subscription` row on each group the
    /// owner owns, so every member's socket learns that new members and shared alarms are paused or not.
    public static let groupOwnerSubscriptionChanged = ChangeEvent(rawValue: "group_owner_subscription_changed")

    /// The user changed their synced settings.
    public static let settingsUpdated = ChangeEvent(rawValue: "settings_updated")

    // The log itself
    /// Compaction removed the oldest rows and wrote a checkpoint (`ChangeKind.checkpoint`).
    public static let logCompacted = ChangeEvent(rawValue: "log_compacted")

    public var description: String { rawValue }
}
