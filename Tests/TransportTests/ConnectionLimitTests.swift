import TestSupport
import Testing
import Transport

/// one client must not take every connection slot; a full server still answers
/// `/healthz` and keeps serving the connections it has.
@Suite("Connection limits per client address")
struct ConnectionLimitTests {
    @Test func oneAddressHoldsAtMostItsShareAndOthersAreStillServed() throws {
        let events = EventLog()
        try withHTTPServer(
            {
                $0.maxConnections = 6  // per address: the default half, 3
                $0.healthCheckPath = "/healthz"
            }, events: events
        ) { server, port, _ in
            #expect(server.configuration.effectiveMaxConnectionsPerAddress == 3)
            // Three idle keep-alive sockets from one address: its whole share.
            let mine = try (0..<3).map { _ in try LoopbackClient(port: port, source: "127.0.0.1") }
            for client in mine { #expect(try client.request("GET", "/").status == 200) }

            let fourth = try LoopbackClient(port: port, source: "127.0.0.1")
            let refused = try fourth.request("GET", "/")
            #expect(refused.status == 429)
            #expect(header("retry-after", refused) == "5")
            #expect(header("connection", refused) == "close")
            #expect(fourth.waitForClose())
            #expect(events.count { if case .addressConnectionLimitReached(3, "127.0.0.1") = $0 { true } else { false } } == 1)

            // Another address still gets in, and fills the rest of the server.
            let others = try (0..<3).map { i in try LoopbackClient(port: port, source: "127.0.0.\(2 + i % 2)") }
            for client in others { #expect(try client.request("GET", "/other").status == 200) }
            #expect(server.openConnectionCount == 6)

            // Full: a new client is refused with 503, but the health check is answered.
            let late = try LoopbackClient(port: port, source: "127.0.0.4")
            #expect(try late.request("GET", "/").status == 503)
            let probe = try LoopbackClient(port: port, source: "127.0.0.4")
            let health = try probe.request("GET", "/healthz")
            #expect(health.status == 200)
            #expect(text(health.body) == #"{"status":"ok"}"#)
            #expect(probe.waitForClose())

            // Established clients keep working.
            for client in mine + others { #expect(try client.request("GET", "/again").status == 200) }

            // A closed socket gives its slot back to its address.
            mine[0].close()
            #expect(eventually { server.openConnectionCount == 5 })
            let back = try LoopbackClient(port: port, source: "127.0.0.1")
            #expect(try back.request("GET", "/back").status == 200)
        }
    }

    @Test func theLimitIsExactAndConfigurable() throws {
        try withHTTPServer({ $0.maxConnectionsPerAddress = 2 }) { server, port, _ in
            let held = try (0..<2).map { _ in try LoopbackClient(port: port) }
            for client in held { #expect(try client.request("GET", "/").status == 200) }
            // No health path configured: the refusal comes at once, before any request.
            let third = try LoopbackClient(port: port)
            #expect(try third.readResponse().status == 429)
            #expect(server.openConnectionCount == 2)
        }
    }

    @Test func trustedProxiesAreExempt() throws {
        try withHTTPServer({
            $0.maxConnectionsPerAddress = 1
            $0.perAddressLimitExempt = ["127.0.0.1"]
        }) { _, port, _ in
            let proxied = try (0..<3).map { _ in try LoopbackClient(port: port, source: "127.0.0.1") }
            for client in proxied { #expect(try client.request("GET", "/").status == 200) }
            let direct = try LoopbackClient(port: port, source: "127.0.0.2")
            #expect(try direct.request("GET", "/").status == 200)
            let second = try LoopbackClient(port: port, source: "127.0.0.2")
            #expect(try second.readResponse().status == 429)
        }
    }

    @Test func aRefusedConnectionAnswersOnlyTheExactHealthCheck() throws {
        try withHTTPServer({
            $0.maxConnections = 1
            $0.healthCheckPath = "/healthz"
        }) { _, port, _ in
            let holder = try LoopbackClient(port: port, source: "127.0.0.2")
            #expect(try holder.request("GET", "/").status == 200)
            for target in ["/healthzz", "/health", "/healthz?x=1"] {
                let client = try LoopbackClient(port: port)
                #expect(try client.request("GET", target).status == 503, "\(target)")
            }
            let post = try LoopbackClient(port: port)
            #expect(try post.request("POST", "/healthz").status == 503)
            // Silence until the peer closes its side: the refusal, not a wait for the deadline.
            let silent = try LoopbackClient(port: port)
            silent.shutdownWrite()
            #expect(try silent.readResponse().status == 503)
        }
    }

    @Test func peerNetworksGroupIPv6ByPrefix64() {
        #expect(PeerNetwork.key(of: "203.0.113.7") == "203.0.113.7")
        #expect(PeerNetwork.key(of: "2001:db8:1:2:aa::1") == "2001:db8:1:2::/64")
        #expect(PeerNetwork.key(of: "2001:db8:1:2:ffff:ffff:ffff:ffff") == "2001:db8:1:2::/64")
        #expect(PeerNetwork.key(of: "2001:db8:1:3::1") == "2001:db8:1:3::/64")
        #expect(PeerNetwork.key(of: "::ffff:203.0.113.7") == "203.0.113.7")
        #expect(PeerNetwork.key(of: "::1") == "0:0:0:0::/64")
    }
}
