import Wire

/// The web client's session cookie (docs/security.md#the-web-clients-session): the same session token
/// as a bearer token, held by the browser in an `HttpOnly` cookie scripts cannot read.
///
/// - A sign-in (`register`, `login`, `oidc`) that sends `X-Chronir-Session: cookie` gets the token in
///   `Set-Cookie` (`HttpOnly; SameSite=Strict; Path=/`, `Secure` when the public base URL is https)
///   and not in the JSON body. Without the header nothing changes: apps keep bearer tokens.
/// - A request without `Authorization` is authenticated by the cookie. A cookie-authenticated write
///   (POST, PUT, PATCH, DELETE) must carry `X-Chronir-CSRF: 1` — a header a cross-site form cannot
///   send and cross-site `fetch` cannot send without a CORS preflight the server never grants — and,
///   when it has an `Origin`, one on the allow-list; else 403 CSRF_CHECK_FAILED (CA042). The cookie's
///   `SameSite=Strict` is the second line.
/// - `/v1/realtime` accepts the cookie at the upgrade only with an allowed `Origin` (browsers always
///   send one), checked before the 101 like a bearer header.
/// - Logout answers with a `Set-Cookie` that removes it.
///
/// The cookie's name is `__Host-chronir_session` when the server is reached securely (the public
/// base URL is https): a browser keeps a `__Host-` cookie only when it is `Secure`, `Path=/` and has
/// no `Domain`, so a sibling subdomain cannot plant one (cookie tossing, RFC 6265bis §4.1.3.2).
/// Over plain http (development, loopback) no prefix is possible and the name is `chronir_session`.
/// A request carrying the session cookie twice is refused (400 CA043), whatever the values: the
/// browser sends a planted cookie beside the real one and the server cannot tell them apart.
enum SessionCookie {
    /// The cookie's name over plain http.
    static let name = "chronir_session"
    /// The cookie's name when the server is reached securely (`secure(_:)`).
    static let securedName = "__Host-" + name

    /// The name the cookie has on this server.
    static func name(secure: Bool) -> String { secure ? securedName : name }
    /// The sign-in request header that asks for the cookie (value `cookie`).
    static let modeHeader = "x-chronir-session"
    /// The header every cookie-authenticated write must carry (value `1`).
    static let csrfHeader = "x-chronir-csrf"
    /// The cookie's `Max-Age`: 400 days, the longest browsers keep a cookie (RFC 6265bis §5.5). The
    /// session's own lifetime (30 days idle, sliding with use) decides whether the token is still good,
    /// so the cookie never has to be re-issued as the session slides; a cookie that outlives its
    /// session is answered 401 like any stale token.
    static let maxAgeSeconds: Int64 = 400 * 24 * 3600
    /// Longest cookie value taken as a token (tokens are 43 characters); longer ones are ignored.
    static let maxTokenLength = 256

    /// Whether a sign-in asks for the session as a cookie.
    static func requested(by request: Request) -> Bool {
        request.headers[first: modeHeader].map { HTTPHeaders.namesEqual($0, "cookie") } ?? false
    }

    /// The session token in the request's `Cookie` header(s), if any (RFC 6265 §5.4: `name=value` pairs
    /// separated by `; `), under this server's cookie name (`name(secure:)`; the other name is not
    /// looked at). The name twice → 400 CA043 SESSION_COOKIE_AMBIGUOUS; an empty or over-long value
    /// is no token.
    static func token(in request: Request, secure: Bool) throws(APIError) -> String? {
        let wanted = name(secure: secure)
        var found: Substring?
        var count = 0
        for header in request.headers[all: "cookie"] {
            for pair in header.split(separator: ";") {
                let trimmed = pair.drop { $0 == " " || $0 == "\t" }
                guard let equals = trimmed.firstIndex(of: "="), trimmed[..<equals] == wanted[...] else { continue }
                count += 1
                found = trimmed[trimmed.index(after: equals)...].prefix { $0 != " " && $0 != "\t" }
            }
        }
        guard count <= 1 else {
            throw APIError(
                .sessionCookieAmbiguous,
                "the request carries the session cookie more than once; clear this site's cookies and sign in again")
        }
        guard let found, !found.isEmpty, found.count <= maxTokenLength else { return nil }
        return String(found)
    }

    /// The `Set-Cookie` value that hands `token` to the browser (`maxAgeSeconds`: `SessionCookie.maxAgeSeconds`).
    static func setCookie(token: String, maxAgeSeconds: Int64 = maxAgeSeconds, secure: Bool) -> String {
        "\(name(secure: secure))=\(token); Path=/; Max-Age=\(maxAgeSeconds); HttpOnly; SameSite=Strict\(secure ? "; Secure" : "")"
    }

    /// The `Set-Cookie` value that removes the cookie.
    static func clearCookie(secure: Bool) -> String {
        "\(name(secure: secure))=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict\(secure ? "; Secure" : "")"
    }

    /// Whether cookies get `Secure` and the `__Host-` name: the server is reached over https (native TLS or a proxy in front,
    /// as the public base URL says).
    static func secure(_ config: AppConfiguration) -> Bool {
        config.publicBaseURL.lowercased().hasPrefix("https://")
    }

    /// The CSRF defence for a cookie-authenticated request: reads pass; a write needs the custom
    /// header and, when an `Origin` is present, an allowed one.
    static func checkCSRF(_ request: Request, config: AppConfiguration) throws(APIError) {
        guard Services.writeMethods.contains(request.method) else { return }
        guard request.headers[first: csrfHeader] == "1" else {
            throw APIError(.csrfCheckFailed, "a write authenticated by the session cookie needs the X-Chronir-CSRF: 1 header")
        }
        guard RealtimeRoutes.originAllowed(request.headers[first: "origin"], config: config) else {
            throw APIError(.csrfCheckFailed, "a write authenticated by the session cookie from a foreign origin")
        }
    }
}
