import IPAddresses
import Testing

@Suite("Client network — the key failed attempts are counted under")
struct ClientNetworkTests {
    @Test("IPv4 is itself; IPv6 is its /64 in any spelling; IPv4-mapped IPv6 is the IPv4 address")
    func keys() {
        #expect(ClientNetwork.rateLimitKey("203.0.113.7") == "203.0.113.7")
        #expect(ClientNetwork.rateLimitKey("2001:db8:1:2:aa::1") == "2001:db8:1:2::/64")
        #expect(ClientNetwork.rateLimitKey("2001:0db8:0001:0002:ffff:ffff:ffff:fffe") == "2001:db8:1:2::/64")
        #expect(ClientNetwork.rateLimitKey("2001:db8::1") == "2001:db8:0:0::/64")
        #expect(ClientNetwork.rateLimitKey("fe80::1%eth0") == "fe80:0:0:0::/64")
        #expect(ClientNetwork.rateLimitKey("::1") == "0:0:0:0::/64")
        #expect(ClientNetwork.rateLimitKey("::ffff:203.0.113.7") == "203.0.113.7")
        #expect(ClientNetwork.rateLimitKey("64:ff9b::203.0.113.7") == "64:ff9b:0:0::/64")
    }

    @Test("text that is no IPv6 address is kept as it is")
    func malformed() {
        for text in ["unknown", "1:2:3", "1::2::3", "12345::1", "1:2:3:4:5:6:7:8:9", "::ffff:1.2.3", "g::1"] {
            #expect(ClientNetwork.rateLimitKey(text) == text, "\(text)")
        }
    }

    @Test("the coarse network shown for a session: IPv4 /24, IPv6 /48, IPv4-mapped as IPv4; not an address → nil")
    func coarse() {
        #expect(ClientNetwork.coarse("203.0.113.7") == "203.0.113.0/24")
        #expect(ClientNetwork.coarse("0.0.0.0") == "0.0.0.0/24")
        #expect(ClientNetwork.coarse("255.255.255.255") == "255.255.255.0/24")
        #expect(ClientNetwork.coarse("2001:db8:1:2:aa::1") == "2001:db8:1::/48")
        #expect(ClientNetwork.coarse("2001:0db8:ffff:ffff::1") == "2001:db8:ffff::/48")
        #expect(ClientNetwork.coarse("2001:db8::1") == "2001:db8:0::/48")
        #expect(ClientNetwork.coarse("fe80::1%eth0") == "fe80:0:0::/48")
        #expect(ClientNetwork.coarse("::ffff:203.0.113.7") == "203.0.113.0/24")
        for text in ["unknown", "", "1::2::3", "203.0.113", "::ffff:1.2.3"] { #expect(ClientNetwork.coarse(text) == nil, "\(text)") }
    }
}
