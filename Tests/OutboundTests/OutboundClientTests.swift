import Foundation
import Outbound
import TestSupport
import Testing

/// The outbound client against a real HTTP/2 + TLS server on loopback (hypercorn, a private test
/// CA): protocols, limits, errors, the SSRF rule, concurrency and shutdown.
@Suite("OutboundClient against a real HTTPS server")
struct OutboundClientTests {
    @Test func postOverHTTP2WithTheTestCA() async throws {
        let server = try await EchoServer.start()
        let client = server.client()
        defer { client.close() }
        let request = OutboundRequest(
            method: .post, url: server.https("/echo"),
            headers: [HTTPField(name: "Content-Type", value: "application/json"), HTTPField(name: "X-Chronir", value: "1")],
            body: Array(#"{"hello":"world"}"#.utf8))
        let response = try await client.send(request)
        #expect(response.status == 200)
        #expect(response.httpVersion == .http2)
        #expect(response.headers.value(of: "content-type") == "application/json")
        let echo = try Echo(response)
        #expect(echo.http_version == "2")
        #expect(echo.method == "POST")
        #expect(echo.body == #"{"hello":"world"}"#)
        #expect(echo.header("x-chronir") == ["1"])
        #expect(echo.header("content-type") == ["application/json"])
        #expect(echo.header("expect") == [])
    }

    @Test func noFormContentTypeIsAddedAndOtherMethodsCarryTheirBody() async throws {
        let server = try await EchoServer.start()
        let client = server.client()
        defer { client.close() }
        let put = try Echo(await client.send(OutboundRequest(method: .put, url: server.https("/echo"), body: Array("abc".utf8))))
        #expect(put.method == "PUT")
        #expect(put.body == "abc")
        #expect(put.header("content-type") == [])
        #expect(put.header("content-length") == ["3"])
        let post = try Echo(await client.send(OutboundRequest(method: .post, url: server.https("/echo"))))
        #expect(post.method == "POST")
        #expect(post.header("content-type") == [])
        let delete = try Echo(await client.send(OutboundRequest(method: .delete, url: server.https("/echo"))))
        #expect(delete.method == "DELETE")
        let head = try await client.send(OutboundRequest(method: .head, url: server.https("/echo")))
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
    }

    @Test func http1WhenAsked() async throws {
        let server = try await EchoServer.start()
        let client = server.client()
        defer { client.close() }
        let response = try await client.send(OutboundRequest(url: server.https("/echo"), httpVersion: .http1_1))
        #expect(response.httpVersion == .http1_1)
        #expect(try Echo(response).http_version == "1.1")
    }

    @Test func http1WhenTheServerOffersNoHTTP2() async throws {
        let server = try await EchoServer.start(http1Only: true)
        let client = server.client()
        defer { client.close() }
        let response = try await client.send(OutboundRequest(url: server.https("/echo")))
        #expect(response.httpVersion == .http1_1)
        #expect(try Echo(response).http_version == "1.1")
    }

    @Test func plainHTTPOnlyWhenThePolicyAllowsItAndHTTP2ByPriorKnowledge() async throws {
        let server = try await EchoServer.start()
        let strict = server.client()
        defer { strict.close() }
        let refused = await failure(strict, OutboundRequest(url: server.http("/echo")))
        #expect(refused == .destinationRefused(.scheme("http")))

        let plain = server.client(allowPlainHTTP: true)
        defer { plain.close() }
        let http1 = try await plain.send(OutboundRequest(url: server.http("/echo")))
        #expect(http1.httpVersion == .http1_1)
        #expect(try Echo(http1).http_version == "1.1")
        let h2c = try await plain.send(OutboundRequest(url: server.http("/echo"), httpVersion: .http2PriorKnowledge))
        #expect(h2c.httpVersion == .http2)
        #expect(try Echo(h2c).http_version == "2")

        let ftp = await failure(plain, OutboundRequest(url: "ftp://127.0.0.1:\(server.plainPort)/"))
        #expect(ftp == .destinationRefused(.scheme("ftp")))
    }

    @Test func statusAndHeadersOfAnErrorResponseComeThrough() async throws {
        let server = try await EchoServer.start()
        let client = server.client()
        defer { client.close() }
        let response = try await client.send(OutboundRequest(url: server.https("/status/429?retry_after=7")))
        #expect(response.status == 429)
        #expect(response.headers.value(of: "Retry-After") == "7")
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"status": 429}"#)
        let gone = try await client.send(OutboundRequest(method: .post, url: server.https("/status/410"), body: [1]))
        #expect(gone.status == 410)
        #expect(gone.headers.value(of: "retry-after") == nil)
    }

    @Test func theBodyLimitIsExact() async throws {
        let server = try await EchoServer.start()
        var limits = OutboundLimits()
        limits.maxResponseBodyBytes = 1_024
        let client = server.client(limits: limits)
        defer { client.close() }
        for stream in ["0", "1"] {  // with Content-Length (checked before reading) and without
            let atLimit = try await client.send(OutboundRequest(url: server.https("/bytes?n=1024&stream=\(stream)")))
            #expect(atLimit.body.count == 1_024)
            let over = await failure(client, OutboundRequest(url: server.https("/bytes?n=1025&stream=\(stream)")))
            #expect(over == .responseTooLarge(limitBytes: 1_024), "stream=\(stream)")
            let far = await failure(client, OutboundRequest(url: server.https("/bytes?n=200000&stream=\(stream)")))
            #expect(far == .responseTooLarge(limitBytes: 1_024), "stream=\(stream)")
        }
        // The default is 64 KiB.
        let client64 = server.client()
        defer { client64.close() }
        #expect(try await client64.send(OutboundRequest(url: server.https("/bytes?n=65536"))).body.count == 65_536)
        let over = await failure(client64, OutboundRequest(url: server.https("/bytes?n=65537&stream=1")))
        #expect(over == .responseTooLarge(limitBytes: 65_536))
    }

    @Test func theHeadLimitHolds() async throws {
        let server = try await EchoServer.start()
        var limits = OutboundLimits()
        limits.maxResponseHeaderBytes = 512
        let client = server.client(limits: limits)
        defer { client.close() }
        #expect(try await client.send(OutboundRequest(url: server.https("/status/503?retry_after=1"))).status == 503)
        let long = String(repeating: "9", count: 600)
        let over = await failure(client, OutboundRequest(url: server.https("/status/503?retry_after=\(long)")))
        #expect(over == .responseTooLarge(limitBytes: 512))
    }

    @Test func aSlowServerTimesOut() async throws {
        let server = try await EchoServer.start()
        let client = server.client()
        defer { client.close() }
        let error = await failure(client, OutboundRequest(url: server.https("/slow?seconds=60"), timeout: .milliseconds(300)))
        #expect(error == .timeout)
        // The client still works afterwards.
        #expect(try await client.send(OutboundRequest(url: server.https("/echo"))).status == 200)
    }

    @Test func aCertificateFromAnotherCAIsATLSError() async throws {
        let server = try await EchoServer.start()
        let stranger = try await blocking { try TestCertificateAuthority(commonName: "Someone Else") }
        let client = OutboundClient(
            configuration: .init(policy: DestinationPolicy(allowPrivateDestinations: true), caFile: stranger.certificatePath))
        defer { client.close() }
        let error = await failure(client, OutboundRequest(url: server.https("/echo")))
        guard case .tls = error else {
            Issue.record("expected a TLS error, got \(String(describing: error))")
            return
        }
        // And the system bundle does not know the test CA either.
        let system = OutboundClient(configuration: .init(policy: DestinationPolicy(allowPrivateDestinations: true)))
        defer { system.close() }
        let systemError = await failure(system, OutboundRequest(url: server.https("/echo")))
        guard case .tls = systemError else {
            Issue.record("expected a TLS error, got \(String(describing: systemError))")
            return
        }
    }

    @Test func aCertificateForAnotherNameIsATLSError() async throws {
        let server = try await EchoServer.start(serverNames: ["DNS:push.example.com"])
        let client = server.client()
        defer { client.close() }
        let error = await failure(client, OutboundRequest(url: server.https("/echo")))
        guard case .tls = error else {
            Issue.record("expected a TLS error (host name), got \(String(describing: error))")
            return
        }
    }

    @Test func loopbackIsRefusedAfterDNSUnlessPrivateDestinationsAreAllowed() async throws {
        let server = try await EchoServer.start()
        let strict = OutboundClient(configuration: .init(caFile: server.authority.certificatePath))
        defer { strict.close() }
        let byAddress = await failure(strict, OutboundRequest(url: server.https("/echo")))
        #expect(byAddress == .destinationRefused(.address(IPAddress("127.0.0.1")!, .loopback)))
        // A name is resolved first; what it resolves to is refused (127.0.0.1 or ::1).
        let byName = await failure(strict, OutboundRequest(url: server.https("/echo", host: "localhost")))
        guard case .destinationRefused(.address(_, .loopback)) = byName else {
            Issue.record("expected a refused loopback address, got \(String(describing: byName))")
            return
        }
        let mapped = await failure(strict, OutboundRequest(url: "https://[::ffff:127.0.0.1]:\(server.tlsPort)/echo"))
        #expect(mapped == .destinationRefused(.address(IPAddress("::ffff:127.0.0.1")!, .loopback)))

        let open = server.client()
        defer { open.close() }
        #expect(try await open.send(OutboundRequest(url: server.https("/echo"))).status == 200)
        #expect(try await open.send(OutboundRequest(url: server.https("/echo", host: "localhost"))).status == 200)
    }

    @Test func fiftyConcurrentRequestsShareOneHTTP2Connection() async throws {
        let server = try await EchoServer.start()
        let client = server.client()
        defer { client.close() }
        let responses = try await withThrowingTaskGroup(of: OutboundResponse.self) { group in
            for index in 0..<50 {
                group.addTask {
                    try await client.send(OutboundRequest(method: .post, url: server.https("/echo"), body: Array("\(index)".utf8)))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(responses.count == 50)
        let echoes = try responses.map(Echo.init)
        #expect(Set(echoes.map(\.body)) == Set((0..<50).map { "\($0)" }))
        #expect(echoes.allSatisfy { $0.http_version == "2" })
        // The server saw one connection, and curl opened one.
        #expect(Set(echoes.map(\.client_port)).count == 1)
        #expect(responses.map(\.newConnections).reduce(0, +) == 1)
        // A later request reuses it.
        let again = try await client.send(OutboundRequest(url: server.https("/echo")))
        #expect(again.newConnections == 0)
        #expect(try Echo(again).client_port == echoes[0].client_port)
    }

    @Test func http1ConnectionsAreReusedToo() async throws {
        let server = try await EchoServer.start()
        let client = server.client()
        defer { client.close() }
        let first = try await client.send(OutboundRequest(url: server.https("/echo"), httpVersion: .http1_1))
        let second = try await client.send(OutboundRequest(url: server.https("/echo"), httpVersion: .http1_1))
        #expect(first.newConnections == 1)
        #expect(second.newConnections == 0)
        #expect(try Echo(first).client_port == Echo(second).client_port)
    }

    /// Every request on a new connection, half of them through DNS (curl's resolver thread wakes it
    /// through a socket pair it also asks to be watched): descriptor numbers are reused at once
    /// after curl closes them. `SocketWatch` watches private duplicates so that a source can never
    /// sit on a reused number; this exercises that path (with sources on curl's own numbers it
    /// also passed on this machine's libdispatch — the duplicate is a guarantee, not a fix for a
    /// failure seen).
    @Test func descriptorsReusedAfterEachConnectionDoNotStallTransfers() async throws {
        let server = try await EchoServer.start()
        let client = server.client()
        defer { client.close() }
        for index in 0..<40 {
            let request = OutboundRequest(
                url: server.https("/echo", host: index.isMultiple(of: 2) ? "127.0.0.1" : "localhost"),
                headers: [HTTPField(name: "Connection", value: "close")], timeout: .seconds(10), httpVersion: .http1_1)
            let response = try await client.send(request)
            #expect(response.newConnections == 1)
            #expect(try Echo(response).http_version == "1.1")
        }
    }

    @Test func closeFailsTransfersInFlightAndLaterSends() async throws {
        let server = try await EchoServer.start()
        let client = server.client()
        let slow = (0..<3).map { _ in
            Task { await failure(client, OutboundRequest(url: server.https("/slow?seconds=60"))) }
        }
        #expect(await eventually { client.load.running == 3 })
        client.close()
        for task in slow { #expect(await task.value == .closed) }
        let late = await failure(client, OutboundRequest(url: server.https("/echo")))
        #expect(late == .closed)
        client.close()  // idempotent
    }

    @Test func theQueueIsBounded() async throws {
        let server = try await EchoServer.start()
        var limits = OutboundLimits()
        limits.maxConcurrentTransfers = 1
        limits.maxQueuedTransfers = 1
        let client = server.client(limits: limits)
        defer { client.close() }
        let running = Task { await failure(client, OutboundRequest(url: server.https("/slow?seconds=60"))) }
        #expect(await eventually { client.load.running == 1 })
        let queued = Task { try await client.send(OutboundRequest(url: server.https("/echo"))) }
        #expect(await eventually { client.load.waiting == 1 })
        let refused = await failure(client, OutboundRequest(url: server.https("/echo")))
        #expect(refused == .tooManyQueued)
        // Cancelling the running one lets the queued one run.
        running.cancel()
        #expect(await running.value == .cancelled)
        #expect(try await queued.value.status == 200)
    }

    @Test func cancellingTheTaskStopsTheTransfer() async throws {
        let server = try await EchoServer.start()
        let client = server.client()
        defer { client.close() }
        let task = Task { await failure(client, OutboundRequest(url: server.https("/slow?seconds=60"))) }
        #expect(await eventually { client.load.running == 1 })
        task.cancel()
        #expect(await task.value == .cancelled)
        #expect(client.load.running == 0)
    }

    @Test func invalidRequestsAreRefusedBeforeSending() async throws {
        let server = try await EchoServer.start()
        let client = server.client()
        defer { client.close() }
        let split = await failure(
            client, OutboundRequest(url: server.https("/echo"), headers: [HTTPField(name: "X-A", value: "1\r\nX-Injected: 2")]))
        guard case .invalidRequest = split else {
            Issue.record("expected invalidRequest, got \(String(describing: split))")
            return
        }
        let badName = await failure(client, OutboundRequest(url: server.https("/echo"), headers: [HTTPField(name: "X A", value: "1")]))
        guard case .invalidRequest = badName else {
            Issue.record("expected invalidRequest, got \(String(describing: badName))")
            return
        }
        let noURL = await failure(client, OutboundRequest(url: "not a url"))
        guard case .invalidRequest = noURL else {
            Issue.record("expected invalidRequest, got \(String(describing: noURL))")
            return
        }
    }

    @Test func aRefusedConnectionIsConnectFailed() async throws {
        let server = try await EchoServer.start()
        let port = server.plainPort
        server.service.stop()
        let client = server.client()
        defer { client.close() }
        let error = await failure(client, OutboundRequest(url: "https://127.0.0.1:\(port)/"))
        guard case .connectFailed = error else {
            Issue.record("expected connectFailed, got \(String(describing: error))")
            return
        }
    }
}
