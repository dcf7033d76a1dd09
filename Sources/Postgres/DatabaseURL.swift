/// What may be said about a PostgreSQL connection URL in logs.
public enum DatabaseURL {
    /// `url` with the password (if any) replaced by `***`: `postgres://chronir:***@db:5432/chronir`.
    /// Query parameters are kept (`sslmode` is worth seeing) except `password=`.
    public static func redacted(_ url: String) -> String {
        var text = url
        if let colonSlashSlash = text.indices.first(where: { text[$0...].hasPrefix("://") }),
            case let start = text.index(colonSlashSlash, offsetBy: 3),
            let at = text[start...].firstIndex(of: "@")
        {
            let userInfo = text[start..<at]
            if let colon = userInfo.firstIndex(of: ":") {
                text.replaceSubrange(text.index(after: colon)..<at, with: "***")
            }
        }
        if let query = text.firstIndex(of: "?") {
            let parameters = text[text.index(after: query)...].split(separator: "&").map { parameter in
                parameter.lowercased().hasPrefix("password=") ? "password=***" : String(parameter)
            }
            text = String(text[...query]) + parameters.joined(separator: "&")
        }
        return text
    }
}
