import Foundation
public import Wire

/// Serves files under one root directory (the web client in `Public/`) for GET/HEAD.
///
/// Safety: each path segment is percent-decoded on its own; a decoded segment that is `.`/`..`, holds
/// `/`, `\` or NUL, or a malformed escape, is refused as not found. The file's real path (symlinks
/// resolved) must lie inside the root's real path, so a symlink pointing out of the root is refused too.
/// Directories serve their `index.html`. `ETag` is derived from size and modification time;
/// a matching `If-None-Match` gets 304. Files are read off the event loop by the caller's worker.
public struct StaticFiles: Sendable {
    /// Largest file served (the web client is small; this bounds memory per request).
    public static let maxFileBytes = 8 << 20

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
        var relative: [String] = []
        for raw in path.split(separator: "/", omittingEmptySubsequences: true) {
            guard let segment = PercentDecoding.decode(raw), !segment.isEmpty, segment != ".", segment != "..",
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

        let etag = "\"\(String(info.st_size, radix: 16))-\(String(info.st_mtim.tv_sec, radix: 16))"
            + "\(String(info.st_mtim.tv_nsec, radix: 16))\""
        var responseHeaders: HTTPHeaders = [
            "Content-Type": Self.contentType(for: real), "ETag": etag, "Cache-Control": "no-cache",
            "X-Content-Type-Options": "nosniff",
        ]
        if let match = headers[first: "if-none-match"],
            match == "*" || match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == etag })
        {
            return HTTPResponse(status: .notModified, headers: ["ETag": etag, "Cache-Control": "no-cache"])
        }
        guard let data = FileManager.default.contents(atPath: real) else { return nil }
        if real.hasSuffix(".html") {
            responseHeaders.add(
                name: "Content-Security-Policy",
                value: "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
        }
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
