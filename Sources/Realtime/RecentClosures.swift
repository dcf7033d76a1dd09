/// Recently closed accounts or sessions → the change-log seq that closed them, remembering at most
/// `capacity` keys: the oldest-inserted is forgotten first (a key closed again keeps its place).
struct RecentClosures: Sendable {
    /// How many keys are remembered at most.
    let capacity: Int
    private var seqs: [String: Int64] = [:]
    private var order: [String] = []

    init(capacity: Int) { self.capacity = capacity }

    /// The seq that closed `key`, if it is still remembered.
    subscript(key: String) -> Int64? { seqs[key] }

    /// Remembers that `key` closed at `seq`, forgetting the oldest beyond `capacity`.
    mutating func remember(_ key: String, at seq: Int64) {
        if seqs.updateValue(seq, forKey: key) == nil { order.append(key) }
        if order.count > capacity {
            let evicted = order.count - capacity
            for key in order.prefix(evicted) { seqs[key] = nil }
            order.removeFirst(evicted)
        }
    }
}
