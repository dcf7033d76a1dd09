/// What kind of destination an IP address is, for the SSRF rule (docs/notifications.md, "SSRF"):
/// every class but `global` is refused unless `DestinationPolicy.allowPrivateDestinations`.
///
/// The table is IANA's: the IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890; every block
/// whose "Globally Reachable" is False or N/A is refused, the few True exceptions inside a refused
/// block are global), the IPv4 multicast block, and the IPv6 Address Space registry — only
/// `2000::/3` is allocated global unicast, everything else is "Reserved by IETF" or special.
public enum AddressClass: Hashable, Sendable {
    /// Publicly routable unicast: the only class a push endpoint may resolve to.
    case global
    /// `0.0.0.0/8` ("this network", RFC 1122 §3.2.1.3) and `::` — Linux connects these to the host itself.
    case unspecified
    /// `127.0.0.0/8` (RFC 1122) and `::1`.
    case loopback
    /// RFC 1918 `10/8`, `172.16/12`, `192.168/16`; IPv6 unique-local `fc00::/7` (RFC 4193), deprecated
    /// site-local `fec0::/10`, and the local-use NAT64 prefix `64:ff9b:1::/48` (RFC 8215).
    case privateUse
    /// RFC 6598 shared address space `100.64/10` (carrier-grade NAT: inside a provider's network).
    case sharedAddressSpace
    /// `169.254/16` (RFC 3927, where cloud metadata services answer) and `fe80::/10`.
    case linkLocal
    /// `224/4` and `ff00::/8`.
    case multicast
    /// Documentation prefixes: TEST-NET-1/2/3 `192.0.2/24`, `198.51.100/24`, `203.0.113/24`
    /// (RFC 5737), `2001:db8::/32` (RFC 3849) and `3fff::/20` (RFC 9637). Never on the Internet.
    case documentation
    /// Benchmarking `198.18/15` (RFC 2544) and `2001:2::/48` (RFC 5180): lab networks.
    case benchmarking
    /// Transition forms a relay turns into another address: 6to4 `2002::/16` (RFC 3056) and its relay
    /// anycast `192.88.99/24` (RFC 7526), Teredo `2001::/32` (RFC 4380), and the IPv4-translated
    /// `::ffff:0:a.b.c.d` (RFC 2765). What they reach is not the address connected to, so they are refused.
    case transition
    /// Everything else not allocated for global unicast: `240/4` (RFC 1112) with the broadcast address
    /// `255.255.255.255`, IETF protocol assignments `192.0.0/24` and `2001::/23`, discard-only
    /// `100::/64`, ORCHID, SRv6 SIDs `5f00::/16`, the IPv4-compatible `::a.b.c.d` (RFC 4291 §2.5.5.1),
    /// and IPv6 outside `2000::/3`.
    case reserved

    /// Whether a connection to this class is refused when private destinations are not allowed.
    public var isRefusedByDefault: Bool { self != .global }

    /// The class of `address`: the most specific block of `specialPurpose` that holds it (else
    /// `global` for IPv4, `reserved` for IPv6 outside `2000::/3`). IPv6 forms that carry an IPv4
    /// address to be reached — IPv4-mapped `::ffff:a.b.c.d` (RFC 4291 §2.5.5.2) and the well-known
    /// NAT64 prefix `64:ff9b::/96` (RFC 6052) — take the class of that IPv4 address.
    public static func of(_ address: IPAddress) -> AddressClass {
        switch address {
        case .v4(let a, let b, let c, let d):
            return lookup([a, b, c, d], in: ipv4SpecialPurpose) ?? .global
        case .v6(let bytes):
            precondition(bytes.count == 16, "an IPv6 address has 16 bytes")
            if Block.v6([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], 96, .global).holds(bytes)
                || Block.v6([0x00, 0x64, 0xff, 0x9b], 96, .global).holds(bytes)
            {
                return lookup(Array(bytes[12..<16]), in: ipv4SpecialPurpose) ?? .global
            }
            return lookup(bytes, in: ipv6SpecialPurpose) ?? .reserved
        }
    }

    /// The class of the longest block holding `bytes`; nil when none does.
    private static func lookup(_ bytes: [UInt8], in table: [Block]) -> AddressClass? {
        table.filter { $0.holds(bytes) }.max { $0.length < $1.length }?.addressClass
    }

    /// One row of a registry: a prefix (its leading bytes; the rest zero) and length in bits.
    struct Block {
        var prefix: [UInt8]
        var length: Int
        var addressClass: AddressClass

