import Testing
import Wire

@testable import App

@Suite("Client address behind trusted proxies")
struct ClientAddressTests {
    func headers(_ values: String...) -> HTTPHeaders {
        var h = HTTPHeaders()
        for v in values { h.add(name: "X-Forwarded-For", value: v) }
        return h
    }

    @Test("the right-most untrusted X-Forwarded-For entry, only when the peer is a trusted proxy")
    func resolve() {
        let trusted: Set<String> = ["127.0.0.1", "10.0.0.2"]
        #expect(ClientAddress.resolve(peer: "127.0.0.1", headers: headers("203.0.113.7"), trustedProxies: trusted) == "203.0.113.7")
        // A client-supplied entry on the left is ignored: the proxy appended the real peer.
        #expect(
            ClientAddress.resolve(peer: "127.0.0.1", headers: headers("1.2.3.4, 203.0.113.7"), trustedProxies: trusted)
                == "203.0.113.7")
        // A chain of trusted proxies is walked through; several header lines count as one list.
        #expect(
            ClientAddress.resolve(peer: "127.0.0.1", headers: headers("2001:db8::1", "10.0.0.2"), trustedProxies: trusted)
                == "2001:db8::1")
        // An untrusted peer cannot choose its address.
        #expect(ClientAddress.resolve(peer: "198.51.100.9", headers: headers("203.0.113.7"), trustedProxies: trusted) == "198.51.100.9")
        // No trusted proxies configured: the header means nothing.
        #expect(ClientAddress.resolve(peer: "127.0.0.1", headers: headers("203.0.113.7"), trustedProxies: []) == "127.0.0.1")
        // Malformed or missing: the peer.
        #expect(ClientAddress.resolve(peer: "127.0.0.1", headers: headers("evil, 203.0.113.7:443"), trustedProxies: trusted) == "127.0.0.1")
        #expect(ClientAddress.resolve(peer: "127.0.0.1", headers: HTTPHeaders(), trustedProxies: trusted) == "127.0.0.1")
        // Only trusted entries: the peer.
        #expect(ClientAddress.resolve(peer: "127.0.0.1", headers: headers("10.0.0.2"), trustedProxies: trusted) == "127.0.0.1")
    }

    @Test("past maxForwardedEntries from the right nothing is read")
    func bounded() {
        let trusted: Set<String> = ["127.0.0.1"]
        let padding = Array(repeating: "127.0.0.1", count: ClientAddress.maxForwardedEntries).joined(separator: ", ")
        #expect(
            ClientAddress.resolve(peer: "127.0.0.1", headers: headers("203.0.113.7, " + padding), trustedProxies: trusted) == "127.0.0.1")
        let within = Array(repeating: "127.0.0.1", count: ClientAddress.maxForwardedEntries - 1).joined(separator: ", ")
        #expect(
            ClientAddress.resolve(peer: "127.0.0.1", headers: headers("203.0.113.7, " + within), trustedProxies: trusted) == "203.0.113.7")
    }

    @Test("behind a trusted proxy the per-IP login limit counts each forwarded client on its own")
    func perClientLimits() async throws {
        let h = try AppHarness(trustedProxies: ["127.0.0.1"])
        func failedLogin(_ i: Int, from client: String) async -> Int {
            await h.send(
                .post, "/v1/auth/login", json: #"{"email":"nobody\#(i)@example.com","password":"wrong password"}"#,
                headers: [("X-Forwarded-For", client)]
            ).status
        }
        var statuses: [Int] = []
        for i in 0..<11 { statuses.append(await failedLogin(i, from: "203.0.113.7")) }
        #expect(statuses.prefix(10).allSatisfy { $0 == 401 })
        #expect(statuses.last == 429, "the 11th failure from one client is limited")
        #expect(await failedLogin(99, from: "203.0.113.8") == 401, "another client behind the same proxy is not")
    }
}
