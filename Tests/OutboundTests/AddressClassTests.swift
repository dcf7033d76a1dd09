import Outbound
import Testing

/// The SSRF rule's address classification (docs/notifications.md, "SSRF"): every address the
/// client connects to is classified, and every class but `global` is refused by default.
@Suite("AddressClass: which destinations the SSRF rule refuses")
struct AddressClassTests {
    @Test(
        arguments: [
            ("0.0.0.0", AddressClass.unspecified), ("0.1.2.3", .unspecified),
            ("127.0.0.1", .loopback), ("127.255.255.254", .loopback),
            ("10.0.0.1", .privateUse), ("10.255.255.255", .privateUse),
            ("172.16.0.1", .privateUse), ("172.31.255.255", .privateUse), ("172.15.255.255", .global), ("172.32.0.0", .global),
            ("192.168.1.1", .privateUse), ("192.169.0.1", .global),
            ("100.64.0.0", .sharedAddressSpace), ("100.127.255.255", .sharedAddressSpace), ("100.63.255.255", .global),
            ("100.128.0.0", .global),
            ("169.254.169.254", .linkLocal), ("169.253.0.1", .global),
            ("224.0.0.1", .multicast), ("239.255.255.255", .multicast),
            ("240.0.0.1", .reserved), ("255.255.255.255", .reserved),
            ("8.8.8.8", .global), ("17.253.144.10", .global), ("223.255.255.255", .global),
            // IANA IPv4 Special-Purpose Address Registry: documentation, benchmarking, 6to4 relay,
            // IETF protocol assignments (with their globally reachable exceptions).
            ("192.0.2.1", .documentation), ("198.51.100.7", .documentation), ("203.0.113.255", .documentation),
            ("192.0.1.255", .global), ("192.0.3.0", .global), ("203.0.112.255", .global), ("203.0.114.0", .global),
            ("198.18.0.0", .benchmarking), ("198.19.255.255", .benchmarking), ("198.17.255.255", .global),
            ("198.20.0.0", .global),
            ("192.88.99.1", .transition), ("192.88.98.255", .global),
            ("192.0.0.8", .reserved), ("192.0.0.170", .reserved), ("192.0.0.9", .global), ("192.0.0.10", .global),
        ])
    func ipv4(text: String, expected: AddressClass) throws {
        let address = try #require(IPAddress(text))
        #expect(AddressClass.of(address) == expected)
        #expect(address.description == text)
    }

    @Test(
        arguments: [
            ("::", AddressClass.unspecified), ("::1", .loopback), ("::2", .reserved), ("::10.0.0.1", .reserved),
            ("fc00::1", .privateUse), ("fdff:ffff::1", .privateUse), ("fec0::1", .privateUse), ("feff::1", .privateUse),
            ("fe80::1", .linkLocal), ("febf:ffff::1", .linkLocal), ("fe7f::1", .reserved),
            ("ff02::1", .multicast), ("ff0e::1", .multicast),
            ("2001:4860:4860::8888", .global), ("2a00:1450:4001::1", .global), ("fb00::1", .reserved),
            // Only 2000::/3 is allocated global unicast (IANA IPv6 Address Space).
            ("4000::1", .reserved), ("1fff:ffff::1", .reserved), ("3ffe::1", .global), ("100::1", .reserved),
            // IANA IPv6 Special-Purpose Address Registry.
            ("2001:db8::1", .documentation), ("3fff::1", .documentation), ("3fff:fff::1", .documentation),
            ("3fff:1000::1", .global), ("2001:2::1", .benchmarking), ("2001:2:1::1", .reserved),
            ("2002:7f00:1::1", .transition), ("2002:808:808::1", .transition), ("2003::1", .global),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", .transition), ("2001:1::1", .global), ("2001:1::4", .reserved),
            ("2001:3::1", .global), ("2001:20::1", .global), ("2001:10::1", .reserved), ("2001:200::1", .global),
            ("5f00::1", .reserved),
            // IPv4-translated (RFC 2765) is not IPv4-mapped: refused whatever it carries.
            ("::ffff:0:7f00:1", .transition), ("::ffff:0:808:808", .transition),
            // IPv4-mapped forms take their IPv4 address's class.
            ("::ffff:127.0.0.1", .loopback), ("::ffff:10.1.2.3", .privateUse), ("::ffff:169.254.169.254", .linkLocal),
            ("::ffff:100.64.0.1", .sharedAddressSpace), ("::ffff:0.0.0.0", .unspecified), ("::ffff:8.8.8.8", .global),
            // NAT64 (RFC 6052) reaches the embedded IPv4 address; the local-use prefix is private.
            ("64:ff9b::7f00:1", .loopback), ("64:ff9b::a00:1", .privateUse), ("64:ff9b::808:808", .global),
            ("64:ff9b:1::1", .privateUse),
        ])
    func ipv6(text: String, expected: AddressClass) throws {
        let address = try #require(IPAddress(text))
        #expect(AddressClass.of(address) == expected)
    }

    @Test func onlyGlobalIsAllowedByDefaultAndEverythingWhenPrivateIsAllowed() throws {
        let strict = DestinationPolicy()
        let open = DestinationPolicy(allowPrivateDestinations: true)
        for text in [
            "127.0.0.1", "::1", "10.0.0.1", "fd00::1", "169.254.169.254", "fe80::1", "0.0.0.0", "::", "224.0.0.1",
            "100.64.0.1", "::ffff:127.0.0.1", "::ffff:192.168.0.1", "::ffff:0:127.0.0.1", "2002:7f00:1::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2", "192.0.2.1", "198.51.100.1", "203.0.113.1", "198.18.0.1",
            "2001:db8::1", "::ffff:198.18.0.1", "64:ff9b::c000:201",
        ] {
            let address = try #require(IPAddress(text))
            #expect(!strict.allows(address), "\(text)")
            #expect(open.allows(address), "\(text)")
        }
        for text in ["8.8.8.8", "2001:4860:4860::8888", "::ffff:1.1.1.1"] {
            #expect(strict.allows(try #require(IPAddress(text))), "\(text)")
        }
    }

    @Test func textThatIsNoAddressIsNotParsed() {
        for text in ["", "localhost", "1.2.3", "256.0.0.1", "1.2.3.4.5", "::g", "example.com"] {
            #expect(IPAddress(text) == nil, "\(text)")
        }
    }
}
