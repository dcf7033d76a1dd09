extension GroupStore {
    /// A keyset position in a list ordered by (time, id): lists resume strictly after it, so rows
    /// inserted meanwhile neither repeat nor shift the pages (docs/design.md#api-conventions: opaque `cursor`, `limit` ≤ 100).
    public struct PageKey: Sendable, Equatable {
        /// The `*_ms` ordering column of the last row of the previous page.
        public var milliseconds: Int64
        /// Its id (the tie-breaker).
        public var id: String

        public init(milliseconds: Int64, id: String) {
            self.milliseconds = milliseconds
            self.id = id
        }
    }

    /// One page of a list and where the next one starts (nil: this was the last).
    public struct Page<Item: Sendable>: Sendable {
        public var items: [Item]
        public var next: PageKey?

        public init(items: [Item], next: PageKey?) {
            self.items = items
            self.next = next
        }
    }

    /// Cuts `rows` (fetched with `limit + 1`) to a page, keyed by `key`.
    static func page<Item>(_ rows: [Item], limit: Int, key: (Item) -> PageKey) -> Page<Item> {
        guard rows.count > limit else { return Page(items: rows, next: nil) }
        let items = Array(rows.prefix(limit))
        return Page(items: items, next: items.last.map(key))
    }
}
