import Glibc
import IPAddresses
import Wire

/// The network a peer address stands for when connections are counted per client: an IPv4 address
/// is its own network; an IPv6 address counts as its /64, because one subscriber routinely holds a
/// whole /64 and would otherwise get a fresh allowance per address; an IPv4-mapped IPv6 address
/// (`::ffff:a.b.c.d`, a dual-stack listener's IPv4 peer) is its IPv4 address. The same grouping as
/// `Wire.ClientNetwork` (which holds the rule), computed from the `sockaddr` the kernel hands `accept`.
public enum PeerNetwork {
    /// `203.0.113.7` → `"203.0.113.7"`; `2001:db8:1:2:aa::1` → `"2001:db8:1:2::/64"`.
    static func key(of storage: sockaddr_storage) -> String {
        var storage = storage
        return withUnsafePointer(to: &storage) { pointer in
            switch Int32(pointer.pointee.ss_family) {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                    let host = UInt32(bigEndian: sin.pointee.sin_addr.s_addr)
                    return ClientNetwork.key(ipv4: host)
                }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                    ClientNetwork.key(ipv6: withUnsafeBytes(of: sin6.pointee.sin6_addr) { Array($0) })
                }
            default:
                return "unknown"
            }
        }
    }

    /// The key of an IP address literal (`ClientNetwork.rateLimitKey`; for tests).
    public static func key(of address: String) -> String { ClientNetwork.rateLimitKey(address) }
}
