@testable import App
import Foundation
import TestSupport
import Testing
import Wire

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

    @Test("traversal attempts find nothing", arguments: [
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
}
