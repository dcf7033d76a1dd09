/// What a notification is about (docs/notifications.md#what-is-sent-to-whom; seeds: API App. C,
/// data-schema App. C). The raw value is stored in `notification_outbox.type` and sent as
/// `data.type`. An open enumeration like `ChangeEvent`.
public struct NotificationType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// An occurrence became due: to its required members who have not answered.
    public static let alarmFired = NotificationType(rawValue: "alarm_fired")
    /// Each of `pre_alarm_offsets` minutes before an occurrence, when `pre_alarm_enabled`.
    public static let preAlarm = NotificationType(rawValue: "pre_alarm")
    /// A member answered an occurrence: to the group's other members.
    public static let sharedCompletion = NotificationType(rawValue: "shared_completion")
    /// A shared alarm was created: to the members except its creator.
    public static let sharedAlarmCreated = NotificationType(rawValue: "shared_alarm_created")
    /// A shared alarm's settings changed: to the members except the editor.
    public static let sharedAlarmUpdated = NotificationType(rawValue: "shared_alarm_updated")
    /// An email invitation to an address that has an account: to that account.
    public static let groupInvitation = NotificationType(rawValue: "group_invitation")
    /// Someone joined: to the members except the joiner.
    public static let groupMemberJoined = NotificationType(rawValue: "group_member_joined")
    /// An occurrence went unanswered past its grace: to who did not answer, the owner and the admins.
    public static let missedAlarmFollowup = NotificationType(rawValue: "missed_alarm_followup")
    /// The account's plan changed (docs/subscriptions.md#what-the-user-is-told): to that account's devices.
    public static let entitlementChanged = NotificationType(rawValue: "entitlement_changed")
    /// A group's owner lost premium through a lapsed subscription, or got it back: to the other members
    /// (new members and new shared alarms pause or resume; docs/subscriptions.md#downgrade).
    public static let groupOwnerSubscription = NotificationType(rawValue: "group_owner_subscription")
    /// An operator's test (`chronir-admin notifications test USER`): to that account's devices.
    public static let test = NotificationType(rawValue: "test")

    // Lifecycle (silent): tell every affected device what to drop, so scheduled local copies stop
    // ringing on a phone with no socket open (docs/apps.md#lifecycle-pushes).

    /// A shared alarm was deleted: to the group's active members (`drop: alarm`).
    public static let sharedAlarmDeleted = NotificationType(rawValue: "shared_alarm_deleted")
    /// A membership ended (removed by a manager or an operator, or left): to that member (`drop: group`).
    public static let groupAccessEnded = NotificationType(rawValue: "group_access_ended")
    /// A group was deleted (owner or operator): to its members at that moment (`drop: group`).
    public static let groupDeleted = NotificationType(rawValue: "group_deleted")
    /// An operator froze a group: to its active members (`drop: group`; the group may come back).
    public static let groupFrozen = NotificationType(rawValue: "group_frozen")
    /// An operator unfroze a group: to its active members (`refresh: group`: read it again).
    public static let groupUnfrozen = NotificationType(rawValue: "group_unfrozen")

    /// The silent lifecycle types: no alert or sound (APNs `content-available`, an FCM data message),
    /// sent to every affected account whatever its per-group mute, the actor's own devices included.
    public static let lifecycle: Set<NotificationType> = [
        .sharedAlarmDeleted, .groupAccessEnded, .groupDeleted, .groupFrozen, .groupUnfrozen,
    ]

    /// Whether this is a silent lifecycle type (`lifecycle`).
    public var isLifecycle: Bool { Self.lifecycle.contains(self) }

    public var description: String { rawValue }

    /// How long a lifecycle push is worth delivering: 7 days (a phone off for a week still drops the
    /// alarm when it comes back; past that the app's foreground re-read catches up).
    public static let lifecycleTimeToLiveMilliseconds: Int64 = 7 * 86_400_000

    /// How urgent it is and how long it is worth delivering.
    public var policy: NotificationPolicy {
        switch self {
        case .alarmFired: NotificationPolicy(priority: .high, timeToLiveMilliseconds: 15 * 60_000, timeSensitive: true)
        case .missedAlarmFollowup: NotificationPolicy(priority: .high, timeToLiveMilliseconds: 3_600_000)
        case .groupMemberJoined: NotificationPolicy(priority: .low, timeToLiveMilliseconds: 86_400_000)
        case .test: NotificationPolicy(priority: .normal, timeToLiveMilliseconds: 3_600_000)
        // A phone switched off for days must still learn what to drop when it comes back.
        case _ where isLifecycle:
            NotificationPolicy(priority: .normal, timeToLiveMilliseconds: Self.lifecycleTimeToLiveMilliseconds, silent: true)
        // pre_alarm's real deadline is the occurrence itself; group_invitation's is the invitation's
        // expiry (the producer passes the earlier of the two).
        default: NotificationPolicy(priority: .normal, timeToLiveMilliseconds: 86_400_000)
        }
    }
}

