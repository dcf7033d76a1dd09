/// The form of a request path the access log shows: no secret that a path can carry ever reaches
/// the log, whatever route matched and whatever the status (a 404 or 405 has no route, so masking
/// goes by pattern, never by the matched template).
///
/// Masked segments (case-insensitive first segment):
/// - `/join/<code>…` → `/join/{code}` (an invite code's landing page, or a mistyped POST)
/// - `/invite/<token>…` → `/invite/{token}` (a link invitation's landing page)
/// - `/v1/invitations/<ref>[/rest]` → `/v1/invitations/{ref}[/rest]` (`ref` may be a link token)
/// - `/v1/join/<anything>` → `/v1/join/{code}` (the API takes the code in the body; a client that
///   puts it in the path still never has it logged)
/// Everything after a masked segment is dropped except the invitation's action (`accept`, `decline`).
enum LoggedPath {
    static func masked(_ path: Substring) -> Substring {
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
}
