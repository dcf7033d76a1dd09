/// Who answers the open occurrence, and what an edit or a membership change does to it
/// (docs/design.md#who-answers-the-open-occurrence). Pure: the caller passes the group's active
/// members and `now`; the Store reads and writes the rows around it.
///
/// The rule, in one sentence: **the open occurrence follows the alarm's assignment, and answers
/// given stay.** Its required set is always the members the assignment names now
/// (`requiredSet(assignees:activeMembers:)`: the assignees still active, or every active member when
/// the list is empty) followed by the members who already answered it and are no longer named.
/// So reassigning a chore hands the open occurrence to the new assignees, a member who joins an
/// "everyone" chore can answer the open one, and an occurrence that nobody answered is never closed
/// by an edit or a membership change: only an answer closes it (or the overdue sweep, or switching
/// the alarm off).
extension SharedAlarm {
    /// Applies a validated edit at `now`: the new `settings` and the resolved controls. A timing or
    /// control change re-opens the occurrence (`reopen(at:activeMembers:)`); then the open occurrence
    /// is conformed to the new assignment and rule (`conformOpenOccurrence`). The caller has checked
    /// that newly named assignees are active members (`SharedAlarmRules.checkAssignees`).
    public mutating func edit(
        settings new: AlarmSettings, isEnabled: Bool, pausedUntil: Timestamp?, activeMembers: [String], at now: Int64
    ) {
        let timingChanged = new.timing != settings.timing
        settings = new
        let held = setControls(isEnabled: isEnabled, pausedUntil: pausedUntil, at: now)
        if timingChanged || held {
            reopen(at: now, activeMembers: activeMembers)
        }
        conformOpenOccurrence(activeMembers: activeMembers, at: now)
    }

    /// Makes the open occurrence's required set the one the assignment names now, keeping the members
    /// who already answered (their answers count), and closes it when the completion rule is then met
    /// **and someone answered** — an unanswered occurrence never closes here. A closed occurrence
    /// advances (`advanceAfterClose`). Returns whether the document changed.
    @discardableResult
    public mutating func conformOpenOccurrence(activeMembers: [String], at now: Int64) -> Bool {
        guard var open = openOccurrence else { return false }
        let named = Self.requiredSet(assignees: settings.assignedTo, activeMembers: activeMembers)
        let namedSet = Set(named)
        let answerers = Set(open.answered.map(\.userID))
        let required = named + open.requiredUIDs.filter { answerers.contains($0) && !namedSet.contains($0) }
        var changed = false
        if required != open.requiredUIDs {
            open.requiredUIDs = required
            changed = true
        }
        let closes = !open.answered.isEmpty && open.isSatisfied(by: settings.completionRule)
        if closes { open.status = .closed }
        if changed || closes { occurrence = open }
        if closes { advanceAfterClose(at: now, activeMembers: activeMembers) }
        return changed || closes
    }

    /// Membership hook: `userID` stopped being an active member (removed, left, account deleted);
    /// `activeMembers` no longer holds them. Takes them off the assignees — a list emptied this way
    /// means every active member (*decision*: the chore keeps someone to do it rather than going
    /// dead) — and conforms the open occurrence: their pending place goes to whoever the assignment
    /// names now, an answer they gave stays. Returns whether the document changed.
    public mutating func dropMember(_ userID: String, activeMembers: [String], at now: Int64) -> Bool {
        var changed = false
        if settings.assignedTo.contains(userID) {
            settings.assignedTo.removeAll { $0 == userID }
            changed = true
        }
        let remaining = activeMembers.filter { $0 != userID }
        return conformOpenOccurrence(activeMembers: remaining, at: now) || changed
    }

    /// Membership hook: `userID` became an active member (joined by code, accepted an invitation,
    /// re-admitted); `activeMembers` holds them. An "everyone" alarm's open occurrence now waits for
    /// them too, and they can answer it. Returns whether the document changed.
    public mutating func memberJoined(activeMembers: [String], at now: Int64) -> Bool {
        conformOpenOccurrence(activeMembers: activeMembers, at: now)
    }
}

extension SharedAlarmRules {
    /// Every assignee must be an active member (`invalidField("assigned_to_uids")` otherwise).
    public static func checkAssignees(_ assignees: [String], activeMembers: [String]) throws {
        let active = Set(activeMembers)
        if let stranger = assignees.first(where: { !active.contains($0) }) {
            throw DomainError.invalidField(
                field: "assigned_to_uids", message: "assigned_to_uids: \(stranger) is not an active member")
        }
    }
}
