import Foundation
import TestSupport
import Testing
import Wire

@testable import App

@Suite("Static files — Public/ at /, no way out of the root")
struct StaticFilesTests {
    /// root/{index.html, app.js, sub/index.html, escape -> ../outside (symlink), inner -> app.js (symlink)}
    /// and a secret next to the root.
    func fixture() throws -> (TemporaryDirectory, StaticFiles) {
        let dir = TemporaryDirectory()
        let fm = FileManager.default
        let root = dir.path + "/root"
        try fm.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: dir.path + "/outside", withIntermediateDirectories: true)
        try Data("<h1>home</h1>".utf8).write(to: URL(fileURLWithPath: root + "/index.html"))
        try Data("console.log(1)".utf8).write(to: URL(fileURLWithPath: root + "/app.js"))
        try Data("<p>sub</p>".utf8).write(to: URL(fileURLWithPath: root + "/sub/index.html"))
        try Data("top secret".utf8).write(to: URL(fileURLWithPath: dir.path + "/outside/secret.txt"))
        try Data("secret".utf8).write(to: URL(fileURLWithPath: dir.path + "/secret.txt"))
        try fm.createSymbolicLink(atPath: root + "/escape", withDestinationPath: dir.path + "/outside")
        try fm.createSymbolicLink(atPath: root + "/leak.txt", withDestinationPath: dir.path + "/secret.txt")
        try fm.createSymbolicLink(atPath: root + "/inner.js", withDestinationPath: root + "/app.js")
        return (dir, try #require(StaticFiles(directory: root)))
    }

    @Test("serves files with their content type, and index.html for directories")
    func serves() throws {
        let (dir, files) = try fixture()
        defer { withExtendedLifetime(dir) {} }
        let home = try #require(files.response(path: "/", headers: HTTPHeaders()))
        #expect(home.status.code == 200)
        #expect(String(decoding: home.body, as: UTF8.self) == "<h1>home</h1>")
        #expect(home.headers[first: "content-type"] == "text/html; charset=utf-8")
        let js = try #require(files.response(path: "/app.js", headers: HTTPHeaders()))
        #expect(js.headers[first: "content-type"] == "text/javascript; charset=utf-8")
        #expect(files.response(path: "/sub", headers: HTTPHeaders())?.body == Array("<p>sub</p>".utf8))
        #expect(files.response(path: "/inner.js", headers: HTTPHeaders())?.status.code == 200)
    }

    @Test("ETag + If-None-Match gives 304 without a body")
    func etag() throws {
        let (dir, files) = try fixture()
        defer { withExtendedLifetime(dir) {} }
        let first = try #require(files.response(path: "/app.js", headers: HTTPHeaders()))
        let etag = try #require(first.headers[first: "etag"])
        let again = try #require(files.response(path: "/app.js", headers: ["If-None-Match": etag]))
        #expect(again.status.code == 304)
        #expect(again.body.isEmpty)
        let other = try #require(files.response(path: "/app.js", headers: ["If-None-Match": "\"nope\""]))
        #expect(other.status.code == 200)
    }

    @Test(
        "traversal attempts find nothing",
        arguments: [
            "/../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E/secret.txt", "/sub/../../secret.txt",
            "/..%2fsecret.txt", "/%2e%2e%2fsecret.txt", "/escape/secret.txt", "/leak.txt", "//etc/passwd",
            "/etc/passwd", "/.%2e/secret.txt", "/sub/%2e%2e/%2e%2e/secret.txt", "/%00", "/app.js%00.html",
            "/..\\secret.txt", "/%5c..%5csecret.txt", "/nonexistent", "/%zz",
        ])
    func traversal(path: String) throws {
        let (dir, files) = try fixture()
        defer { withExtendedLifetime(dir) {} }
        // The fixture is real: the same lookup without the attack finds the file.
        #expect(files.response(path: "/app.js", headers: HTTPHeaders()) != nil)
        #expect(files.response(path: path[...], headers: HTTPHeaders()) == nil)
    }

    @Test(
        "dotfiles and dot-directories are never served; /.well-known/ is",
        arguments: [
            "/.hidden", "/.git/config", "/%2egit/config", "/sub/.env", "/sub/.well-known/x.txt", "/.well-known/../.hidden",
        ])
    func dotfiles(path: String) throws {
        let (dir, files) = try fixture()
        defer { withExtendedLifetime(dir) {} }
        let root = dir.path + "/root"
        try FileManager.default.createDirectory(atPath: root + "/.git", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/.well-known", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/sub/.well-known", withIntermediateDirectories: true)
        for file in [".hidden", ".git/config", "sub/.env", ".well-known/x.txt", "sub/.well-known/x.txt"] {
            try Data("private".utf8).write(to: URL(fileURLWithPath: root + "/" + file))
        }
        #expect(files.response(path: "/.well-known/x.txt", headers: HTTPHeaders())?.status.code == 200)
        #expect(files.response(path: path[...], headers: HTTPHeaders()) == nil)
    }

