import Domain
import Storage

extension NotificationOutbox {
    /// The account's plan changed: to that account's devices (docs/subscriptions.md#what-the-user-is-told).
    /// `data` carries `tier` and `state` so the app can refresh without a request.
    static func entitlementChanged(
        _ entitlement: Entitlement, userID: String, previousTier: Tier, at now: Int64, on db: any SQLConnection
    ) throws {
        let name = entitlement.tier.rawValue.prefix(1).uppercased() + entitlement.tier.rawValue.dropFirst()
        let (title, body): (String, String)
        if entitlement.tier < previousTier {
            (title, body) = (
                "Your plan is now \(name)", "Your subscription has ended. Your data is kept; subscribe again to get it all back."
            )
        } else if entitlement.state == .grace {
            (title, body) = (
                "Payment problem", "Your subscription could not be renewed. Update your payment details in the store to keep it."
            )
        } else if entitlement.tier > previousTier {
            (title, body) = ("Chronir \(name) is active", "Thank you for subscribing.")
        } else {
            (title, body) = ("Your plan changed", "Your plan is \(name).")
        }
        let type = NotificationType.entitlementChanged
        let content = NotificationContent.make(
            type, groupID: nil, title: title, body: body,
            extra: ["tier": entitlement.tier.rawValue, "state": entitlement.state.rawValue])
        try enqueue(
            type, key: "entitlement_changed:\(userID):\(now):\(entitlement.tier.rawValue):\(entitlement.state.rawValue)", groupID: nil,
            actorID: nil, recipients: [userID], content: content, notBefore: now, expiresAt: now + type.policy.timeToLiveMilliseconds,
            at: now, on: db)
    }
}
