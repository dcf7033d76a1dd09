import Domain
import Storage

extension NotificationOutbox {
    /// The account's plan changed: to that account's devices (docs/subscriptions.md#what-the-user-is-told).
    /// `data` carries `tier` and `state` so the app can refresh without a request.
    static func entitlementChanged(
        _ entitlement: Entitlement, userID: String, previousTier: Tier, at now: Int64, on db: any SQLConnection
    ) throws {
        let key: NotificationMessage.Key
        if entitlement.tier < previousTier {
            key = .planEnded
        } else if entitlement.state == .grace {
            key = .planPaymentProblem
        } else if entitlement.tier > previousTier {
            key = .planActive
        } else {
            key = .planChanged
        }
        let type = NotificationType.entitlementChanged
        let content = NotificationContent.make(
            type, groupID: nil, title: "", message: NotificationMessage(key, ["tier": entitlement.tier.rawValue]),
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
            let content = NotificationContent.make(
                type, groupID: groupID, title: name,
                message: NotificationMessage(.ownerSubscription, ["owner": ownerName, "lapsed": lapsed ? "true" : "false"]),
                extra: ["state": lapsed ? "lapsed" : "renewed"])
            try enqueue(
                type, key: "group_owner_subscription:\(groupID):\(now):\(lapsed)", groupID: groupID, actorID: ownerID,
                recipients: recipients, content: content, notBefore: now, expiresAt: now + type.policy.timeToLiveMilliseconds, at: now,
                on: db)
        }
    }
}
