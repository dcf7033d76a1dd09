/// What kind of destination an IP address is, for the SSRF rule (docs/notifications.md, "SSRF"):
/// every class but `global` is refused unless `DestinationPolicy.allowPrivateDestinations`.
public enum AddressClass: Hashable, Sendable {
    /// Publicly routable unicast: the only class a push endpoint or webhook may resolve to.
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
    /// `240/4` (RFC 1112 reserved) with the broadcast address `255.255.255.255`, and the deprecated
    /// IPv4-compatible IPv6 form `::a.b.c.d` (RFC 4291 §2.5.5.1).
    case reserved

    /// Whether a connection to this class is refused when private destinations are not allowed.
    public var isRefusedByDefault: Bool { self != .global }

    /// The class of `address`. IPv6 forms that carry an IPv4 address to be reached — IPv4-mapped
    /// `::ffff:a.b.c.d` (RFC 4291 §2.5.5.2) and the well-known NAT64 prefix `64:ff9b::/96`
    /// (RFC 6052) — take the class of that IPv4 address.
    public static func of(_ address: IPAddress) -> AddressClass {
        switch address {
        case .v4(let a, let b, let c, let d): ofIPv4(a, b, c, d)
        case .v6(let bytes): ofIPv6(bytes)
        }
    }

    private static func ofIPv4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> AddressClass {
        switch (a, b) {
        case (0, _): .unspecified
        case (127, _): .loopback
        case (10, _), (172, 16...31), (192, 168): .privateUse
        case (100, 64...127): .sharedAddressSpace
        case (169, 254): .linkLocal
        case (224...239, _): .multicast
        case (240...255, _): .reserved
        default: .global
        }
    }

    private static func ofIPv6(_ bytes: [UInt8]) -> AddressClass {
        precondition(bytes.count == 16, "an IPv6 address has 16 bytes")
        let first10Zero = bytes[0..<10].allSatisfy { $0 == 0 }
        if first10Zero && bytes[10] == 0xff && bytes[11] == 0xff {
            return ofIPv4(bytes[12], bytes[13], bytes[14], bytes[15])  // ::ffff:a.b.c.d
        }
        if bytes[0..<12] == [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0] {
            return ofIPv4(bytes[12], bytes[13], bytes[14], bytes[15])  // 64:ff9b::a.b.c.d
        }
        if first10Zero && bytes[10] == 0 && bytes[11] == 0 {
            if bytes[12..<15].allSatisfy({ $0 == 0 }) {
                switch bytes[15] {
                case 0: return .unspecified  // ::
                case 1: return .loopback  // ::1
                default: break
                }
            }
            return .reserved  // ::a.b.c.d
        }
        if bytes[0..<6] == [0x00, 0x64, 0xff, 0x9b, 0x00, 0x01] { return .privateUse }  // 64:ff9b:1::/48
        switch bytes[0] {
        case 0xfc, 0xfd: return .privateUse  // fc00::/7
        case 0xff: return .multicast
        case 0xfe:
            switch bytes[1] & 0xc0 {
            case 0x80: return .linkLocal  // fe80::/10
            case 0xc0: return .privateUse  // fec0::/10
            default: return .global
            }
        default: return .global
        }
    }
}
