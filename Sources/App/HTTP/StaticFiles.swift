import Foundation
public import Wire

/// Serves files under one root directory (the web client in `Public/`) for GET/HEAD.
///
/// Safety: each path segment is percent-decoded on its own; a decoded segment that starts with `.`
/// (`.`, `..`, dotfiles such as `.git` or `.env`; only a leading `/.well-known/` is served), holds
/// `/`, `\` or NUL, or a malformed escape, is refused as not found. The file's real path (symlinks
/// resolved) must lie inside the root's real path, so a symlink pointing out of the root is refused too.
/// Directories serve their `index.html`. `ETag` is derived from size and modification time;
/// a matching `If-None-Match` gets 304. Files are read off the event loop by the caller's worker.
///
/// The web client routes in the browser (History API): a path under one of `shellRoutes` that names no
/// file (`/join/<CODE>`, `/invite/<token>`, `/groups/<id>`, the apps' `/group/<id>` and `/alarm/<id>`, `/login`,
/// `/settings`, `/alarms`, `/tasks`) is answered with the root's `index.html`, the app shell. Every answer carries
/// `securityHeaders`, with a Content-Security-Policy that allows only this origin (and its own WebSocket URL).
public struct StaticFiles: Sendable {
    /// Largest file served (the web client is small; this bounds memory per request).
    public static let maxFileBytes = 8 << 20

    /// First path segments the client routes itself; such paths serve the app shell (`/index.html`).
    public static let shellRoutes: Set<String> = [
        "join", "invite", "groups", "group", "alarm", "login", "register", "verify-email", "reset-password", "settings", "alarms", "tasks",
    ]
    /// Most segments a shell route has (`/groups/<id>/alarms/<aid>`); deeper paths are plain 404s.
    public static let maxShellSegments = 4

    /// The one dot-segment served, and only as the first segment (RFC 8615).
    public static let wellKnown = ".well-known"

    /// The root's canonical path (symlinks resolved).
    public let root: String

    /// Serves `directory`; nil when it does not exist.
    public init?(directory: String) {
        guard let real = Self.realPath(directory) else { return nil }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: real, isDirectory: &isDirectory), isDirectory.boolValue else {
            return nil
        }
        root = real
    }

    /// The response for a GET/HEAD of `path` (percent-encoded, without query), or nil when no file
    /// answers (the caller sends its own 404).
    public func response(path: Substring, headers: HTTPHeaders) -> HTTPResponse? {
        if let file = fileResponse(path: path, headers: headers) { return file }
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        guard let first = segments.first, Self.shellRoutes.contains(String(first)),
            segments.count <= Self.maxShellSegments
        else { return nil }
        return fileResponse(path: "/index.html", headers: headers)
    }

    /// The security headers of every static answer. `connect-src` names the page's own WebSocket
    /// origin explicitly (`ws://` and `wss://` of the request's `Host`) for browsers whose `'self'`
    /// does not cover WebSocket schemes; a `Host` with characters outside a host[:port] is left out.
    public static func securityHeaders(host: String?) -> HTTPHeaders {
        var connect = "'self'"
        if let host, !host.isEmpty, host.utf8.count <= 255,
            host.utf8.allSatisfy({ b in
                (b >= 48 && b <= 58) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 45 || b == 46
                    || b == 91 || b == 93
            })
        {
            connect += " ws://\(host) wss://\(host)"
        }
        return [
            "Content-Security-Policy":
                "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                + "connect-src \(connect); base-uri 'none'; form-action 'self'; object-src 'none'; "
                + "frame-ancestors 'none'",
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "X-Frame-Options": "DENY",
            "Cross-Origin-Opener-Policy": "same-origin",
            "Cross-Origin-Resource-Policy": "same-origin",
            "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
        ]
    }

    /// The file `path` names, or nil.
    func fileResponse(path: Substring, headers: HTTPHeaders) -> HTTPResponse? {
        var relative: [String] = []
        for raw in path.split(separator: "/", omittingEmptySubsequences: true) {
            guard let segment = PercentDecoding.decode(raw), !segment.isEmpty,
                !segment.hasPrefix(".") || (relative.isEmpty && segment == Self.wellKnown),
                !segment.contains("/"), !segment.contains("\\"), !segment.contains("\0")
            else { return nil }
            relative.append(segment)
        }
        var candidate = ([root] + relative).joined(separator: "/")
        var info = stat()
        guard stat(candidate, &info) == 0 else { return nil }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            candidate += "/index.html"
            guard stat(candidate, &info) == 0 else { return nil }
        }
        guard (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= Self.maxFileBytes,
            let real = Self.realPath(candidate), real.hasPrefix(root + "/")
        else { return nil }

        let etag =
            "\"\(String(info.st_size, radix: 16))-\(String(info.st_mtim.tv_sec, radix: 16))"
            + "\(String(info.st_mtim.tv_nsec, radix: 16))\""
        var responseHeaders = Self.securityHeaders(host: headers[first: "host"])
        responseHeaders.add(name: "Content-Type", value: Self.contentType(for: real))
        responseHeaders.add(name: "ETag", value: etag)
        responseHeaders.add(name: "Cache-Control", value: "no-cache")
        if let match = headers[first: "if-none-match"],
            match == "*" || match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == etag })
        {
            return HTTPResponse(status: .notModified, headers: ["ETag": etag, "Cache-Control": "no-cache"])
        }
        guard let data = FileManager.default.contents(atPath: real) else { return nil }
        return HTTPResponse(status: .ok, headers: responseHeaders, body: Array(data))
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Media type by file extension.
    static func contentType(for path: String) -> String {
        switch path.split(separator: ".").last.map({ $0.lowercased() }) ?? "" {
        case "html", "htm": "text/html; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "json": "application/json; charset=utf-8"
        case "yaml", "yml": "application/yaml; charset=utf-8"
        case "svg": "image/svg+xml"
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "ico": "image/x-icon"
        case "webmanifest": "application/manifest+json"
        case "txt": "text/plain; charset=utf-8"
        case "woff2": "font/woff2"
        default: "application/octet-stream"
        }
    }
}
