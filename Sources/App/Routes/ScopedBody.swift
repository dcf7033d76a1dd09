/// Which kind of alarm a write is for: a group's shared alarm or a user's personal one.
enum AlarmScope { case shared, personal }

/// A strict body that one route of each kind decodes (`AlarmBody`, `CompletionBody`): a field of the
/// other kind is refused as unknown (422 naming it), exactly as a key the body does not know at all.
protocol ScopedBody: StrictBody {
    /// The fields only a shared alarm's write takes, in the order the refusal names the first present.
    static var sharedOnly: [String] { get }
    /// The fields only a personal alarm's write takes, likewise.
    static var personalOnly: [String] { get }
    /// The keys the decoded body had.
    var present: Set<String> { get }
}

extension ScopedBody {
    /// Decodes the body of a `scope` write: `JSONBody.decode`'s strict decoding, then 422 "unknown
    /// field" for the first field of the other kind.
    static func decode(for scope: AlarmScope, from request: Request) throws(APIError) -> Self {
        let body = try JSONBody.decode(Self.self, from: request)
        let foreign = scope == .shared ? personalOnly : sharedOnly
        if let key = foreign.first(where: body.present.contains) {
            throw APIError(.validationFailed, "\(key) is invalid: unknown field", field: key)
        }
        return body
    }
}
