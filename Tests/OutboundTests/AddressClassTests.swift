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
            ("fe80::1", .linkLocal), ("febf:ffff::1", .linkLocal), ("fe7f::1", .global),
            ("ff02::1", .multicast), ("ff0e::1", .multicast),
            ("2001:4860:4860::8888", .global), ("2a00:1450:4001::1", .global), ("fb00::1", .global),
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
            "100.64.0.1", "::ffff:127.0.0.1", "::ffff:192.168.0.1",
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
