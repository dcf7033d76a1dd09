import Domain
import Realtime
import Storage
import Store
import Synchronization

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
        /// Each alarm and completion with its live attachments (docs/attachments.md#in-the-documents), so a
        /// client resuming past compaction sees them without listing them.
        var alarms: [WithAttachments<SharedAlarm>]
        var recentCompletions: [WithAttachments<SharedCompletion>]
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
    /// not see it (not an active member of a live group, or the account is gone). A group's document
    /// is the same for every member at a given seq, so with a `cache` it is encoded once per seq
    /// (1,000 members subscribing to a large group: one encode, not 1,000); access is checked every time.
    static func read(
        _ topic: Topic, userID: String, at now: Int64, cache: SnapshotCache? = nil, on db: any SQLConnection
    ) throws -> (seq: Int64, data: [UInt8]) {
        let data: [UInt8]
        switch topic {
        case .group(let groupID):
            let (group, _) = try GroupStore.access(groupID: groupID, userID: userID, on: db)
            let seq = try ChangeLog.latestSeq(on: db)
            if let cached = cache?.data(groupID: groupID, seq: seq) { return (seq, cached) }
            let alarms = try SharedAlarmStore.alarms(
                groupID: groupID, userID: userID, includeDeleted: false, limit: maxListed, on: db)
            let completions = try CompletionStore.completions(
                groupID: groupID, alarmID: nil, userID: userID, filter: CompletionStore.Filter(),
                limit: recentCompletions, on: db)
            data = DocumentCoding.encode(
                GroupSnapshot(
                    group: group, members: try GroupStore.activeMembers(groupID: groupID, on: db),
                    alarms: try AttachmentStore.attaching(alarms.items, kind: .sharedAlarm, scope: groupID, id: \.id, on: db),
                    recentCompletions: try AttachmentStore.attaching(
                        completions.items, kind: .sharedCompletion, scope: groupID, id: \.id, on: db)))
            cache?.store(groupID: groupID, seq: seq, data: data)
            return (seq, data)
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
        _ topic: Topic, userID: String, after since: Int64, maxRows: Int, on db: any SQLConnection
    ) throws -> ChangeFeed.Replay {
        if case .group(let groupID) = topic { _ = try GroupStore.access(groupID: groupID, userID: userID, on: db) }
        return try ChangeFeed.replay(topic: topic.logName, after: since, maxRows: maxRows, member: userID, on: db)
    }
}

/// Encoded group snapshots by (group, log seq), shared by the feed's concurrent snapshot reads. Valid
/// because every change to what a group snapshot shows is a change-log row (a new seq); an entry for
/// an older seq is simply not used. Bounded: past `maxEntries` groups the whole cache is dropped.
final class SnapshotCache: Sendable {
    /// Groups cached at once (named limit: each entry is one group's snapshot, tens of KiB to a few
    /// hundred for a large group).
    static let maxEntries = 64
    private let entries = Mutex<[String: (seq: Int64, data: [UInt8])]>([:])

    func data(groupID: String, seq: Int64) -> [UInt8]? {
        entries.withLock { entries in entries[groupID].flatMap { $0.seq == seq ? $0.data : nil } }
    }

    func store(groupID: String, seq: Int64, data: [UInt8]) {
        entries.withLock { entries in
            if entries[groupID] == nil, entries.count >= Self.maxEntries { entries.removeAll(keepingCapacity: true) }
            if let existing = entries[groupID], existing.seq > seq { return }
            entries[groupID] = (seq, data)
        }
    }
}
