/// The form of a request path the access log shows: no secret that a path can carry ever reaches
/// the log, whatever route matched and whatever the status (a 404 or 405 has no route, so masking
/// goes by pattern, never by the matched template).
///
/// Masked segments (case-insensitive first segment):
/// - `/join/<code>…` → `/join/{code}` (an invite code's landing page, or a mistyped POST)
/// - `/invite/<token>…` → `/invite/{token}` (a link invitation's landing page)
/// - `/v1/invitations/<ref>[/rest]` → `/v1/invitations/{ref}[/rest]` (`ref` may be a link token)
/// - `/v1/join/<anything>` → `/v1/join/{code}` (the landing page's preview, `GET /v1/join/{code}`,
///   carries the code in the path; a join takes it in the body)
/// Everything after a masked segment is dropped except the invitation's action (`accept`, `decline`).
enum LoggedPath {
    static func masked(_ path: Substring) -> Substring {
        guard mayBeMasked(path.utf8) else { return path }  // every request is logged: no split for most
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        guard segments.count >= 2 else { return path }
        switch segments[0].lowercased() {
        case "join": return "/join/{code}"
        case "invite": return "/invite/{token}"
        case "v1" where segments.count >= 3:
            switch segments[1].lowercased() {
            case "invitations":
                guard segments.count >= 4 else { return "/v1/invitations/{ref}" }
                let action = segments[3].lowercased()
                return action == "accept" || action == "decline" ? "/v1/invitations/{ref}/\(action)"[...] : "/v1/invitations/{ref}/…"
            case "join": return "/v1/join/{code}"
            default: return path
            }
        default: return path
        }
    }

    /// Whether `masked` can change `path`: its first segment is `join`, `invite` or `v1` followed by
    /// `invitations` or `join` (ASCII case-insensitive), looked at without allocating.
    static func mayBeMasked(_ path: Substring.UTF8View) -> Bool {
        var rest = path[...]
        let first = nextSegment(&rest)
        if equalsLowercased(first, "join") || equalsLowercased(first, "invite") { return true }
        guard equalsLowercased(first, "v1") else { return false }
        let second = nextSegment(&rest)
        return equalsLowercased(second, "invitations") || equalsLowercased(second, "join")
    }

    /// The next non-empty `/`-separated segment of `rest` (empty at the end); `rest` moves past it.
    private static func nextSegment(_ rest: inout Substring.UTF8View.SubSequence) -> Substring.UTF8View.SubSequence {
        while rest.first == UInt8(ascii: "/") { rest = rest.dropFirst() }
        let end = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
        defer { rest = rest[end...] }
        return rest[..<end]
    }

    /// ASCII case-insensitive equality with a lower-case literal.
    private static func equalsLowercased(_ bytes: Substring.UTF8View.SubSequence, _ lower: StaticString) -> Bool {
        guard bytes.count == lower.utf8CodeUnitCount else { return false }
        var i = 0
        for byte in bytes {
            let folded = byte >= 65 && byte <= 90 ? byte + 32 : byte
            guard folded == lower.utf8Start[i] else { return false }
            i += 1
        }
        return true
    }
}
