public import Domain

/// Why a document left a subscriber's view, as the feed names it on the wire: the `reason` of a
/// `removed` change (and of an alarm change that dropped assignees), and of `revoked`. A fixed
/// vocabulary derived from the batch's event — the free text an operator stores with a change
/// (`chronir-admin … --reason`) stays in the audit trail and never reaches members.
///
/// | reason           | when                                                                  |
/// |------------------|-----------------------------------------------------------------------|
/// | `deleted`        | the thing is gone: group, alarm, account deleted                      |
/// | `unassigned`     | an alarm lost assignees because members left, were removed or deleted |
/// | `access_revoked` | the user was removed from the group (by an admin or an operator)      |
/// | `left`           | the user left the group                                               |
public enum RemovalReason: String, Sendable, CaseIterable {
    case deleted
    case unassigned
    case accessRevoked = "access_revoked"
    case left

    /// Membership batches: the events that end someone's access to a group.
    static let membershipEvents: Set<ChangeEvent> = [.memberRemoved, .memberLeft, .accountDeleted]

    /// The reason a subscription ends when a batch with `event` removes the group from it.
    public static func revocation(event: ChangeEvent) -> RemovalReason {
        switch event {
        case .memberLeft: .left
        case .groupDeleted, .accountDeleted: .deleted
        default: .accessRevoked
        }
    }

    /// The reason carried by one change row of a batch with `event`: for every removal; for the
    /// member document a leave or removal ends (op `modified`, status `left`/`removed`: the record
    /// stays); for an alarm a membership batch modifies (its assignees were dropped). Nil otherwise.
    public static func forChange(event: ChangeEvent, kind: ChangeKind, op: Change.Op) -> RemovalReason? {
        let byEvent: RemovalReason =
            switch event {
            case .memberLeft: .left
            case .memberRemoved: .accessRevoked
            default: .deleted
            }
        switch op {
        case .removed:
            return byEvent
        case .modified where kind == .member && (event == .memberLeft || event == .memberRemoved):
            return byEvent
        case .modified where kind == .sharedAlarm && membershipEvents.contains(event):
            return .unassigned
        case .added, .modified:
            return nil
        }
    }
}
