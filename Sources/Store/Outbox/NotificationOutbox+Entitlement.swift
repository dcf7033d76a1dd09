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

extension NotificationOutbox {
    /// The owner's premium lapsed (`lapsed`) or came back: to the other members of every live group the
    /// owner owns (docs/subscriptions.md#downgrade) — new members and new shared alarms pause, or resume.
    static func ownerSubscriptionChanged(ownerID: String, ownerName: String, lapsed: Bool, at now: Int64, on db: any SQLConnection)
        throws
    {
        let type = NotificationType.groupOwnerSubscription
        let groups = try db.query(
            "SELECT id, name FROM groups WHERE owner_id = ?1 AND deleted_ms IS NULL ORDER BY id", [.text(ownerID)])
        for row in groups {
            guard let groupID = row.string("id"), let name = row.string("name") else { continue }
            let recipients = try listeningMembers(of: groupID, excluding: [ownerID], on: db)
            let body =
                lapsed
                ? "\(ownerName)'s premium subscription has ended: new members and new shared alarms are paused until it is renewed "
                    + "or the group is handed to a premium member. Everything else works as before."
                : "\(ownerName)'s premium subscription is back: new members and new shared alarms are welcome again."
            let content = NotificationContent.make(
                type, groupID: groupID, title: name, body: body, extra: ["state": lapsed ? "lapsed" : "renewed"])
            try enqueue(
                type, key: "group_owner_subscription:\(groupID):\(now):\(lapsed)", groupID: groupID, actorID: ownerID,
                recipients: recipients, content: content, notBefore: now, expiresAt: now + type.policy.timeToLiveMilliseconds, at: now,
                on: db)
        }
    }
}
