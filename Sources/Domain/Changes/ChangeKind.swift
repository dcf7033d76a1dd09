/// What kind of document a change-log row carries (`change_log.kind`, the `kind` of a realtime
/// `change`). The raw value is the text stored in the database and sent on the wire.
///
/// An open enumeration (STYLE habit 8): the log is shared by every instance and chronir-admin, which
/// may run another version during an upgrade, so a kind this build does not name still reads back
/// (and is forwarded as stored) instead of failing the whole read.
public struct ChangeKind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// An account (`user:<id>`: the user's own document, or its removal when the account is deleted).
    public static let user = ChangeKind(rawValue: "user")
    /// A group: on `group:<id>` the group itself; on `user:<id>` the user gained (`added`) or lost
    /// (`removed`) access to it.
    public static let group = ChangeKind(rawValue: "group")
    /// A membership record (`group:<id>`, and the member's own `user:<id>` for their role changes).
    public static let member = ChangeKind(rawValue: "member")
    /// An invitation (on the `user:<id>` feeds of its sender and its addressee, never the group's).
    public static let invitation = ChangeKind(rawValue: "invitation")
    /// A group's invite code (state only, never the code).
    public static let inviteCode = ChangeKind(rawValue: "invite_code")
    /// A shared alarm.
    public static let sharedAlarm = ChangeKind(rawValue: "shared_alarm")
    /// A completion of a shared alarm's occurrence.
    public static let sharedCompletion = ChangeKind(rawValue: "shared_completion")
    /// An occurrence nobody (or not everyone) answered, written by the sweeper.
    public static let missedOccurrence = ChangeKind(rawValue: "missed_occurrence")
    /// A file attached to a shared alarm (`group:<id>`; the metadata document, never the bytes).
    public static let attachment = ChangeKind(rawValue: "attachment")
    /// A user's personal alarm (`user:<id>` only: synced between that user's devices).
    public static let personalAlarm = ChangeKind(rawValue: "personal_alarm")
    /// A completion of a personal alarm's occurrence (`user:<id>` only; immutable: always `added`).
    public static let personalCompletion = ChangeKind(rawValue: "personal_completion")
    /// A user's synced settings (`user:<id>` only; the entity id is the user's).
    public static let settings = ChangeKind(rawValue: "settings")
    /// The account's entitlement (docs/subscriptions.md#the-entitlement), on the user's topic.
    public static let entitlement = ChangeKind(rawValue: "entitlement")
    /// Whether a group takes new members and shared alarms, by its owner's premium (`GroupOwnerSubscription`).
    public static let groupOwnerSubscription = ChangeKind(rawValue: "group_owner_subscription")
    /// A signed-in session (`system` topic, entity id = the session's public id, no document):
    /// `removed` when it was revoked, so every server process closes its sockets. Never sent to clients.
    public static let session = ChangeKind(rawValue: "session")
    /// The log's own bookkeeping: a compaction checkpoint on the `system` topic (no client sees it).
    public static let checkpoint = ChangeKind(rawValue: "checkpoint")

    public var description: String { rawValue }
}
