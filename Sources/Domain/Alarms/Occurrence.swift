/// Progress of one occurrence of a shared alarm (docs/design.md#occurrences-and-completions): the scheduled instant, the members
/// whose answer it needs (fixed when it opens, shrinking only), their answers, and whether it is still
/// open. Pure value type; `SharedAlarm` drives it.
///
/// JSON: `{"scheduled_at", "required_uids", "answered": [{"user_id", "status", "at"}], "pending_uids",
/// "status": "open" | "closed" | "missed"}`. `pending_uids` is derived (required, not yet answered).
public struct Occurrence: Sendable, Codable, Equatable {
    /// `open` until the completion rule is met (`closed`) or the overdue sweep gives up (`missed`).
    public enum Status: String, Sendable, Codable { case open, closed, missed }

    /// One member's answer.
    public struct Answer: Sendable, Codable, Equatable {
        public var userID: String
        public var status: CompletionStatus
        public var at: Timestamp

        public init(userID: String, status: CompletionStatus, at: Timestamp) {
            self.userID = userID
            self.status = status
            self.at = at
        }

        enum CodingKeys: String, CodingKey {
            case userID = "user_id"
            case status, at
        }
    }

    /// The alarm's fire instant this occurrence stands for.
    public var scheduledAt: Timestamp
    /// Members whose answer counts, in the order they were required.
    public var requiredUIDs: [String]
    /// Answers so far, in arrival order.
    public var answered: [Answer]
    public var status: Status

    /// An open occurrence at `scheduledAt` needing `required`.
    public init(scheduledAt: Timestamp, requiredUIDs: [String], answered: [Answer] = [], status: Status = .open) {
        self.scheduledAt = scheduledAt
        self.requiredUIDs = requiredUIDs
        self.answered = answered
        self.status = status
    }

    /// Required members who have not answered.
    public var pendingUIDs: [String] {
        let done = Set(answered.map(\.userID))
        return requiredUIDs.filter { !done.contains($0) }
    }

    /// Whether `rule` is satisfied: `any` — someone answered; `all` — no one required is pending. An
    /// occurrence whose required set has become empty is satisfied either way (nobody is left to ask).
    public func isSatisfied(by rule: CompletionRule) -> Bool {
        if requiredUIDs.isEmpty { return true }
        switch rule {
        case .any: return !answered.isEmpty
        case .all: return pendingUIDs.isEmpty
        }
    }

    /// Records `userID`'s answer (the caller has checked it is required and has not answered) and closes
    /// the occurrence when `rule` is met. Returns whether it closed.
    public mutating func answer(
        userID: String, status answer: CompletionStatus, at: Timestamp, rule: CompletionRule
    ) -> Bool {
        answered.append(Answer(userID: userID, status: answer, at: at))
        return closeIfSatisfied(rule)
    }

    /// Drops `userID` from the required set (unassigned, left, removed) unless they already answered —
    /// an answer given stays counted. Returns whether the occurrence closed because of it.
    public mutating func drop(_ userID: String, rule: CompletionRule) -> Bool {
        guard status == .open, requiredUIDs.contains(userID), !answered.contains(where: { $0.userID == userID })
        else { return false }
        requiredUIDs.removeAll { $0 == userID }
        return closeIfSatisfied(rule)
    }

    private mutating func closeIfSatisfied(_ rule: CompletionRule) -> Bool {
        guard status == .open, isSatisfied(by: rule) else { return false }
        status = .closed
        return true
    }

    enum CodingKeys: String, CodingKey {
        case scheduledAt = "scheduled_at"
        case requiredUIDs = "required_uids"
        case answered
        case pendingUIDs = "pending_uids"
        case status
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        scheduledAt = try c.decode(Timestamp.self, forKey: .scheduledAt)
        requiredUIDs = try c.decode([String].self, forKey: .requiredUIDs)
        answered = try c.decode([Answer].self, forKey: .answered)
        status = try c.decode(Status.self, forKey: .status)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(scheduledAt, forKey: .scheduledAt)
        try c.encode(requiredUIDs, forKey: .requiredUIDs)
        try c.encode(answered, forKey: .answered)
        try c.encode(pendingUIDs, forKey: .pendingUIDs)
        try c.encode(status, forKey: .status)
    }
}
