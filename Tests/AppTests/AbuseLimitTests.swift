import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing
import Transport
import Wire

@testable import App

/// registration is rate-limited per client network and in total, and password hashing
/// has its own bounded pool — it never queues in front of static files, token checks or plain reads.
@Suite("Registration limits and the hashing pool")
struct AbuseLimitTests {
    static func registration(_ email: String) -> String {
        #"{"email":"\#(email)","password":"correct horse","display_name":"R"}"#
    }

    @Test func theNextRegistrationPastTheLimitGets429WhileOthersStillRegister() async throws {
        let h = try AppHarness { $0.registrationLimits = RegistrationLimits(perNetworkPerHour: 3, totalPerHour: 8) }
        func register(_ email: String, from address: String) async -> Reply {
            await h.send(.post, "/v1/auth/register", json: Self.registration(email), remoteAddress: address)
        }
        for i in 1...3 { #expect(await register("a\(i)@example.com", from: "203.0.113.1").status == 201) }
        let refused = await register("a4@example.com", from: "203.0.113.1")
        #expect(refused.status == 429)
        #expect(refused.errorName == "RATE_LIMITED")
        #expect(refused.header("Retry-After") == "3600")  // all three in this millisecond: a full hour
        // A bad body is answered for what it is: validation comes before the limit.
        let invalid = await h.send(.post, "/v1/auth/register", json: "{}", remoteAddress: "203.0.113.1")
        #expect(invalid.status == 400 || invalid.status == 422, "\(invalid.text)")

        // Another address still registers; an IPv6 /64 is one client however many addresses it uses.
        #expect(await register("b1@example.com", from: "203.0.113.2").status == 201)
        for i in 1...3 { #expect(await register("c\(i)@example.com", from: "2001:db8:1:2::\(i)").status == 201) }
        #expect(await register("c4@example.com", from: "2001:db8:1:2:ffff::4").status == 429)

        // The total backstop: 7 so far, one more, then nobody.
        #expect(await register("b2@example.com", from: "203.0.113.2").status == 201)
        let backstop = await register("d1@example.com", from: "198.51.100.9")
        #expect(backstop.status == 429)
        #expect(backstop.header("Retry-After") != nil)

        // Later the window has room again (a sliding hour, on the injected clock).
        h.clock.advance(by: RegistrationLimits.windowMilliseconds)
        #expect(await register("a4@example.com", from: "203.0.113.1").status == 201)
        #expect(await register("d1@example.com", from: "198.51.100.9").status == 201)
    }

    @Test func aFullHashingQueueAnswers503AndNeverDelaysStaticFilesOrReads() async throws {
        let dir = TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.path + "/root", withIntermediateDirectories: true)
        try Data("<h1>home</h1>".utf8).write(to: URL(fileURLWithPath: dir.path + "/root/index.html"))
        let hashing = WorkerPool(width: 1, maxQueued: 1)
        let h = try AppHarness(publicDirectory: dir.path + "/root", hashing: hashing)
        let (token, _) = try await h.register("reader@example.com")

        // One hash running and one waiting, both blocked until the gate opens: the pool is full.
        let gate = DispatchSemaphore(value: 0)
        let blockers = (0..<2).map { _ in Task { try await hashing.run { gate.wait() } } }
        // The blockers are tasks: under the whole suite on 2 cores they may wait a while for a
        // cooperative thread, hence the long bound (a bound, not a timing).
        #expect(await eventually(timeout: LoopbackClient.hangBound) { hashing.pendingJobs == 2 })

        // Static files, token checks and plain reads do not wait for it.
        let served = DispatchSemaphore(value: 0)
        let replies = Mutex<[Int]>([])
        Task {
            for (path, token) in [("/index.html", nil), ("/v1/me", token), ("/healthz", nil), ("/readyz", nil)] {
                let reply = await h.send(.get, path, token: token)
                replies.withLock { $0.append(reply.status) }
            }
            served.signal()
        }
        // A guard against hanging (it fails only if they wait for the gate), not a timing assertion.
        let finished = try await blocking { served.wait(timeout: .now() + 30) == .success }
        #expect(finished)
        #expect(replies.withLock { $0 } == [200, 200, 200, 200])

        // Hashing past the queue is refused at once: 503 with Retry-After, not a wait.
        let busy = await h.send(.post, "/v1/auth/register", json: Self.registration("late@example.com"))
        #expect(busy.status == 503)
        #expect(busy.errorName == "SERVICE_UNAVAILABLE")
        #expect(busy.header("Retry-After") == "1")
        let login = await h.send(.post, "/v1/auth/login", json: #"{"email":"reader@example.com","password":"x"}"#)
        #expect(login.status == 503)

        gate.signal()
        gate.signal()
        for blocker in blockers { try await blocker.value }
        #expect(hashing.pendingJobs == 0)
        #expect(await h.send(.post, "/v1/auth/register", json: Self.registration("late@example.com")).status == 201)
    }

    @Test func aRegistrationRefusedForAFullQueueKeepsItsBudget() async throws {
        let hashing = WorkerPool(width: 1, maxQueued: 0)
        let h = try AppHarness(hashing: hashing) {
            $0.registrationLimits = RegistrationLimits(perNetworkPerHour: 1, totalPerHour: 1)
        }
        let gate = DispatchSemaphore(value: 0)
        let blocker = Task { try await hashing.run { gate.wait() } }
        #expect(await eventually(timeout: LoopbackClient.hangBound) { hashing.pendingJobs == 1 })
        #expect(await h.send(.post, "/v1/auth/register", json: Self.registration("x@example.com")).status == 503)
        gate.signal()
        try await blocker.value
        #expect(await h.send(.post, "/v1/auth/register", json: Self.registration("x@example.com")).status == 201)
    }

    @Test func webSocketsPerClientBehindATrustedProxy() async throws {
        let h = try AppHarness(trustedProxies: ["127.0.0.1"]) { $0.maxWebSocketsPerAddress = 2 }
        defer { h.app.realtime.stop() }
        var configuration = ServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.loopCount = 2
        configuration.perAddressLimitExempt = ["127.0.0.1"]
        let server = HTTPServer(configuration: configuration, responder: h.app)
        let port = try server.start()
        defer { server.shutdown() }
        let quota = h.app.realtime.webSockets

        try await blocking {
            func open(_ client: String) throws -> WebSocketTestClient {
                try WebSocketTestClient(port: port, path: "/v1/realtime", extraHeaders: [("X-Forwarded-For", client)])
            }
            let held = try [open("198.51.100.7"), open("198.51.100.7")]
            for socket in held { #expect(socket.handshake.status == 101) }
            let third = try open("198.51.100.7")
            #expect(third.handshake.status == 429)
            #expect(LoopbackClient.value(of: "retry-after", in: third.handshake.headers) == "5")
            // Another client behind the same proxy is unaffected; a /64 counts as one client.
            let others = try ["198.51.100.8", "2001:db8::1", "2001:db8::2"].map(open)
            for socket in others { #expect(socket.handshake.status == 101) }
            #expect(try open("2001:db8::3").handshake.status == 429)

            // Closing a socket gives its slot back.
            held[0].connection.close()
            #expect(eventually { quota.count(clientAddress: "198.51.100.7") == 1 })
            #expect(try open("198.51.100.7").handshake.status == 101)
        }
    }
}