/// Delivery class of a notification type: mapped by each sender to its provider's fields (APNs
/// `apns-priority` 10/5 and `interruption-level`, FCM `android.priority`, Web Push `Urgency`).
public struct NotificationPolicy: Sendable, Equatable {
    public enum Priority: String, Sendable { case high, normal, low }
    public var priority: Priority
    /// Not handed to a provider later than this after it was queued (an `alarm_fired` an hour late
    /// is worse than none); also the provider's own TTL.
    public var timeToLiveMilliseconds: Int64
    /// APNs `interruption-level: time-sensitive` (breaks through Focus).
    public var timeSensitive: Bool = false
    /// Nothing shown or played: APNs `apns-push-type: background` with `content-available: 1`, an FCM
    /// data-only message (docs/apps.md#lifecycle-pushes).
    public var silent: Bool = false
}

/// What the recipient is told and what the app gets: a `title` (the alarm's or group's own name, or
/// empty when the message words its own title), the `message` (facts, worded by the App's
/// `NotificationText` when sent) and the `data` ids. Built by the producer in the transaction that
/// queues it; stored as JSON in the outbox: `{"title", "message", "args", "data"}` (a row written
/// before messages had keys has `"body"` instead: read as a `.text` message).
public struct NotificationContent: Sendable, Codable, Equatable {
    public var title: String
    public var message: NotificationMessage
    /// `type` plus the ids the app needs to open the right screen (`group_id`, `alarm_id`, …).
    public var data: [String: String]

    public init(title: String, message: NotificationMessage, data: [String: String]) {
        self.title = title
        self.message = message
        self.data = data
    }

    /// Content whose body is given as words (an operator's test notification, a stored legacy row).
    public init(title: String, body: String, data: [String: String]) {
        self.init(title: title, message: .text(body), data: data)
    }

    /// Longest title and body sent: a push payload is at most 4 KiB (APNs, Web Push), and the ids,
    /// provider fields and encryption overhead need room. The title is cut when queued, the worded
    /// body when sent (`NotificationText`).
    public static let maxTitleCharacters = 120
    public static let maxBodyCharacters = 400

    enum CodingKeys: String, CodingKey {
        case title, message, args, data, body
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        title = try c.decode(String.self, forKey: .title)
        data = try c.decode([String: String].self, forKey: .data)
        if let key = try c.decodeIfPresent(String.self, forKey: .message) {
            message = NotificationMessage(
                NotificationMessage.Key(rawValue: key), try c.decodeIfPresent([String: String].self, forKey: .args) ?? [:])
        } else {
            message = .text(try c.decode(String.self, forKey: .body))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(title, forKey: .title)
        try c.encode(message.key.rawValue, forKey: .message)
        try c.encode(message.args, forKey: .args)
        try c.encode(data, forKey: .data)
    }

    /// A notification of `type` about `groupID` saying `message`, with `extra` ids in `data` and its
    /// `deep_link` (`deepLink`); the title cut to its limit.
    public static func make(
        _ type: NotificationType, groupID: String?, title: String, message: NotificationMessage, extra: [String: String] = [:]
    ) -> NotificationContent {
        var data = extra
        data["type"] = type.rawValue
        if let groupID { data["group_id"] = groupID }
        data["deep_link"] = deepLink(type, data)
        return NotificationContent(title: clipped(title, to: maxTitleCharacters), message: message, data: data)
    }

    /// `text` cut to `limit` characters, an ellipsis marking the cut.
    public static func clipped(_ text: String, to limit: Int) -> String {
        text.count <= limit ? text : String(text.prefix(limit - 1)) + "…"
    }

    /// The app path a notification opens (docs/apps.md#deep-links; API seed App. B), under `public_base_url`:
    /// `/alarm/{alarm_id}` for one about an alarm, `/group/{group_id}` for one about a group the recipient is in,
    /// `/` otherwise — an invitation (listed on the home screen; its group is not open to the invitee yet), a test.
    static func deepLink(_ type: NotificationType, _ data: [String: String]) -> String {
        switch type {
        case .groupAccessEnded, .groupDeleted: return "/"
        case .sharedAlarmDeleted, .groupFrozen, .groupUnfrozen: return data["group_id"].map { "/group/\($0)" } ?? "/"
        default: break
        }
        if let alarmID = data["alarm_id"] { return "/alarm/\(alarmID)" }
        if type != .groupInvitation, let groupID = data["group_id"] { return "/group/\(groupID)" }
        return "/"
    }
}
