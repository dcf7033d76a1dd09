import Domain

/// The words of a notification: its `NotificationMessage` (facts recorded by the producer) worded when
/// it is sent, so what is stored carries no language. English is the one wording today; another
/// language becomes a second table chosen by the recipient account's `locale`. The body is cut to
/// `NotificationContent.maxBodyCharacters`; a message that words its own title (the plan's) replaces
/// the stored one, which is empty then.
enum NotificationText {
    /// What the device shows: the title and the body of `content`.
    static func words(_ content: NotificationContent) -> (title: String, body: String) {
        let (title, body) = english(content.message)
        return (
            title ?? content.title,
            NotificationContent.clipped(body, to: NotificationContent.maxBodyCharacters)
        )
    }

    /// The body alone (webhooks and tests read it).
    static func body(_ content: NotificationContent) -> String { words(content).body }

    /// A pre-alarm's lead in its largest whole unit: "3 d", "5 h", "90 min".
    static func lead(_ minutes: String?) -> String {
        guard let minutes, let n = Int(minutes), n > 0 else { return "\(minutes ?? "?") min" }
        if n % 1440 == 0 { return "\(n / 1440) d" }
        if n % 60 == 0 { return "\(n / 60) h" }
        return "\(n) min"
    }

    /// English: a title when the message words its own, and the body. An unknown key (a row queued
    /// by a newer server) shows its facts rather than nothing.
    static func english(_ message: NotificationMessage) -> (title: String?, body: String) {
        let a = message.args
        let group = a["group"] ?? ""
        let plan = (a["tier"] ?? "").prefix(1).uppercased() + (a["tier"] ?? "").dropFirst()
        switch message.key {
        case .text: return (nil, a["text"] ?? "")
        case .completionAnswered: return (nil, "\(a["actor"] ?? "Someone") \(a["status"] ?? "answered") it · \(group)")
        case .alarmCreated: return (nil, "New shared alarm in \(group)")
        case .alarmChanged: return (nil, "Shared alarm changed in \(group)")
        case .alarmDeleted: return (nil, "Shared alarm deleted in \(group)")
        case .alarmDue: return (nil, "Due now · \(group)")
        case .alarmSoon: return (nil, "In \(lead(a["minutes"])) · \(group)")
        case .alarmMissed: return (nil, "Missed · \(group)")
        case .memberJoined: return (nil, "\(a["member"] ?? "Someone") joined")
        case .invited: return (nil, "\(a["inviter"] ?? "Someone") invited you")
        case .accessEnded: return (nil, a["reason"] == "left" ? "You left the group" : "You were removed from the group")
        case .groupDeleted: return (nil, "The group was deleted")
        case .groupFrozen: return (nil, "The group was frozen by the operator")
        case .groupUnfrozen: return (nil, "The group is available again")
        case .planEnded:
            return ("Your plan is now \(plan)", "Your subscription has ended. Your data is kept; subscribe again to get it all back.")
        case .planPaymentProblem:
            return ("Payment problem", "Your subscription could not be renewed. Update your payment details in the store to keep it.")
        case .planActive: return ("Chronir \(plan) is active", "Thank you for subscribing.")
        case .planChanged: return ("Your plan changed", "Your plan is \(plan).")
        case .ownerSubscription:
            let owner = a["owner"] ?? "The owner"
            return a["lapsed"] == "true"
                ? (
                    nil,
                    "\(owner)'s premium subscription has ended: new members and new shared alarms are paused until it is renewed "
                        + "or the group is handed to a premium member. Everything else works as before."
                )
                : (nil, "\(owner)'s premium subscription is back: new members and new shared alarms are welcome again.")
        default:
            return (nil, a.keys.sorted().map { "\($0): \(a[$0] ?? "")" }.joined(separator: ", "))
        }
    }
}