    @Test("through the application: GET / serves index.html, /v1/* never falls through to files")
    func throughApplication() async throws {
        let (dir, _) = try fixture()
        defer { withExtendedLifetime(dir) {} }
        let h = try AppHarness(publicDirectory: dir.path + "/root")
        let home = await h.send(.get, "/")
        #expect(home.status == 200)
        #expect(home.text == "<h1>home</h1>")
        #expect(await h.send(.get, "/../secret.txt").status == 404)
        #expect(await h.send(.get, "/v1/index.html").status == 404)
        #expect(await h.send(.post, "/index.html").status == 404)
    }

    @Test(
        "client routes serve the app shell; other unknown paths stay 404",
        arguments: [
            "/join/ABC234", "/invite/Zm9vYmFy-token_43chars", "/groups", "/groups/0b9c", "/groups/0b9c/alarms/1a2b",
            "/login", "/register", "/verify-email", "/reset-password", "/settings", "/alarms", "/tasks", "/group/0b9c",
            "/alarm/1a2b",
        ])
    func appShell(path: String) throws {
        let (dir, files) = try fixture()
        defer { withExtendedLifetime(dir) {} }
        let shell = try #require(files.response(path: path[...], headers: HTTPHeaders()))
        #expect(shell.status.code == 200)
        #expect(String(decoding: shell.body, as: UTF8.self) == "<h1>home</h1>")
        #expect(shell.headers[first: "content-type"] == "text/html; charset=utf-8")
    }

    @Test(
        "not the app shell: unknown first segments and too-deep paths stay 404",
        arguments: [
            "/nothing", "/joinx/ABC234", "/groups/a/b/c/d", "/v1x/join/ABC234",
        ])
    func notAppShell(path: String) throws {
        let (dir, files) = try fixture()
        defer { withExtendedLifetime(dir) {} }
        #expect(files.response(path: path[...], headers: HTTPHeaders()) == nil)
    }

    @Test(
        "traversal under a shell route gets the shell, never the file",
        arguments: [
            "/join/../secret.txt", "/join/%2e%2e/secret.txt", "/invite/..%2f..%2fsecret.txt", "/groups/%00",
        ])
    func traversalUnderShell(path: String) throws {
        let (dir, files) = try fixture()
        defer { withExtendedLifetime(dir) {} }
        let r = try #require(files.response(path: path[...], headers: HTTPHeaders()))
        #expect(String(decoding: r.body, as: UTF8.self) == "<h1>home</h1>")
    }

    @Test("every answer carries the CSP (own origin and its WebSocket URL only) and the security headers")
    func securityHeaders() throws {
        let (dir, files) = try fixture()
        defer { withExtendedLifetime(dir) {} }
        for path in ["/", "/app.js", "/join/ABC234"] {
            let r = try #require(files.response(path: path[...], headers: ["Host": "chronir.example:8443"]))
            let csp = try #require(r.headers[first: "content-security-policy"])
            #expect(csp.contains("default-src 'self'"))
            #expect(csp.contains("connect-src 'self' ws://chronir.example:8443 wss://chronir.example:8443;"))
            #expect(csp.contains("frame-ancestors 'none'"))
            #expect(!csp.contains("unsafe-inline"))
            #expect(r.headers[first: "x-content-type-options"] == "nosniff")
            #expect(r.headers[first: "referrer-policy"] == "no-referrer")
            #expect(r.headers[first: "x-frame-options"] == "DENY")
            #expect(r.headers[first: "cross-origin-opener-policy"] == "same-origin")
        }
        // A Host that is not a plain host[:port] never reaches the policy.
        for host in ["evil.example; script-src *", "a b", "x'y", ""] {
            let r = try #require(files.response(path: "/", headers: ["Host": host]))
            let csp = try #require(r.headers[first: "content-security-policy"])
            #expect(csp.contains("connect-src 'self';"))
            #expect(!csp.contains("evil"))
        }
        #expect(
            StaticFiles.securityHeaders(host: "[::1]:8080")[first: "content-security-policy"]?
                .contains("ws://[::1]:8080 wss://[::1]:8080") == true)
    }

    @Test("the access log names the landing route, never the code or token in it")
    func landingPathsAreNotLogged() async throws {
        let (dir, _) = try fixture()
        defer { withExtendedLifetime(dir) {} }
        #expect(LoggedPath.masked("/join/ABC234") == "/join/{code}")
        #expect(LoggedPath.masked("/invite/secret-token") == "/invite/{token}")
        #expect(LoggedPath.masked("/groups/0b9c") == "/groups/0b9c")
        #expect(LoggedPath.masked("/join") == "/join")
        let log = try await AccessLogTests().captureLog { logger, accessLog in
            let h = try AppHarness(publicDirectory: dir.path + "/root", logger: logger, accessLog: accessLog)
            #expect(await h.send(.get, "/join/QWERTY").status == 200)
            #expect(await h.send(.get, "/invite/SeCrEtToKeN123").status == 200)
            #expect(await h.send(.get, "/app.js").status == 200)
        }
        #expect(!log.contains("QWERTY"))
        #expect(!log.contains("SeCrEtToKeN123"))
        #expect(log.contains("/join/{code}"))
        #expect(log.contains("/invite/{token}"))
        #expect(log.contains("/app.js"))
    }
}
