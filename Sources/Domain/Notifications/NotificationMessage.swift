/// What a notification says, as a key and its facts — never words. The producer (Store, in the
/// transaction that queues it) records the facts; the App words them (`NotificationText`) when it is
/// sent, so a stored notification carries no language and a recipient's locale can choose the words.
/// Stored in the content's JSON as `"message"` (the key) and `"args"` (an object of strings).
public struct NotificationMessage: Sendable, Equatable, Hashable {
    /// Which sentence: one per thing a notification can say (`NotificationText` has a wording for each).
    public struct Key: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// `actor` answered the alarm (`status`: `completed` or `skipped`) · `group`.
        public static let completionAnswered = Key(rawValue: "completion_answered")
        public static let alarmCreated = Key(rawValue: "alarm_created")
        public static let alarmChanged = Key(rawValue: "alarm_changed")
        public static let alarmDeleted = Key(rawValue: "alarm_deleted")
        /// The occurrence is due now · `group`.
        public static let alarmDue = Key(rawValue: "alarm_due")
        /// The occurrence is due in `minutes` · `group`.
        public static let alarmSoon = Key(rawValue: "alarm_soon")
        public static let alarmMissed = Key(rawValue: "alarm_missed")
        public static let memberJoined = Key(rawValue: "member_joined")
        public static let invited = Key(rawValue: "invited")
        /// The recipient's membership ended (`reason`: `left` or `removed`).
        public static let accessEnded = Key(rawValue: "access_ended")
        public static let groupDeleted = Key(rawValue: "group_deleted")
        public static let groupFrozen = Key(rawValue: "group_frozen")
        public static let groupUnfrozen = Key(rawValue: "group_unfrozen")
        /// The recipient's plan: `plan_ended`, `plan_payment_problem`, `plan_active`, `plan_changed`
        /// (`tier`); these word the title too.
        public static let planEnded = Key(rawValue: "plan_ended")
        public static let planPaymentProblem = Key(rawValue: "plan_payment_problem")
        public static let planActive = Key(rawValue: "plan_active")
        public static let planChanged = Key(rawValue: "plan_changed")
        /// A group owner's premium lapsed (`lapsed` "true") or came back (`owner`).
        public static let ownerSubscription = Key(rawValue: "owner_subscription")
        /// Words given as they are (`text`): an operator's test notification, and rows queued before
        /// messages had keys (their stored `body`).
        public static let text = Key(rawValue: "text")
    }

    public var key: Key
    /// The facts the wording uses (names, counts), by the names each key documents.
    public var args: [String: String]

    public init(_ key: Key, _ args: [String: String] = [:]) {
        self.key = key
        self.args = args
    }

    /// Words given as they are.
    public static func text(_ words: String) -> NotificationMessage { NotificationMessage(.text, ["text": words]) }
}
