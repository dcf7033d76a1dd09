/// Taking an answer back ("Undo", docs/design.md#answers-retries-and-undo). Pure: the Store passes the
/// answer, the other answers still standing for its occurrence and the closing time of the last
/// occurrence done before it; it marks the completion row withdrawn around this.
extension SharedAlarm {
    /// Takes back `completion` (its author's, within `SharedAlarmRules.answerWithdrawalWindowMilliseconds`
    /// — the caller checks both) at `now`:
    /// - its occurrence is still open → the answer leaves it;
    /// - its occurrence closed (by this answer or another) and nothing has happened since — the
    ///   alarm's open occurrence is the very next fire with no answers, or the alarm is done with that
    ///   occurrence as its last — → the occurrence opens again at its own time with the answers still
    ///   standing (`otherAnswers`), `next_fire_at` goes back to it, and `last_completed_at` to
    ///   `previousCompletedAt`; its required set follows the assignment as always;
    /// - otherwise (missed, answered since, another occurrence) → `answerWithdrawalClosed`.
    public mutating func withdraw(
        _ completion: SharedCompletion, otherAnswers: [Occurrence.Answer], previousCompletedAt: Timestamp?,
        activeMembers: [String], at now: Int64
    ) throws(DomainError) {
        let scheduled = completion.scheduledAt
        if var open = openOccurrence, open.scheduledAt == scheduled {
            open.answered.removeAll { $0.userID == completion.userID }
            occurrence = open
            conformOpenOccurrence(activeMembers: activeMembers, at: now)
            return
        }
        guard let current = occurrence, current.status != .missed, lastMissedAt.map({ $0 < scheduled }) ?? true else {
            throw .answerWithdrawalClosed(reason: "its occurrence was marked missed")
        }
        let lastDone = current.status == .closed && current.scheduledAt == scheduled
        let nextUntouched =
            current.status == .open && current.answered.isEmpty
            && firstFire(after: scheduled.milliseconds) == current.scheduledAt.milliseconds
        guard lastDone || nextUntouched else {
            throw .answerWithdrawalClosed(reason: "its occurrence has moved on")
        }
        occurrence = Occurrence(scheduledAt: scheduled, requiredUIDs: [], answered: otherAnswers)
        nextFireAt = scheduled
        lastCompletedAt = previousCompletedAt
        conformOpenOccurrence(activeMembers: activeMembers, at: now)
    }
}
