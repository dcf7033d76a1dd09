import Glibc

/// The network a peer address stands for when connections are counted per client: an IPv4 address
/// is its own network; an IPv6 address counts as its /64, because one subscriber routinely holds a
/// whole /64 and would otherwise get a fresh allowance per address; an IPv4-mapped IPv6 address
/// (`::ffff:a.b.c.d`, a dual-stack listener's IPv4 peer) is its IPv4 address. The same grouping as
/// `Domain.ClientNetwork.rateLimitKey`, computed from the `sockaddr` the kernel hands `accept`.
public enum PeerNetwork {
    /// `203.0.113.7` → `"203.0.113.7"`; `2001:db8:1:2:aa::1` → `"2001:db8:1:2::/64"`.
    static func key(of storage: sockaddr_storage) -> String {
        var storage = storage
        return withUnsafePointer(to: &storage) { pointer in
            switch Int32(pointer.pointee.ss_family) {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    let host = UInt32(bigEndian: sin.pointee.sin_addr.s_addr)
                    return ipv4(host)
                }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    key(ipv6: withUnsafeBytes(of: sin6.pointee.sin6_addr) { Array($0) })
                }
            default:
                return "unknown"
            }
        }
    }

    /// The key of an IP address literal (for tests and for addresses known only as text); text that
    /// is not an address is its own key.
    public static func key(of address: String) -> String {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, address, &v4) == 1 { return ipv4(UInt32(bigEndian: v4.s_addr)) }
        if inet_pton(AF_INET6, address, &v6) == 1 { return key(ipv6: withUnsafeBytes(of: v6) { Array($0) }) }
        return address
    }

    /// The key of the 16 bytes of an IPv6 address.
    private static func key(ipv6 bytes: [UInt8]) -> String {
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        let groups = (0..<4).map { String(UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    private static func ipv4(_ host: UInt32) -> String {
        "\(host >> 24).\(host >> 16 & 0xFF).\(host >> 8 & 0xFF).\(host & 0xFF)"
    }
}