        static func v4(_ prefix: [UInt8], _ length: Int, _ addressClass: AddressClass) -> Block {
            Block(prefix: prefix + [UInt8](repeating: 0, count: 4 - prefix.count), length: length, addressClass: addressClass)
        }

        static func v6(_ prefix: [UInt8], _ length: Int, _ addressClass: AddressClass) -> Block {
            Block(prefix: prefix + [UInt8](repeating: 0, count: 16 - prefix.count), length: length, addressClass: addressClass)
        }

        /// Whether the first `length` bits of `bytes` are the prefix's.
        func holds(_ bytes: [UInt8]) -> Bool {
            guard bytes.count == prefix.count else { return false }
            for index in 0..<prefix.count {
                let bits = min(8, max(0, length - index * 8))
                if bits == 0 { return true }
                let mask = UInt8(truncatingIfNeeded: 0xff << (8 - bits))
                if bytes[index] & mask != prefix[index] & mask { return false }
            }
            return true
        }
    }

    /// IANA IPv4 Special-Purpose Address Registry (and `224/4` multicast). Rows marked True there
    /// (PCP and TURN anycast, AS112, AMT) are `global` exceptions inside `192.0.0/24`.
    static let ipv4SpecialPurpose: [Block] = [
        .v4([0], 8, .unspecified),
        .v4([10], 8, .privateUse),
        .v4([100, 64], 10, .sharedAddressSpace),
        .v4([127], 8, .loopback),
        .v4([169, 254], 16, .linkLocal),
        .v4([172, 16], 12, .privateUse),
        .v4([192, 0, 0], 24, .reserved),  // IETF protocol assignments (DS-Lite, dummy, NAT64 discovery)
        .v4([192, 0, 0, 9], 32, .global),  // PCP anycast (RFC 7723)
        .v4([192, 0, 0, 10], 32, .global),  // TURN anycast (RFC 8155)
        .v4([192, 0, 2], 24, .documentation),
        .v4([192, 88, 99], 24, .transition),
        .v4([192, 168], 16, .privateUse),
        .v4([198, 18], 15, .benchmarking),
        .v4([198, 51, 100], 24, .documentation),
        .v4([203, 0, 113], 24, .documentation),
        .v4([224], 4, .multicast),
        .v4([240], 4, .reserved),
        .v4([255, 255, 255, 255], 32, .reserved),
    ]

    /// IANA IPv6 Special-Purpose Address Registry, plus the IPv6 Address Space registry's `2000::/3`
    /// (global unicast), `fec0::/10` and `ff00::/8`. Rows marked True there are `global` exceptions
    /// inside `2001::/23`.
    static let ipv6SpecialPurpose: [Block] = [
        .v6([], 96, .reserved),  // ::a.b.c.d, IPv4-compatible (deprecated)
        .v6([], 128, .unspecified),
        .v6([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 128, .loopback),
        .v6([0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0], 96, .transition),  // ::ffff:0:a.b.c.d (RFC 2765)
        .v6([0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48, .privateUse),
        .v6([0x01, 0x00], 64, .reserved),  // discard-only (RFC 6666)
        .v6([0x20], 3, .global),
        .v6([0x20, 0x01], 23, .reserved),  // IETF protocol assignments
        .v6([0x20, 0x01, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01], 128, .global),  // PCP anycast
        .v6([0x20, 0x01, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02], 128, .global),  // TURN anycast
        .v6([0x20, 0x01, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x03], 128, .global),  // DNS-SD SRP anycast
        .v6([0x20, 0x01, 0x00, 0x03], 32, .global),  // AMT
        .v6([0x20, 0x01, 0x00, 0x04, 0x01, 0x12], 48, .global),  // AS112-v6
        .v6([0x20, 0x01, 0x00, 0x20], 28, .global),  // ORCHIDv2
        .v6([0x20, 0x01, 0x00, 0x30], 28, .global),  // DRIP
        .v6([0x20, 0x01, 0x00, 0x00], 32, .transition),  // Teredo
        .v6([0x20, 0x01, 0x00, 0x02, 0x00, 0x00], 48, .benchmarking),
        .v6([0x20, 0x01, 0x0d, 0xb8], 32, .documentation),
        .v6([0x20, 0x02], 16, .transition),  // 6to4
        .v6([0x3f, 0xff, 0x00], 20, .documentation),
        .v6([0x5f, 0x00], 16, .reserved),  // SRv6 SIDs (RFC 9602)
        .v6([0xfc], 7, .privateUse),
        .v6([0xfe, 0x80], 10, .linkLocal),
        .v6([0xfe, 0xc0], 10, .privateUse),
        .v6([0xff], 8, .multicast),
    ]
}
