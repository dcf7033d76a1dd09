import Domain
import Foundation
import Wire

/// The query string's `name=value` pairs, percent-decoded (`+` is a space only in forms, so it stays);
/// a name given twice keeps its first value. Every route reads its query through this.
struct QueryParameters {
    private var values: [String: String] = [:]

    init(_ request: Request) {
        guard let query = request.http.head.query else { return }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            let value = parts.count == 2 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : ""
            if values[name] == nil { values[name] = value }
        }
    }

    subscript(_ name: String) -> String? { values[name] }

    /// A paged list's `limit`: absent → `defaultLimit`; else an integer in 1…`maxLimit`, or 422 naming
    /// the field (docs/design.md#api-conventions).
    func limit(default defaultLimit: Int, max maxLimit: Int) throws(DomainError) -> Int {
        guard let text = self["limit"] else { return defaultLimit }
        guard let n = Int(text), (1...maxLimit).contains(n) else {
            throw .invalidField(field: "limit", message: "limit must be an integer from 1 to \(maxLimit)")
        }
        return n
    }
}
