/// What an edit changed, in document keys, for the activity history.
extension SharedAlarm {
    /// Document keys the server keeps rather than a person edits: an edit is never told as "changed
    /// these" (the history says what a person did, docs/api.md#group-activity).
    static let serverKeptKeys: Set<String> = [
        "id", "group_id", "created_by_uid", "version", "created_at", "updated_at", "deleted_at", "next_fire_at",
        "occurrence", "answerable_from", "is_active", "last_completed_at", "last_missed_at", "require_any_completion",
        "require_all_completion", "is_done",
    ]

    /// The document keys an edit from `before` to this alarm changed, sorted — `title`, `times_of_day`,
    /// `assigned_to_uids`, `paused_until`… — for the activity history ("assigned to Bea, time
    /// moved", not "was edited"). Server-kept fields (`serverKeptKeys`) are left out. `encoded`: this
    /// alarm as `DocumentCoding.encode` wrote it, when the caller has it (not encoded again).
    public func editedKeys(from before: SharedAlarm, encoded: [UInt8]? = nil) -> [String] {
        guard let old = DocumentMembers.of(DocumentCoding.encode(before)),
            let new = DocumentMembers.of(encoded ?? DocumentCoding.encode(self))
        else { return [] }
        return Set(old.keys).union(new.keys).subtracting(Self.serverKeptKeys).filter { old[$0] != new[$0] }.sorted()
    }
}
