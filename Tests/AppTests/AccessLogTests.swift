import Foundation
import Logging
import Testing
import Wire

@testable import App

@Suite("Access log — one line per request, never a secret")
struct AccessLogTests {
    /// Runs `body` with a JSON logger writing into a pipe and returns what it wrote.
    func captureLog(_ body: (Logger, AccessLog) async throws -> Void) async throws -> String {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        let sink = LogSink(fd: fds[1])
        let logger = Logger(label: "chronir.access") { label in
            ChronirLogHandler(label: label, level: .info, format: .json, sink: sink)
        }
        try await body(logger, AccessLog(sink: sink, format: .json, level: .info))
        sink.flush()
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fds[0], &chunk, chunk.count)
            if n <= 0 { break }
            output += chunk[0..<n]
        }
        close(fds[0])
        close(fds[1])
        return String(decoding: output, as: UTF8.self)
    }

    @Test("register, login and me are logged with method, path, status, bytes, duration and request id — no token, no password")
    func noSecrets() async throws {
        var token = ""
        let log = try await captureLog { logger, accessLog in
            let h = try AppHarness(logger: logger, accessLog: accessLog)
            let (t, _) = try await h.register("ana@example.com", password: "hunter2-secret-pass")
            token = t
            _ = await h.send(.post, "/v1/auth/login", json: #"{"email":"ana@example.com","password":"hunter2-secret-pass"}"#)
            _ = await h.send(.get, "/v1/me?probe=1", token: token, headers: [("X-Request-Id", "req-42")])
        }
        #expect(!token.isEmpty)
        #expect(!log.contains(token))
        #expect(!log.contains("hunter2-secret-pass"))
        let lines = log.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let requests = lines.filter { $0["msg"] as? String == "request" }
        #expect(requests.count == 3)
        let me = try #require(requests.first { $0["request_id"] as? String == "req-42" })
        #expect(me["method"] as? String == "GET")
        #expect(me["path"] as? String == "/v1/me")  // the query string is not logged
        #expect(me["status"] as? Int == 200)
        #expect(me["route"] as? String == "/v1/me")
        #expect((me["bytes"] as? Int ?? 0) > 0)
        #expect(me["duration_us"] is Int)
    }

    @Test("an invitation link token in the path is logged as the route template")
    func invitationTokenNotLogged() async throws {
        let token = "Zm9vYmFyLXNlY3JldC1saW5rLXRva2VuLTQzY2hhcnM"
        let log = try await captureLog { logger, accessLog in
            let h = try AppHarness(logger: logger, accessLog: accessLog)
            let (t, _) = try await h.register("ana@example.com")
            _ = await h.send(.post, "/v1/invitations/\(token)/accept", token: t)
        }
        #expect(!log.contains(token))
        #expect(log.contains("/v1/invitations/{ref}/accept"))
    }

    @Test("secrets in paths are masked whatever the status: 405 on an invitation token, 404 and 405 on a code")
    func secretsMaskedOnErrors() async throws {
        let token = "U2VjcmV0TGlua1Rva2VuT25BNDA1UGF0aDQzY2hhcnM"
        let log = try await captureLog { logger, accessLog in
            let h = try AppHarness(logger: logger, accessLog: accessLog)
            let (t, _) = try await h.register("ana@example.com")
            #expect(await h.send(.get, "/v1/invitations/\(token)/accept", token: t).status == 405)
            #expect(await h.send(.put, "/v1/invitations/\(token)", token: t).status == 405)
            #expect(await h.send(.post, "/join/QWERTY23").status == 404)
            #expect(await h.send(.post, "/v1/join/ZXCVBN45").status == 405)  // the preview's path: GET only
            #expect(await h.send(.get, "/v1/join/ASDFGH67").status == 404)  // the preview of an unknown code
            #expect(await h.send(.get, "/v1/invitations/\(token)/accept/extra").status == 404)
        }
        #expect(!log.contains(token))
        #expect(!log.contains("QWERTY23"))
        #expect(!log.contains("ZXCVBN45"))
        #expect(!log.contains("ASDFGH67"))
        #expect(log.contains("/v1/join/{code}"))
        #expect(log.contains("/v1/invitations/{ref}/accept"))
        #expect(log.contains("/join/{code}"))
    }

    @Test("the masking patterns")
    func patterns() {
        #expect(LoggedPath.masked("/v1/invitations") == "/v1/invitations")
        #expect(LoggedPath.masked("/v1/invitations/abc") == "/v1/invitations/{ref}")
        #expect(LoggedPath.masked("/v1/invitations/abc/decline") == "/v1/invitations/{ref}/decline")
        #expect(LoggedPath.masked("/v1/invitations/abc/other/x") == "/v1/invitations/{ref}/…")
        #expect(LoggedPath.masked("/JOIN/abc") == "/join/{code}")
        #expect(LoggedPath.masked("/v1/me") == "/v1/me")
        #expect(LoggedPath.masked("/v1/groups/g1/members") == "/v1/groups/g1/members")
        #expect(LoggedPath.masked("//Invite/t0k3n/x") == "/invite/{token}")
        #expect(LoggedPath.masked("/V1/JOIN/abc") == "/v1/join/{code}")
        #expect(LoggedPath.masked("/v1/joined/abc") == "/v1/joined/abc")
        #expect(LoggedPath.masked("/joins/abc") == "/joins/abc")
        #expect(LoggedPath.masked("/healthz") == "/healthz")
    }
}
