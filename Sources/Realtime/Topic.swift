/// A realtime topic. On the wire a client names `"user"` (its own feed) or `"group:<uuid>"`; in the
/// change log the same topics are `user:<id>` and `group:<id>` (`ChangeLog.userTopic/groupTopic`).
public enum Topic: Hashable, Sendable, CustomStringConvertible {
    /// A user's own feed: my groups, my memberships, my invitations, my account.
    case user(String)
    /// A group's feed: the group, its members and shared alarms. Needs active membership.
    case group(String)

    /// Why a wire topic name was refused (→ error `invalid_topic`).
    public enum ParseError: Error, Equatable, Sendable {
        /// Not `user` and not `group:<…>`.
        case unknownTopic
        /// `group:` followed by something other than a lowercase canonical UUID.
        case invalidGroupID
    }

    /// The topic a client names on the wire, for the connection's user `userID`.
    public init(wire: String, userID: String) throws(ParseError) {
        if wire == "user" {
            self = .user(userID)
            return
        }
        guard wire.hasPrefix("group:") else { throw .unknownTopic }
        let id = String(wire.dropFirst(6))
        guard Topic.isCanonicalUUID(id) else { throw .invalidGroupID }
        self = .group(id)
    }

    /// The topic of a change-log row (`user:<id>`, `group:<id>`); nil for any other text.
    public init?(logName: String) {
        if logName.hasPrefix("user:") {
            self = .user(String(logName.dropFirst(5)))
        } else if logName.hasPrefix("group:") {
            self = .group(String(logName.dropFirst(6)))
        } else {
            return nil
        }
    }

    /// The name a client uses and receives: `user` or `group:<id>`.
    public var wireName: String {
        switch self {
        case .user: "user"
        case .group(let id): "group:\(id)"
        }
    }

    /// The name in `change_log.topic`.
    public var logName: String {
        switch self {
        case .user(let id): "user:\(id)"
        case .group(let id): "group:\(id)"
        }
    }

    public var description: String { logName }

    /// 36 characters, lowercase hex, hyphens at 8, 13, 18, 23 (the ids the store writes).
    static func isCanonicalUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (i, c) in bytes.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard c == UInt8(ascii: "-") else { return false }
            } else {
                guard (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "f"))
                else { return false }
            }
        }
        return true
    }
}
