import Wire

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
        // Every request is logged: most paths are looked at once, in place, and returned as they are.
        guard path.utf8.withContiguousBytes(mayBeMasked) else { return path }
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
    static func mayBeMasked(_ path: UnsafeBufferPointer<UInt8>) -> Bool {
        var position = 0
        let first = nextSegment(path, &position)
        if equalsLowercased(path[first], "join") || equalsLowercased(path[first], "invite") { return true }
        guard equalsLowercased(path[first], "v1") else { return false }
        let second = nextSegment(path, &position)
        return equalsLowercased(path[second], "invitations") || equalsLowercased(path[second], "join")
    }

    /// The range of the next non-empty `/`-separated segment from `position` (empty at the end);
    /// `position` moves past it.
    private static func nextSegment(_ path: UnsafeBufferPointer<UInt8>, _ position: inout Int) -> Range<Int> {
        while position < path.count && path[position] == UInt8(ascii: "/") { position += 1 }
        let start = position
        while position < path.count && path[position] != UInt8(ascii: "/") { position += 1 }
        return start..<position
    }

    /// ASCII case-insensitive equality with a lower-case literal.
    private static func equalsLowercased(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ lower: StaticString) -> Bool {
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
