import Domain
import Realtime
import SQLite
import Store

/// The reads behind the feed's `snapshot` and resume: each runs inside the caller's ONE read
/// transaction, so the access check, the data and the log's seq agree.
enum RealtimeSnapshots {
    /// Completions included in a group snapshot (newest first).
    static let recentCompletions = 50
    /// Upper bound on the groups and invitations in a user snapshot.
    static let maxListed = 1000

    struct GroupSnapshot: Encodable {
        var group: Group
        var members: [GroupMember]
        var alarms: [SharedAlarm]
        var recentCompletions: [SharedCompletion]
        enum CodingKeys: String, CodingKey {
            case group, members, alarms
            case recentCompletions = "recent_completions"
        }
    }

    struct UserSnapshot: Encodable {
        var user: User
        var groups: [Group]
        var invitations: [Invitation]
    }

    /// The topic's document and the log's max seq; throws `DomainError.notFound` when the user may
    /// not see it (not an active member of a live group, or the account is gone).
    static func read(_ topic: Topic, userID: String, at now: Int64, on db: Connection) throws -> (seq: Int64, data: [UInt8]) {
        let data: [UInt8]
        switch topic {
        case .group(let groupID):
            let (group, _) = try GroupStore.access(groupID: groupID, userID: userID, on: db)
            let alarms = try SharedAlarmStore.alarms(
                groupID: groupID, userID: userID, includeDeleted: false, limit: maxListed, on: db)
            let completions = try CompletionStore.completions(
                groupID: groupID, alarmID: nil, userID: userID, filter: CompletionStore.Filter(),
                limit: recentCompletions, on: db)
            data = DocumentCoding.encode(
                GroupSnapshot(
                    group: group, members: try GroupStore.activeMembers(groupID: groupID, on: db), alarms: alarms.items,
                    recentCompletions: completions.items))
        case .user(let id):
            guard let user = try AccountStore.user(id: id, on: db) else { throw DomainError.notFound("user") }
            let groups = try GroupStore.groups(ofUser: id, limit: maxListed, on: db)
            let invitations = try InvitationStore.pending(forEmail: user.email, limit: maxListed, at: now, on: db)
            data = DocumentCoding.encode(UserSnapshot(user: user, groups: groups.items, invitations: invitations.items))
        }
        return (try ChangeLog.latestSeq(on: db), data)
    }

    /// The resume read: the same access check, then the topic's batches after `since`.
    static func replay(
        _ topic: Topic, userID: String, after since: Int64, maxRows: Int, on db: Connection
    ) throws -> ChangeFeed.Replay {
        if case .group(let groupID) = topic { _ = try GroupStore.access(groupID: groupID, userID: userID, on: db) }
        return try ChangeFeed.replay(topic: topic.logName, after: since, maxRows: maxRows, member: userID, on: db)
    }
}
