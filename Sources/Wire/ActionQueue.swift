/// The actions a protocol core has decided and its shell has not taken yet, first in first out. A
/// core appends while it handles an input and its `next()` pops; the storage is kept and reused once
/// drained, so a connection's steady state allocates nothing per action.
struct ActionQueue<Action> {
    private var actions: [Action] = []
    private var start = 0

    /// Whether no action is waiting.
    var isEmpty: Bool { start == actions.count }

    /// Adds `action` behind the waiting ones.
    mutating func append(_ action: Action) { actions.append(action) }

    /// The oldest waiting action, removed; nil when none waits.
    mutating func popFirst() -> Action? {
        guard start < actions.count else { return nil }
        let action = actions[start]
        start += 1
        if start == actions.count {
            actions.removeAll(keepingCapacity: true)
            start = 0
        }
        return action
    }

    /// Drops every waiting action.
    mutating func removeAll() {
        actions.removeAll()
        start = 0
    }
}

extension ActionQueue: Sendable where Action: Sendable {}
